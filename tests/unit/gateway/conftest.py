"""A tiny real grpc.aio server with fake servicers, and the gateway app pointed at it.

The fakes answer from their requests (so tests see what the gateway sent) and record every call
with its metadata. An id starting with ``err-`` makes a fake fail with the typed error named
after the prefix (``err-not-found``), the way the coordinator's error interceptor would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
import pytest_asyncio
from google.protobuf import message as _message
from google.protobuf import timestamp_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from workcoord.api.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    feed_pb2,
    feed_pb2_grpc,
    lane_pb2,
    lane_pb2_grpc,
    recovery_pb2,
    recovery_pb2_grpc,
    session_pb2,
    session_pb2_grpc,
    work_coordinator_pb2,
    work_coordinator_pb2_grpc,
    worker_pb2,
    worker_pb2_grpc,
)
from workcoord.gateway.app import build_app
from workcoord.gateway.upstream import Upstreams
from workcoord.kit import errors
from workcoord.kit.settings import GatewaySettings
from workcoord.kit.startup import free_port
from workcoord.kit.status import abort_with

Context = grpc.aio.ServicerContext[Any, Any]

MAX_BODY_BYTES = 4096
HOLD_OPEN_SINCE = 99
"""A Watch from this revision stays open after its hello and ping."""
VALID_LOGIN_CODE = "wcses_valid-code"
"""The one login code the fake coordinator exchanges for a session."""

_ERRORS: dict[str, Callable[[], errors.WorkcoordError]] = {
    "err-invalid": lambda: errors.InvalidArgument.single(
        "lease_seconds", "must be between 5 and 300"
    ),
    "err-unauthenticated": lambda: errors.Unauthenticated(),
    "err-denied": lambda: errors.PermissionDenied(),
    "err-not-found": lambda: errors.NotFound("no such lane"),
    "err-lease-lost": lambda: errors.LeaseLost("expired"),
    "err-pool-full": lambda: errors.PoolFull(),
    "err-disabled": lambda: errors.CoordinationDisabled(),
    "err-illegal": lambda: errors.IllegalTransition("not awaiting approval"),
}


@dataclass
class Call:
    """One call a fake received."""

    method: str
    request: _message.Message
    metadata: dict[str, str]


@dataclass
class Recorder:
    """Every call the fakes received, newest last."""

    calls: list[Call] = field(default_factory=list)

    def last(self, method: str) -> Call:
        for call in reversed(self.calls):
            if call.method == method:
                return call
        raise AssertionError(f"{method} was not called")

    async def record(self, method: str, request: _message.Message, context: Context) -> None:
        metadata = {
            key: value
            for key, value in context.invocation_metadata() or ()
            if isinstance(value, str)
        }
        self.calls.append(Call(method, request, metadata))
        for prefix, make in _ERRORS.items():
            if any(value.startswith(prefix) for value in _string_fields(request)):
                await abort_with(context, make())


def _string_fields(message: _message.Message) -> list[str]:
    return [value for _, value in message.ListFields() if isinstance(value, str)]


class FakeLanes(lane_pb2_grpc.LaneServiceServicer):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def CreateLane(
        self, request: lane_pb2.CreateLaneRequest, context: Context
    ) -> lane_pb2.CreateLaneResponse:
        await self.recorder.record("CreateLane", request, context)
        lane = lane_pb2.Lane()
        lane.CopyFrom(request.lane)
        lane.lane_id = "lane-1"
        lane.coordinator_id = request.coordinator_id
        lane.state = lane_pb2.Lane.ACTIVE
        return lane_pb2.CreateLaneResponse(lane=lane)

    async def GetLane(
        self, request: lane_pb2.GetLaneRequest, context: Context
    ) -> lane_pb2.GetLaneResponse:
        await self.recorder.record("GetLane", request, context)
        lane = lane_pb2.Lane(
            lane_id=request.lane_id,
            coordinator_id=request.coordinator_id,
            title="Fix flaky parser",
            state=lane_pb2.Lane.ACTIVE,
            create_time=timestamp_pb2.Timestamp(seconds=1_800_000_000),
        )
        return lane_pb2.GetLaneResponse(lane=lane)

    async def ListLanes(
        self, request: lane_pb2.ListLanesRequest, context: Context
    ) -> lane_pb2.ListLanesResponse:
        await self.recorder.record("ListLanes", request, context)
        return lane_pb2.ListLanesResponse()

    async def AddBlocker(
        self, request: lane_pb2.AddBlockerRequest, context: Context
    ) -> lane_pb2.AddBlockerResponse:
        await self.recorder.record("AddBlocker", request, context)
        lane = lane_pb2.Lane(lane_id=request.lane_id, blockers=[request.blocker])
        return lane_pb2.AddBlockerResponse(lane=lane)


class FakeWorkers(worker_pb2_grpc.WorkerServiceServicer):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def Lease(
        self, request: worker_pb2.LeaseRequest, context: Context
    ) -> worker_pb2.LeaseResponse:
        await self.recorder.record("Lease", request, context)
        leases = [
            worker_pb2.Lease(lease_id=f"lease-{i}", lease_token="secret", attempt=1)
            for i in range(request.max_items)
        ]
        return worker_pb2.LeaseResponse(leases=leases)

    async def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: Context
    ) -> worker_pb2.HeartbeatResponse:
        await self.recorder.record("Heartbeat", request, context)
        return worker_pb2.HeartbeatResponse()


class FakeAdmin(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def GetCurrentPrincipal(
        self, request: admin_pb2.GetCurrentPrincipalRequest, context: Context
    ) -> admin_pb2.GetCurrentPrincipalResponse:
        await self.recorder.record("GetCurrentPrincipal", request, context)
        principal = admin_pb2.Principal(kind=admin_pb2.Principal.USER, name="user:ops")
        # The web pages' tests choose who is signed in by the session they send.
        session = self.recorder.last("GetCurrentPrincipal").metadata.get("x-workcoord-session", "")
        if session == "ended":
            await abort_with(context, errors.Unauthenticated("the session has ended"))
        principal.platform_admin = session == "platform-admin"
        orgs = session.removeprefix("member-of:").split(",") if "member-of:" in session else []
        for slug in orgs:
            principal.memberships.add(org_slug=slug, role=admin_pb2.OrgMember.ORG_VIEWER)
        return admin_pb2.GetCurrentPrincipalResponse(principal=principal)

    async def UpdateSettings(
        self, request: admin_pb2.UpdateSettingsRequest, context: Context
    ) -> admin_pb2.UpdateSettingsResponse:
        await self.recorder.record("UpdateSettings", request, context)
        return admin_pb2.UpdateSettingsResponse(settings=request.settings)

    async def ListWorkKeys(
        self, request: admin_pb2.ListWorkKeysRequest, context: Context
    ) -> admin_pb2.ListWorkKeysResponse:
        await self.recorder.record("ListWorkKeys", request, context)
        return admin_pb2.ListWorkKeysResponse(next_page_token="")


class FakeCoordinators(work_coordinator_pb2_grpc.WorkCoordinatorServiceServicer):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def ListEvents(
        self, request: work_coordinator_pb2.ListEventsRequest, context: Context
    ) -> work_coordinator_pb2.ListEventsResponse:
        await self.recorder.record("ListEvents", request, context)
        return work_coordinator_pb2.ListEventsResponse(next_page_token="next")


class FakeFeed(feed_pb2_grpc.FeedServiceServicer):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def Watch(
        self, request: feed_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[feed_pb2.WatchResponse]:
        await self.recorder.record("Watch", request, context)
        yield feed_pb2.WatchResponse(
            hello=feed_pb2.Hello(
                coordinator_id=request.coordinator_id,
                revision=41,
                ping_seconds=15,
                resume_from=request.since,
            )
        )
        yield feed_pb2.WatchResponse(ping=feed_pb2.Ping(revision=41))
        if request.since == 7:
            await abort_with(context, errors.PermissionDenied("grant revoked"))
        if request.since == HOLD_OPEN_SINCE:
            await asyncio.Event().wait()  # a live feed: open until the client leaves


class FakeRecovery(recovery_pb2_grpc.RecoveryServiceServicer):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def Maintain(
        self, request: recovery_pb2.MaintainRequest, context: Context
    ) -> recovery_pb2.MaintainResponse:
        await self.recorder.record("Maintain", request, context)
        report = recovery_pb2.MaintenanceReport(
            coordinator_id=request.coordinator_id, requeued=2, revision=9
        )
        return recovery_pb2.MaintainResponse(report=report)


class FakeSessions(session_pb2_grpc.SessionServiceServicer):
    """Login codes as the coordinator answers them: a missing code breaks its field rule, and
    this fake knows one code only (``VALID_LOGIN_CODE``)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def ExchangeLoginCode(
        self, request: session_pb2.ExchangeLoginCodeRequest, context: Context
    ) -> session_pb2.ExchangeLoginCodeResponse:
        await self.recorder.record("ExchangeLoginCode", request, context)
        if request.code == VALID_LOGIN_CODE:
            session = session_pb2.Session(session_id="s1")
            session.expire_time.FromSeconds(int(time.time()) + 3600)
            return session_pb2.ExchangeLoginCodeResponse(
                session=session, session_secret="wcses_secret", csrf_token="csrf"
            )
        if not request.code:
            await abort_with(context, errors.InvalidArgument.single("code", "is required"))
        await abort_with(
            context, errors.Unauthenticated("the login code is unknown, used or expired")
        )


@dataclass
class Upstream:
    """The fake upstream server."""

    address: str
    recorder: Recorder
    health: health.aio.HealthServicer


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def upstream() -> AsyncIterator[Upstream]:
    recorder = Recorder()
    server = grpc.aio.server()
    # Only the methods the tests use are served; the generated stubs declare all abstract.
    lane_pb2_grpc.add_LaneServiceServicer_to_server(FakeLanes(recorder), server)  # type: ignore[abstract]
    worker_pb2_grpc.add_WorkerServiceServicer_to_server(FakeWorkers(recorder), server)  # type: ignore[abstract]
    admin_pb2_grpc.add_AdminServiceServicer_to_server(FakeAdmin(recorder), server)  # type: ignore[abstract]
    work_coordinator_pb2_grpc.add_WorkCoordinatorServiceServicer_to_server(
        FakeCoordinators(recorder),  # type: ignore[abstract]
        server,
    )
    feed_pb2_grpc.add_FeedServiceServicer_to_server(FakeFeed(recorder), server)
    recovery_pb2_grpc.add_RecoveryServiceServicer_to_server(FakeRecovery(recorder), server)  # type: ignore[abstract]
    session_pb2_grpc.add_SessionServiceServicer_to_server(FakeSessions(recorder), server)  # type: ignore[abstract]
    health_servicer = health.aio.HealthServicer()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield Upstream(f"127.0.0.1:{port}", recorder, health_servicer)
    finally:
        await server.stop(grace=None)


def gateway_settings(coordinator_address: str) -> GatewaySettings:
    """Settings pointing both upstreams at ``coordinator_address``."""
    return GatewaySettings(
        listen_gateway="127.0.0.1:0",
        coordinator_address=coordinator_address,
        recovery_address=coordinator_address,
        max_body_bytes=MAX_BODY_BYTES,
        request_timeout_seconds=5.0,
    )


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def channels(upstream: Upstream) -> AsyncIterator[Upstreams]:
    channel = grpc.aio.insecure_channel(upstream.address)
    try:
        yield Upstreams(coordinator=channel, recovery=channel)
    finally:
        await channel.close()


@pytest_asyncio.fixture(loop_scope="session")
async def client(upstream: Upstream, channels: Upstreams) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(gateway_settings(upstream.address), channels)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        yield http


def unused_address() -> str:
    """A loopback address nothing listens on."""
    return f"127.0.0.1:{free_port()}"


@pytest.fixture
def recorder(upstream: Upstream) -> Recorder:
    return upstream.recorder
