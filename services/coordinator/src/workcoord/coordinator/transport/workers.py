"""``WorkerService``: workers report themselves, lease ready items, and start, heartbeat,
checkpoint, complete, fail or release their leases."""

from __future__ import annotations

from typing import Protocol

from workcoord.api.v1 import worker_pb2, worker_pb2_grpc

from . import mapping as m
from .base import EngineServicer, rpc

__all__ = ["WorkerServicer"]


class _LeaseRequest(Protocol):
    """What every call on a held lease names: the lease and its secret token."""

    @property
    def coordinator_id(self) -> str: ...

    @property
    def lease_id(self) -> str: ...

    @property
    def lease_token(self) -> str: ...


def _lease(request: _LeaseRequest) -> tuple[str, str, str]:
    """The lease a call on a held lease names: its work coordinator, id and secret token, the
    engine's first three arguments after the caller's principal."""
    return request.coordinator_id, request.lease_id, request.lease_token


class WorkerServicer(EngineServicer, worker_pb2_grpc.WorkerServiceServicer):
    ReportWorker = rpc(
        worker_pb2.ReportWorkerRequest,
        lambda s, p, r: s.engine.report_worker(
            p, r.coordinator_id, m.worker_from_pb(r.worker, s.engine.clock.now())
        ),
        lambda worker: worker_pb2.ReportWorkerResponse(worker=m.worker_to_pb(worker)),
    )

    ListWorkers = rpc(
        worker_pb2.ListWorkersRequest,
        lambda s, p, r: s.engine.list_workers(p, r.coordinator_id, r.page_size, r.page_token),
        lambda page: m.page_to_pb(worker_pb2.ListWorkersResponse, "workers", page, m.worker_to_pb),
    )

    Lease = rpc(
        worker_pb2.LeaseRequest,
        lambda s, p, r: s.engine.lease(p, r.coordinator_id, m.lease_ask_from_pb(r)),
        lambda granted: worker_pb2.LeaseResponse(leases=[m.lease_to_pb(g) for g in granted]),
    )

    Start = rpc(
        worker_pb2.StartRequest,
        lambda s, p, r: s.engine.start(p, *_lease(r), m.run_identity_from_pb(r.run_identity)),
        lambda attempt: worker_pb2.StartResponse(attempt=m.attempt_to_pb(attempt)),
    )

    Heartbeat = rpc(
        worker_pb2.HeartbeatRequest,
        lambda s, p, r: s.engine.heartbeat(p, *_lease(r), r.progress),
        lambda expire: worker_pb2.HeartbeatResponse(lease_expire_time=m.ts(expire)),
    )

    Complete = rpc(
        worker_pb2.CompleteRequest,
        lambda s, p, r: s.engine.complete(p, *_lease(r), m.evidence_from_pb(r.evidence)),
        lambda attempt: worker_pb2.CompleteResponse(attempt=m.attempt_to_pb(attempt)),
    )

    Fail = rpc(
        worker_pb2.FailRequest,
        lambda s, p, r: s.engine.fail(p, *_lease(r), m.failure_from_pb(r.error)),
        lambda attempt: worker_pb2.FailResponse(attempt=m.attempt_to_pb(attempt)),
    )

    Checkpoint = rpc(
        worker_pb2.CheckpointRequest,
        lambda s, p, r: s.engine.checkpoint(p, *_lease(r), m.checkpoint_from_pb(r.checkpoint)),
        lambda attempt: worker_pb2.CheckpointResponse(attempt=m.attempt_to_pb(attempt)),
    )

    Release = rpc(
        worker_pb2.ReleaseRequest,
        lambda s, p, r: s.engine.release(p, *_lease(r), r.reason),
        lambda attempt: worker_pb2.ReleaseResponse(attempt=m.attempt_to_pb(attempt)),
    )

    ForgetWorker = rpc(
        worker_pb2.ForgetWorkerRequest,
        lambda s, p, r: s.engine.forget_worker(p, r.coordinator_id, r.worker_id),
        lambda worker: worker_pb2.ForgetWorkerResponse(worker=m.worker_to_pb(worker)),
    )
