"""``WorkerService``: workers report themselves, lease ready items, and start, heartbeat,
checkpoint, complete, fail or release their leases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from workcoord.api.v1 import worker_pb2, worker_pb2_grpc
from workcoord.coordinator.domain.auth import Principal

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller

__all__ = ["WorkerServicer"]

_D = TypeVar("_D")
_R = TypeVar("_R")


class _LeaseRequest(Protocol):
    """What every call on a held lease names: the lease and its secret token."""

    @property
    def coordinator_id(self) -> str: ...

    @property
    def lease_id(self) -> str: ...

    @property
    def lease_token(self) -> str: ...


class WorkerServicer(EngineServicer, worker_pb2_grpc.WorkerServiceServicer):
    async def _on_lease(
        self,
        request: _LeaseRequest,
        write: Callable[[Principal, str, str, str, _D], Awaitable[_R]],
        detail: _D,
    ) -> _R:
        """The engine call ``write`` by the caller on the lease ``request`` names, with the
        call's own ``detail`` (what the worker reports)."""
        principal = caller().principal
        lease = (request.coordinator_id, request.lease_id, request.lease_token)
        return await write(principal, *lease, detail)

    async def ReportWorker(
        self, request: worker_pb2.ReportWorkerRequest, context: Context
    ) -> worker_pb2.ReportWorkerResponse:
        p = caller().principal
        worker = await self.engine.report_worker(
            p, request.coordinator_id, m.worker_from_pb(request.worker, self.engine.clock.now())
        )
        return worker_pb2.ReportWorkerResponse(worker=m.worker_to_pb(worker))

    async def ListWorkers(
        self, request: worker_pb2.ListWorkersRequest, context: Context
    ) -> worker_pb2.ListWorkersResponse:
        p = caller().principal
        page = await self.engine.list_workers(
            p, request.coordinator_id, request.page_size, request.page_token
        )
        return m.page_to_pb(worker_pb2.ListWorkersResponse, "workers", page, m.worker_to_pb)

    async def Lease(
        self, request: worker_pb2.LeaseRequest, context: Context
    ) -> worker_pb2.LeaseResponse:
        p = caller().principal
        granted = await self.engine.lease(p, request.coordinator_id, m.lease_ask_from_pb(request))
        return worker_pb2.LeaseResponse(leases=[m.lease_to_pb(g) for g in granted])

    async def Start(
        self, request: worker_pb2.StartRequest, context: Context
    ) -> worker_pb2.StartResponse:
        identity = m.run_identity_from_pb(request.run_identity)
        attempt = await self._on_lease(request, self.engine.start, identity)
        return worker_pb2.StartResponse(attempt=m.attempt_to_pb(attempt))

    async def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: Context
    ) -> worker_pb2.HeartbeatResponse:
        expire = await self._on_lease(request, self.engine.heartbeat, request.progress)
        return worker_pb2.HeartbeatResponse(lease_expire_time=m.ts(expire))

    async def Complete(
        self, request: worker_pb2.CompleteRequest, context: Context
    ) -> worker_pb2.CompleteResponse:
        evidence = m.evidence_from_pb(request.evidence)
        attempt = await self._on_lease(request, self.engine.complete, evidence)
        return worker_pb2.CompleteResponse(attempt=m.attempt_to_pb(attempt))

    async def Fail(
        self, request: worker_pb2.FailRequest, context: Context
    ) -> worker_pb2.FailResponse:
        failure = m.failure_from_pb(request.error)
        attempt = await self._on_lease(request, self.engine.fail, failure)
        return worker_pb2.FailResponse(attempt=m.attempt_to_pb(attempt))

    async def Checkpoint(
        self, request: worker_pb2.CheckpointRequest, context: Context
    ) -> worker_pb2.CheckpointResponse:
        checkpoint = m.checkpoint_from_pb(request.checkpoint)
        attempt = await self._on_lease(request, self.engine.checkpoint, checkpoint)
        return worker_pb2.CheckpointResponse(attempt=m.attempt_to_pb(attempt))

    async def Release(
        self, request: worker_pb2.ReleaseRequest, context: Context
    ) -> worker_pb2.ReleaseResponse:
        attempt = await self._on_lease(request, self.engine.release, request.reason)
        return worker_pb2.ReleaseResponse(attempt=m.attempt_to_pb(attempt))

    async def ForgetWorker(
        self, request: worker_pb2.ForgetWorkerRequest, context: Context
    ) -> worker_pb2.ForgetWorkerResponse:
        p = caller().principal
        worker = await self.engine.forget_worker(p, request.coordinator_id, request.worker_id)
        return worker_pb2.ForgetWorkerResponse(worker=m.worker_to_pb(worker))
