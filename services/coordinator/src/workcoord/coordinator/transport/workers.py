"""``WorkerService``: workers report themselves, lease ready items, and start, heartbeat,
checkpoint, complete, fail or release their leases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from workcoord.api.v1 import worker_pb2, worker_pb2_grpc
from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.model import Attempt

from . import mapping as m
from .base import EngineServicer, Rpc, rpc

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


_OnLease = TypeVar("_OnLease", bound=_LeaseRequest)
_AttemptResponse = TypeVar("_AttemptResponse", bound=Message)
_Arg = TypeVar("_Arg")


def _on_lease(
    request_type: type[_OnLease],
    response_type: type[_AttemptResponse],
    engine_method: Callable[[Engine, Principal, str, str, str, _Arg], Awaitable[Attempt]],
    convert: Callable[[_OnLease], _Arg],
) -> Rpc[_OnLease, _AttemptResponse]:
    """The method that calls ``engine_method`` (e.g. ``Engine.complete``) on the lease the
    request names, with ``convert(request)`` as its last argument, and answers with the
    attempt."""
    return rpc(
        request_type,
        lambda s, p, r: engine_method(s.engine, p, *_lease(r), convert(r)),
        lambda attempt: response_type(attempt=m.attempt_to_pb(attempt)),
    )


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
        # A long-poll re-checks its caller after every wait (see Engine.lease).
        lambda s, p, r: s.engine.lease(
            p, r.coordinator_id, m.lease_ask_from_pb(r), reauthenticate=s.reauthenticator()
        ),
        lambda granted: worker_pb2.LeaseResponse(leases=[m.lease_to_pb(g) for g in granted]),
    )

    Start = _on_lease(
        worker_pb2.StartRequest,
        worker_pb2.StartResponse,
        Engine.start,
        lambda r: m.run_identity_from_pb(r.run_identity),
    )

    Heartbeat = rpc(
        worker_pb2.HeartbeatRequest,
        lambda s, p, r: s.engine.heartbeat(p, *_lease(r), r.progress),
        lambda expire: worker_pb2.HeartbeatResponse(lease_expire_time=m.ts(expire)),
    )

    Complete = _on_lease(
        worker_pb2.CompleteRequest,
        worker_pb2.CompleteResponse,
        Engine.complete,
        lambda r: m.evidence_from_pb(r.evidence),
    )

    Fail = _on_lease(
        worker_pb2.FailRequest,
        worker_pb2.FailResponse,
        Engine.fail,
        lambda r: m.failure_from_pb(r.error),
    )

    Checkpoint = _on_lease(
        worker_pb2.CheckpointRequest,
        worker_pb2.CheckpointResponse,
        Engine.checkpoint,
        lambda r: m.checkpoint_from_pb(r.checkpoint),
    )

    Release = _on_lease(
        worker_pb2.ReleaseRequest, worker_pb2.ReleaseResponse, Engine.release, lambda r: r.reason
    )

    ForgetWorker = rpc(
        worker_pb2.ForgetWorkerRequest,
        lambda s, p, r: s.engine.forget_worker(p, r.coordinator_id, r.worker_id),
        lambda worker: worker_pb2.ForgetWorkerResponse(worker=m.worker_to_pb(worker)),
    )
