"""``WorkerService``: workers report themselves, lease ready items, and start, heartbeat,
checkpoint, complete, fail or release their leases."""

from __future__ import annotations

from workcoord.api.v1 import worker_pb2, worker_pb2_grpc

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller

__all__ = ["WorkerServicer"]


class WorkerServicer(EngineServicer, worker_pb2_grpc.WorkerServiceServicer):
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
        p = caller().principal
        attempt = await self.engine.start(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.run_identity_from_pb(request.run_identity),
        )
        return worker_pb2.StartResponse(attempt=m.attempt_to_pb(attempt))

    async def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: Context
    ) -> worker_pb2.HeartbeatResponse:
        p = caller().principal
        expire = await self.engine.heartbeat(
            p, request.coordinator_id, request.lease_id, request.lease_token, request.progress
        )
        return worker_pb2.HeartbeatResponse(lease_expire_time=m.ts(expire))

    async def Complete(
        self, request: worker_pb2.CompleteRequest, context: Context
    ) -> worker_pb2.CompleteResponse:
        p = caller().principal
        attempt = await self.engine.complete(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.evidence_from_pb(request.evidence),
        )
        return worker_pb2.CompleteResponse(attempt=m.attempt_to_pb(attempt))

    async def Fail(
        self, request: worker_pb2.FailRequest, context: Context
    ) -> worker_pb2.FailResponse:
        p = caller().principal
        attempt = await self.engine.fail(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.failure_from_pb(request.error),
        )
        return worker_pb2.FailResponse(attempt=m.attempt_to_pb(attempt))

    async def Checkpoint(
        self, request: worker_pb2.CheckpointRequest, context: Context
    ) -> worker_pb2.CheckpointResponse:
        p = caller().principal
        attempt = await self.engine.checkpoint(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.checkpoint_from_pb(request.checkpoint),
        )
        return worker_pb2.CheckpointResponse(attempt=m.attempt_to_pb(attempt))

    async def Release(
        self, request: worker_pb2.ReleaseRequest, context: Context
    ) -> worker_pb2.ReleaseResponse:
        p = caller().principal
        attempt = await self.engine.release(
            p, request.coordinator_id, request.lease_id, request.lease_token, request.reason
        )
        return worker_pb2.ReleaseResponse(attempt=m.attempt_to_pb(attempt))

    async def ForgetWorker(
        self, request: worker_pb2.ForgetWorkerRequest, context: Context
    ) -> worker_pb2.ForgetWorkerResponse:
        p = caller().principal
        worker = await self.engine.forget_worker(p, request.coordinator_id, request.worker_id)
        return worker_pb2.ForgetWorkerResponse(worker=m.worker_to_pb(worker))
