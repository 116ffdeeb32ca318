"""``WorkerService``: workers report themselves, lease ready items, and start, heartbeat,
checkpoint, complete, fail or release their leases, one at a time or in batches.

Each RPC is one method: read the request into the engine command's input, call the engine as
the caller (:func:`~.gate.caller`), map the answer back to protobuf."""

from __future__ import annotations

from workcoord.api.v1 import worker_pb2, worker_pb2_grpc
from workcoord.coordinator.domain.inputs import (
    BatchInput,
    CheckpointInput,
    CompleteInput,
    FailInput,
    ForgetWorkerInput,
    HeartbeatInput,
    LeaseInput,
    ListWorkersInput,
    ReleaseInput,
    ReportWorkerInput,
    StartInput,
)

from . import mapping as m
from .base import Context, EngineServicer
from .batches import read_entries, status_of
from .gate import caller

__all__ = ["WorkerServicer"]


class WorkerServicer(EngineServicer, worker_pb2_grpc.WorkerServiceServicer):
    async def ReportWorker(
        self, request: worker_pb2.ReportWorkerRequest, context: Context
    ) -> worker_pb2.ReportWorkerResponse:
        command = ReportWorkerInput(
            coordinator_id=request.coordinator_id,
            worker=m.worker_from_pb(request.worker, self.engine.clock.now()),
        )
        worker = await self.engine.workers.report_worker(caller().principal, command)
        return worker_pb2.ReportWorkerResponse(worker=m.worker_to_pb(worker))

    async def ListWorkers(
        self, request: worker_pb2.ListWorkersRequest, context: Context
    ) -> worker_pb2.ListWorkersResponse:
        query = ListWorkersInput(
            coordinator_id=request.coordinator_id,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        page = await self.engine.workers.list_workers(caller().principal, query)
        return m.page_to_pb(worker_pb2.ListWorkersResponse, "workers", page, m.worker_to_pb)

    async def Lease(
        self, request: worker_pb2.LeaseRequest, context: Context
    ) -> worker_pb2.LeaseResponse:
        command = LeaseInput(
            coordinator_id=request.coordinator_id, ask=m.lease_ask_from_pb(request)
        )
        # A long-poll re-checks its caller after every wait (see LeasingService.lease).
        granted = await self.engine.leasing.lease(
            caller().principal,
            command,
            reauthenticate=self.reauthenticator(),
            cached_caller=self.cached_caller(),
        )
        return worker_pb2.LeaseResponse(leases=[m.lease_to_pb(g) for g in granted])

    async def Start(
        self, request: worker_pb2.StartRequest, context: Context
    ) -> worker_pb2.StartResponse:
        command = StartInput(
            coordinator_id=request.coordinator_id,
            lease_id=request.lease_id,
            lease_token=request.lease_token,
            run_identity=m.run_identity_from_pb(request.run_identity),
        )
        attempt = await self.engine.attempts.start(caller().principal, command)
        return worker_pb2.StartResponse(attempt=m.attempt_to_pb(attempt))

    async def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: Context
    ) -> worker_pb2.HeartbeatResponse:
        answer = await self.engine.attempts.heartbeat(
            caller().principal, _heartbeat(request), self.confirmation()
        )
        return worker_pb2.HeartbeatResponse(
            lease_expire_time=m.ts(answer.lease_expire_time), stop=m.stop_to_pb(answer.stop)
        )

    async def Complete(
        self, request: worker_pb2.CompleteRequest, context: Context
    ) -> worker_pb2.CompleteResponse:
        attempt = await self.engine.attempts.complete(caller().principal, _complete(request))
        return worker_pb2.CompleteResponse(attempt=m.attempt_to_pb(attempt))

    async def Fail(
        self, request: worker_pb2.FailRequest, context: Context
    ) -> worker_pb2.FailResponse:
        attempt = await self.engine.attempts.fail(caller().principal, _fail(request))
        return worker_pb2.FailResponse(attempt=m.attempt_to_pb(attempt))

    async def BatchHeartbeat(
        self, request: worker_pb2.BatchHeartbeatRequest, context: Context
    ) -> worker_pb2.BatchHeartbeatResponse:
        now = self.engine.clock.now()
        entries = read_entries(request.coordinator_id, request.requests, _heartbeat, now)
        batch = BatchInput(coordinator_id=request.coordinator_id, entries=tuple(entries.inputs))
        answered = await self.engine.attempts.batch_heartbeat(
            caller().principal, batch, self.confirmation()
        )
        return worker_pb2.BatchHeartbeatResponse(
            results=[
                worker_pb2.BatchHeartbeatResult(
                    lease_id=r.lease_id,
                    status=status_of(r),
                    lease_expire_time=m.ts(r.value.lease_expire_time) if r.value else None,
                    stop=m.stop_to_pb(r.value.stop) if r.value else None,
                )
                for r in entries.merge(answered)
            ]
        )

    async def BatchComplete(
        self, request: worker_pb2.BatchCompleteRequest, context: Context
    ) -> worker_pb2.BatchCompleteResponse:
        now = self.engine.clock.now()
        entries = read_entries(request.coordinator_id, request.requests, _complete, now)
        batch = BatchInput(coordinator_id=request.coordinator_id, entries=tuple(entries.inputs))
        answered = await self.engine.attempts.batch_complete(caller().principal, batch)
        return worker_pb2.BatchCompleteResponse(
            results=[
                worker_pb2.BatchCompleteResult(
                    lease_id=r.lease_id,
                    status=status_of(r),
                    attempt=m.attempt_to_pb(r.value) if r.value is not None else None,
                )
                for r in entries.merge(answered)
            ]
        )

    async def BatchFail(
        self, request: worker_pb2.BatchFailRequest, context: Context
    ) -> worker_pb2.BatchFailResponse:
        now = self.engine.clock.now()
        entries = read_entries(request.coordinator_id, request.requests, _fail, now)
        batch = BatchInput(coordinator_id=request.coordinator_id, entries=tuple(entries.inputs))
        answered = await self.engine.attempts.batch_fail(caller().principal, batch)
        return worker_pb2.BatchFailResponse(
            results=[
                worker_pb2.BatchFailResult(
                    lease_id=r.lease_id,
                    status=status_of(r),
                    attempt=m.attempt_to_pb(r.value) if r.value is not None else None,
                )
                for r in entries.merge(answered)
            ]
        )

    async def Checkpoint(
        self, request: worker_pb2.CheckpointRequest, context: Context
    ) -> worker_pb2.CheckpointResponse:
        command = CheckpointInput(
            coordinator_id=request.coordinator_id,
            lease_id=request.lease_id,
            lease_token=request.lease_token,
            checkpoint=m.checkpoint_from_pb(request.checkpoint),
            usage=m.usage_from_pb(request),
        )
        attempt = await self.engine.attempts.checkpoint(caller().principal, command)
        return worker_pb2.CheckpointResponse(attempt=m.attempt_to_pb(attempt))

    async def Release(
        self, request: worker_pb2.ReleaseRequest, context: Context
    ) -> worker_pb2.ReleaseResponse:
        command = ReleaseInput(
            coordinator_id=request.coordinator_id,
            lease_id=request.lease_id,
            lease_token=request.lease_token,
            reason=request.reason,
        )
        attempt = await self.engine.attempts.release(caller().principal, command)
        return worker_pb2.ReleaseResponse(attempt=m.attempt_to_pb(attempt))

    async def ForgetWorker(
        self, request: worker_pb2.ForgetWorkerRequest, context: Context
    ) -> worker_pb2.ForgetWorkerResponse:
        command = ForgetWorkerInput(
            coordinator_id=request.coordinator_id, worker_id=request.worker_id
        )
        worker = await self.engine.fences.forget_worker(caller().principal, command)
        return worker_pb2.ForgetWorkerResponse(worker=m.worker_to_pb(worker))


def _heartbeat(request: worker_pb2.HeartbeatRequest) -> HeartbeatInput:
    return HeartbeatInput(
        coordinator_id=request.coordinator_id,
        lease_id=request.lease_id,
        lease_token=request.lease_token,
        progress=request.progress,
        usage=m.usage_from_pb(request),
    )


def _complete(request: worker_pb2.CompleteRequest) -> CompleteInput:
    return CompleteInput(
        coordinator_id=request.coordinator_id,
        lease_id=request.lease_id,
        lease_token=request.lease_token,
        evidence=m.evidence_from_pb(request.evidence),
        usage=m.usage_from_pb(request),
    )


def _fail(request: worker_pb2.FailRequest) -> FailInput:
    return FailInput(
        coordinator_id=request.coordinator_id,
        lease_id=request.lease_id,
        lease_token=request.lease_token,
        error=m.failure_from_pb(request.error),
        usage=m.usage_from_pb(request),
    )
