"""A fake coordinator for the recovery tests: a real grpc.aio server with fake servicers.

It authenticates bearer tokens from a fixed table, keeps a leadership table on an injected
:class:`ManualClock`, and records every maintenance call with the credential it carried.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import grpc.aio

from workcoord.api.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    maintenance_pb2,
    maintenance_pb2_grpc,
    recovery_pb2,
)
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import (
    NotFound,
    PermissionDenied,
    Unauthenticated,
    WorkcoordError,
)
from workcoord.kit.status import ErrorInterceptor

SERVICE_KEY = "wcsvc_test-service-key"
ADMIN_TOKEN = "wcadm_platform-admin"
ORG_ADMIN_TOKEN = "wcadm_org-admin"
WORK_KEY = "wck_work-key"

_Context = grpc.aio.ServicerContext[Any, Any]


def _principals() -> dict[str, admin_pb2.Principal]:
    return {
        SERVICE_KEY: admin_pb2.Principal(
            kind=admin_pb2.Principal.SERVICE, name="service:recovery", id="recovery"
        ),
        ADMIN_TOKEN: admin_pb2.Principal(
            kind=admin_pb2.Principal.USER, name="user:admin", id="admin", platform_admin=True
        ),
        ORG_ADMIN_TOKEN: admin_pb2.Principal(
            kind=admin_pb2.Principal.USER,
            name="user:org-admin",
            id="org-admin",
            memberships=[admin_pb2.OrgMember(org_slug="acme", role=admin_pb2.OrgMember.ORG_ADMIN)],
        ),
        WORK_KEY: admin_pb2.Principal(kind=admin_pb2.Principal.WORK_KEY, name="key:k", id="k"),
    }


@dataclass
class LeadershipRow:
    holder_id: str
    expire_time: datetime
    term: int


@dataclass
class FakeCoordinatorState:
    """Everything the fake knows and records; tests change it between calls."""

    clock: ManualClock
    platform_enabled: bool = True
    targets: list[str] = field(default_factory=list)
    failures: dict[str, WorkcoordError] = field(default_factory=dict)
    # Steps a coordinator's pass reports failed (the rest of its pass runs).
    step_failures: dict[str, list[recovery_pb2.StepFailure]] = field(default_factory=dict)
    principals: dict[str, admin_pb2.Principal] = field(default_factory=_principals)
    runs: list[tuple[str, str]] = field(default_factory=list)  # (coordinator id, authorization)
    forwarded: list[dict[str, str]] = field(default_factory=list)  # credentials per run
    leadership: dict[str, LeadershipRow] = field(default_factory=dict)
    acquire_calls: list[str] = field(default_factory=list)
    release_calls: list[str] = field(default_factory=list)
    list_calls: int = 0
    run_gate: asyncio.Event | None = None  # when set here, RunMaintenance waits for it

    def principal(self, context: _Context) -> admin_pb2.Principal:
        for key, value in context.invocation_metadata() or ():
            # A browser session (as the gateway forwards it) names the same principals here.
            if key in ("authorization", "x-workcoord-session") and isinstance(value, str):
                token = value.removeprefix("Bearer ")
                principal = self.principals.get(token)
                if principal is not None:
                    return principal
                raise Unauthenticated("unknown credential")
        raise Unauthenticated("missing credential")

    def authorization(self, context: _Context) -> str:
        return next(
            (str(v) for k, v in context.invocation_metadata() or () if k == "authorization"), ""
        )

    def require_service(self, context: _Context) -> None:
        if self.principal(context).kind != admin_pb2.Principal.SERVICE:
            raise PermissionDenied("maintenance is for the service key")


class FakeMaintenance(maintenance_pb2_grpc.MaintenanceServiceServicer):
    def __init__(self, state: FakeCoordinatorState) -> None:
        self.state = state

    async def ListMaintenanceTargets(
        self, request: maintenance_pb2.ListMaintenanceTargetsRequest, context: _Context
    ) -> maintenance_pb2.ListMaintenanceTargetsResponse:
        self.state.require_service(context)
        self.state.list_calls += 1
        targets = self.state.targets if self.state.platform_enabled else []
        return maintenance_pb2.ListMaintenanceTargetsResponse(
            platform_enabled=self.state.platform_enabled,
            targets=[maintenance_pb2.MaintenanceTarget(coordinator_id=t) for t in targets],
        )

    async def RunMaintenance(
        self, request: maintenance_pb2.RunMaintenanceRequest, context: _Context
    ) -> maintenance_pb2.RunMaintenanceResponse:
        principal = self.state.principal(context)
        if principal.kind == admin_pb2.Principal.WORK_KEY:
            raise PermissionDenied("work keys cannot run maintenance")
        self.state.runs.append((request.coordinator_id, self.state.authorization(context)))
        self.state.forwarded.append(
            {
                key: str(value)
                for key, value in context.invocation_metadata() or ()
                if key in ("authorization", "x-workcoord-session", "x-workcoord-csrf")
            }
        )
        if self.state.run_gate is not None:
            await self.state.run_gate.wait()
        failure = self.state.failures.get(request.coordinator_id)
        if failure is not None:
            raise failure
        if request.coordinator_id not in self.state.targets:
            raise NotFound(f"no work coordinator {request.coordinator_id}")
        return maintenance_pb2.RunMaintenanceResponse(
            report=recovery_pb2.MaintenanceReport(
                coordinator_id=request.coordinator_id,
                requeued=2,
                revision=7,
                step_failures=self.state.step_failures.get(request.coordinator_id, []),
            )
        )

    async def AcquireLeadership(
        self, request: maintenance_pb2.AcquireLeadershipRequest, context: _Context
    ) -> maintenance_pb2.AcquireLeadershipResponse:
        self.state.require_service(context)
        self.state.acquire_calls.append(request.holder_id)
        now = self.state.clock.now()
        row = self.state.leadership.get(request.name)
        if row is None or row.expire_time <= now or row.holder_id == request.holder_id:
            term = 1 if row is None else row.term + (row.holder_id != request.holder_id)
            row = LeadershipRow(
                request.holder_id, now + timedelta(seconds=request.lease_seconds), term
            )
            self.state.leadership[request.name] = row
        return maintenance_pb2.AcquireLeadershipResponse(
            leadership=_leadership(request.name, row, held=row.holder_id == request.holder_id)
        )

    async def ReleaseLeadership(
        self, request: maintenance_pb2.ReleaseLeadershipRequest, context: _Context
    ) -> maintenance_pb2.ReleaseLeadershipResponse:
        self.state.require_service(context)
        self.state.release_calls.append(request.holder_id)
        row = self.state.leadership.get(request.name)
        if row is not None and row.holder_id == request.holder_id:
            row.expire_time = self.state.clock.now()
        return maintenance_pb2.ReleaseLeadershipResponse(
            leadership=maintenance_pb2.Leadership(name=request.name, held=False)
        )

    async def GetMailDue(
        self, request: maintenance_pb2.GetMailDueRequest, context: _Context
    ) -> maintenance_pb2.GetMailDueResponse:
        """Nothing is ever due here (mail is tested against the real coordinator)."""
        self.state.require_service(context)
        return maintenance_pb2.GetMailDueResponse()

    async def MarkMailSent(
        self, request: maintenance_pb2.MarkMailSentRequest, context: _Context
    ) -> maintenance_pb2.MarkMailSentResponse:
        self.state.require_service(context)
        return maintenance_pb2.MarkMailSentResponse(moved=False)


class FakeAdmin(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, state: FakeCoordinatorState) -> None:
        self.state = state

    async def GetCurrentPrincipal(
        self, request: admin_pb2.GetCurrentPrincipalRequest, context: _Context
    ) -> admin_pb2.GetCurrentPrincipalResponse:
        return admin_pb2.GetCurrentPrincipalResponse(principal=self.state.principal(context))


def _leadership(name: str, row: LeadershipRow, *, held: bool) -> maintenance_pb2.Leadership:
    leadership = maintenance_pb2.Leadership(
        name=name, holder_id=row.holder_id, held=held, term=row.term
    )
    leadership.expire_time.FromDatetime(row.expire_time)
    return leadership


class FakeCoordinator:
    """The fake's gRPC server; ``address`` once started."""

    def __init__(self, state: FakeCoordinatorState) -> None:
        self.state = state
        self.server = grpc.aio.server(interceptors=[ErrorInterceptor()])
        # DeliverWebhooks is not served: the recovery's webhook sender gets UNIMPLEMENTED and
        # pauses, as it would against a coordinator without webhooks support.
        maintenance = FakeMaintenance(state)  # type: ignore[abstract]
        maintenance_pb2_grpc.add_MaintenanceServiceServicer_to_server(maintenance, self.server)
        # Only GetCurrentPrincipal is served; the generated stubs declare the rest abstract.
        admin = FakeAdmin(state)  # type: ignore[abstract]
        admin_pb2_grpc.add_AdminServiceServicer_to_server(admin, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"

    async def start(self) -> None:
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop(None)
