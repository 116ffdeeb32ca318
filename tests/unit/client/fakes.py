"""A fake coordinator for the client and CLI tests: a real (threaded) gRPC server.

Synchronous servicers on a thread pool, so both the async SDK (on the test's loop) and the CLI
(which runs its own ``asyncio.run``) can call it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.message import Message
from google.rpc import status_pb2

from workcoord.api.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    event_pb2,
    feed_pb2,
    feed_pb2_grpc,
    lane_pb2,
    lane_pb2_grpc,
    work_coordinator_pb2,
    work_coordinator_pb2_grpc,
    worker_pb2,
    worker_pb2_grpc,
)
from workcoord.kit.errors import FieldViolation, InvalidArgument, LeaseLost, WorkcoordError
from workcoord.kit.status import to_grpc_status, to_rpc_status

GOOD_TOKEN = "wck_good"
FLEET_CLASS = "fleet"
#: Every heartbeat of a lease of this class answers BUDGET_EXHAUSTED; of the next,
#: DEADLINE_EXCEEDED.
SPENT_CLASS = "spent"
LATE_CLASS = "late"
STALE_LEASE = "lease-stale"


@dataclass
class Recorded:
    """Calls seen by the fake: (method, request, authorization)."""

    calls: list[tuple[str, Message, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    batch_heartbeat: threading.Event = field(default_factory=threading.Event)

    def add(self, method: str, request: Message, context: grpc.ServicerContext) -> None:
        authorization = next(
            (str(v) for k, v in context.invocation_metadata() if k == "authorization"), ""
        )
        with self.lock:
            self.calls.append((method, request, authorization))

    def last(self, method: str) -> tuple[Message, str]:
        with self.lock:
            for name, request, authorization in reversed(self.calls):
                if name == method:
                    return request, authorization
        raise AssertionError(f"{method} was not called")


def _abort(context: grpc.ServicerContext, err: WorkcoordError) -> Any:
    context.abort_with_status(to_grpc_status(err))


class FakeAdmin(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded
        self.settings = admin_pb2.Settings(work_coordinator_enabled=True, etag="e1")

    def GetCurrentPrincipal(
        self, request: admin_pb2.GetCurrentPrincipalRequest, context: grpc.ServicerContext
    ) -> admin_pb2.GetCurrentPrincipalResponse:
        self.recorded.add("GetCurrentPrincipal", request, context)
        return admin_pb2.GetCurrentPrincipalResponse(
            principal=admin_pb2.Principal(kind=admin_pb2.Principal.WORK_KEY, id="k1")
        )

    def CreateOrg(
        self, request: admin_pb2.CreateOrgRequest, context: grpc.ServicerContext
    ) -> admin_pb2.CreateOrgResponse:
        self.recorded.add("CreateOrg", request, context)
        if not request.org.slug.islower():
            _abort(context, InvalidArgument([FieldViolation("org.slug", "must be lowercase")]))
        return admin_pb2.CreateOrgResponse(org=request.org)

    def ListOrgs(
        self, request: admin_pb2.ListOrgsRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ListOrgsResponse:
        self.recorded.add("ListOrgs", request, context)
        return admin_pb2.ListOrgsResponse(orgs=[admin_pb2.Org(slug="acme", display_name="Acme")])

    def GetOrg(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("GetOrg", request, context)
        return admin_pb2.GetOrgResponse(org=admin_pb2.Org(slug=request.org_slug))

    def ListUsers(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("ListUsers", request, context)
        return admin_pb2.ListUsersResponse(
            users=[admin_pb2.User(user_id="u1", email="ada@acme.test", display_name="Ada")]
        )

    def CreateWorkKey(
        self, request: admin_pb2.CreateWorkKeyRequest, context: grpc.ServicerContext
    ) -> admin_pb2.CreateWorkKeyResponse:
        self.recorded.add("CreateWorkKey", request, context)
        return admin_pb2.CreateWorkKeyResponse(
            key_id="k2", secret="wck_secret", work_key=request.work_key
        )

    def RevokeWorkKey(
        self, request: admin_pb2.RevokeWorkKeyRequest, context: grpc.ServicerContext
    ) -> admin_pb2.RevokeWorkKeyResponse:
        self.recorded.add("RevokeWorkKey", request, context)
        return admin_pb2.RevokeWorkKeyResponse(work_key=admin_pb2.WorkKey(key_id=request.key_id))

    def GetSettings(
        self, request: admin_pb2.GetSettingsRequest, context: grpc.ServicerContext
    ) -> admin_pb2.GetSettingsResponse:
        self.recorded.add("GetSettings", request, context)
        return admin_pb2.GetSettingsResponse(settings=self.settings)

    def UpdateSettings(
        self, request: admin_pb2.UpdateSettingsRequest, context: grpc.ServicerContext
    ) -> admin_pb2.UpdateSettingsResponse:
        self.recorded.add("UpdateSettings", request, context)
        self.settings.work_coordinator_enabled = request.settings.work_coordinator_enabled
        return admin_pb2.UpdateSettingsResponse(settings=self.settings)


class FakeWorkers(worker_pb2_grpc.WorkerServiceServicer):
    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded
        self.classes: dict[str, str] = {}
        #: Leases whose every heartbeat (plain or batched) answers this stop.
        self.told: dict[str, int] = {}

    def _stop(self, lease_id: str) -> worker_pb2.Stop | None:
        reason = self.told.get(lease_id) or {
            SPENT_CLASS: worker_pb2.Stop.BUDGET_EXHAUSTED,
            LATE_CLASS: worker_pb2.Stop.DEADLINE_EXCEEDED,
        }.get(self.classes.get(lease_id, ""))
        if reason is None:
            return None
        message = "the lane's budget is spent: stop now"
        return worker_pb2.Stop(reason=reason, message=message)  # type: ignore[arg-type]

    def _fenced(self, method: str, request: Any, context: grpc.ServicerContext) -> None:
        self.recorded.add(method, request, context)
        if request.lease_id == STALE_LEASE:
            _abort(context, LeaseLost("expired"))

    def ListWorkers(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("ListWorkers", request, context)
        return worker_pb2.ListWorkersResponse(
            workers=[worker_pb2.Worker(worker_id="w1", worker_class="machine")]
        )

    def ForgetWorker(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("ForgetWorker", request, context)
        return worker_pb2.ForgetWorkerResponse()

    def ReportWorker(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("ReportWorker", request, context)
        return worker_pb2.ReportWorkerResponse(worker=request.worker)

    def Lease(
        self, request: worker_pb2.LeaseRequest, context: grpc.ServicerContext
    ) -> worker_pb2.LeaseResponse:
        self.recorded.add("Lease", request, context)
        # The "fleet" class is granted as many leases as asked for; any other class one.
        count = request.max_items if request.worker_class == FLEET_CLASS else 1
        leases = [
            worker_pb2.Lease(
                lease_id=f"lease-{n}",
                lease_token="wcl_token",
                attempt=1,
                item=worker_pb2.LeasedItem(item_id=f"item-{n}", worker_class=request.worker_class),
            )
            for n in range(1, count + 1)
        ]
        for lease in leases:
            self.classes[lease.lease_id] = request.worker_class
        return worker_pb2.LeaseResponse(leases=leases[: request.max_items])

    def Start(
        self, request: worker_pb2.StartRequest, context: grpc.ServicerContext
    ) -> worker_pb2.StartResponse:
        self._fenced("Start", request, context)
        return worker_pb2.StartResponse()

    def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: grpc.ServicerContext
    ) -> worker_pb2.HeartbeatResponse:
        self._fenced("Heartbeat", request, context)
        response = worker_pb2.HeartbeatResponse()
        response.lease_expire_time.FromJsonString("2026-01-01T00:00:30Z")
        stop = self._stop(request.lease_id)
        if stop is not None:
            response.stop.CopyFrom(stop)
        return response

    def Complete(
        self, request: worker_pb2.CompleteRequest, context: grpc.ServicerContext
    ) -> worker_pb2.CompleteResponse:
        self._fenced("Complete", request, context)
        return worker_pb2.CompleteResponse()

    def Fail(
        self, request: worker_pb2.FailRequest, context: grpc.ServicerContext
    ) -> worker_pb2.FailResponse:
        self._fenced("Fail", request, context)
        return worker_pb2.FailResponse()

    def _statuses(self, method: str, request: Any, context: grpc.ServicerContext) -> list[Any]:
        self.recorded.add(method, request, context)
        if method == "BatchHeartbeat":
            self.recorded.batch_heartbeat.set()
        return [
            to_rpc_status(LeaseLost("expired"))
            if entry.lease_id == STALE_LEASE
            else status_pb2.Status()
            for entry in request.requests
        ]

    def BatchHeartbeat(self, request: Any, context: grpc.ServicerContext) -> Any:
        statuses = self._statuses("BatchHeartbeat", request, context)
        return worker_pb2.BatchHeartbeatResponse(
            results=[
                worker_pb2.BatchHeartbeatResult(
                    lease_id=e.lease_id, status=s, stop=self._stop(e.lease_id)
                )
                for e, s in zip(request.requests, statuses, strict=True)
            ]
        )

    def BatchComplete(self, request: Any, context: grpc.ServicerContext) -> Any:
        statuses = self._statuses("BatchComplete", request, context)
        return worker_pb2.BatchCompleteResponse(
            results=[
                worker_pb2.BatchCompleteResult(lease_id=e.lease_id, status=s)
                for e, s in zip(request.requests, statuses, strict=True)
            ]
        )

    def Checkpoint(
        self, request: worker_pb2.CheckpointRequest, context: grpc.ServicerContext
    ) -> worker_pb2.CheckpointResponse:
        self._fenced("Checkpoint", request, context)
        return worker_pb2.CheckpointResponse()

    def Release(
        self, request: worker_pb2.ReleaseRequest, context: grpc.ServicerContext
    ) -> worker_pb2.ReleaseResponse:
        self._fenced("Release", request, context)
        return worker_pb2.ReleaseResponse()


class FakeLanes(lane_pb2_grpc.LaneServiceServicer):
    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded

    def CreateLane(
        self, request: lane_pb2.CreateLaneRequest, context: grpc.ServicerContext
    ) -> lane_pb2.CreateLaneResponse:
        self.recorded.add("CreateLane", request, context)
        lane = lane_pb2.Lane()
        lane.CopyFrom(request.lane)
        lane.lane_id = "lane-1"
        return lane_pb2.CreateLaneResponse(lane=lane)

    def ListLanes(
        self, request: lane_pb2.ListLanesRequest, context: grpc.ServicerContext
    ) -> lane_pb2.ListLanesResponse:
        self.recorded.add("ListLanes", request, context)
        return lane_pb2.ListLanesResponse()

    # The lane's parts: each answers an empty response after recording the request.
    def GetItem(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("GetItem", request, context)
        return lane_pb2.GetItemResponse(item=lane_pb2.Item(item_id=request.item_id, key="a"))

    def CreateItem(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("CreateItem", request, context)
        return lane_pb2.CreateItemResponse(item=request.item)

    def AddBlocker(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("AddBlocker", request, context)
        return lane_pb2.AddBlockerResponse()

    def ResolveBlocker(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("ResolveBlocker", request, context)
        return lane_pb2.ResolveBlockerResponse()

    def LinkTicket(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("LinkTicket", request, context)
        return lane_pb2.LinkTicketResponse()


class FakeCoordinators(work_coordinator_pb2_grpc.WorkCoordinatorServiceServicer):
    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded

    def ListEvents(
        self, request: work_coordinator_pb2.ListEventsRequest, context: grpc.ServicerContext
    ) -> work_coordinator_pb2.ListEventsResponse:
        self.recorded.add("ListEvents", request, context)
        return work_coordinator_pb2.ListEventsResponse(
            events=[event_pb2.Event(revision=request.since_revision + 1)],
            revision=request.since_revision + 1,
        )

    def Explain(
        self, request: work_coordinator_pb2.ExplainRequest, context: grpc.ServicerContext
    ) -> work_coordinator_pb2.ExplainResponse:
        self.recorded.add("Explain", request, context)
        return work_coordinator_pb2.ExplainResponse()

    # A parent's calls on a child (``workcoord children …``): recorded, answered empty.
    def GetChildSummary(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("GetChildSummary", request, context)
        return work_coordinator_pb2.GetChildSummaryResponse()

    def ListChildEscalations(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("ListChildEscalations", request, context)
        return work_coordinator_pb2.ListChildEscalationsResponse()

    def AssignChildWork(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("AssignChildWork", request, context)
        return work_coordinator_pb2.AssignChildWorkResponse()

    def SteerChildWork(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("SteerChildWork", request, context)
        return work_coordinator_pb2.SteerChildWorkResponse()

    def EscalateChildWork(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.recorded.add("EscalateChildWork", request, context)
        return work_coordinator_pb2.EscalateChildWorkResponse()


class FakeFeed(feed_pb2_grpc.FeedServiceServicer):
    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded

    def Watch(
        self, request: feed_pb2.WatchRequest, context: grpc.ServicerContext
    ) -> Iterator[feed_pb2.WatchResponse]:
        self.recorded.add("Watch", request, context)
        yield feed_pb2.WatchResponse(hello=feed_pb2.Hello(coordinator_id=request.coordinator_id))
        if request.coordinator_id == "gone":
            _abort(context, InvalidArgument([FieldViolation("since", "too old")]))


class FakeCoordinator:
    """Serves every fake above on an ephemeral loopback port."""

    def __init__(self) -> None:
        self.recorded = Recorded()
        self.admin = FakeAdmin(self.recorded)  # type: ignore[abstract]
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        # Only the methods the tests use are served; the generated stubs declare all abstract.
        admin_pb2_grpc.add_AdminServiceServicer_to_server(self.admin, self.server)
        self.workers = FakeWorkers(self.recorded)  # type: ignore[abstract]
        worker_pb2_grpc.add_WorkerServiceServicer_to_server(self.workers, self.server)
        lane_pb2_grpc.add_LaneServiceServicer_to_server(
            FakeLanes(self.recorded),  # type: ignore[abstract]
            self.server,
        )
        work_coordinator_pb2_grpc.add_WorkCoordinatorServiceServicer_to_server(
            FakeCoordinators(self.recorded),  # type: ignore[abstract]
            self.server,
        )
        feed_pb2_grpc.add_FeedServiceServicer_to_server(FakeFeed(self.recorded), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"
        self.server.start()

    def stop(self) -> None:
        self.server.stop(None)
