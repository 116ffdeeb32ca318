"""The authorization matrix: every gRPC method of every workcoord service x every credential
kind (platform admin, org admins of this and another org, viewer, work keys in scope with each
capability and out of scope, revoked and expired keys, a parent with and without a live grant,
the service key, no credential), each cell asserting its exact outcome, against the real
coordinator (in-process on port 0) over real PostgreSQL.

The expectation table below is the contract: one row per method, one letter per credential
column. A regression prints the exact cells that changed, e.g.
``LaneService/CreateLane x key_read: expected D, got A``.

Letters: ``A`` allowed · ``U`` UNAUTHENTICATED · ``D`` PERMISSION_DENIED · ``N`` NOT_FOUND ·
``n`` NOT_FOUND of a made-up pending action, after authorization passed ·
``F`` FAILED_PRECONDITION after authorization passed (the record is in the wrong state).

Columns (credential kinds):
``P`` verified platform admin (also the GLOBAL parent's admin) · ``A`` admin of the child's org
· ``O`` admin of another org · ``V`` viewer of the child's org · ``R``/``L``/``W`` a work key in
scope holding only READ / LEASE / WRITE · ``X`` a work key of another work coordinator (every
capability) · ``K`` a revoked key · ``E`` an expired key · ``G`` the parent (a GLOBAL work key,
READ and WRITE) acting on a child that gave it a live grant · ``g`` the parent acting on a child
whose grant was revoked · ``S`` the recovery service key · ``-`` no credential.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from google.protobuf import field_mask_pb2, timestamp_pb2
from google.protobuf.message import Message

from tests.integration.tenancy.world import (
    ALL_PERMISSIONS,
    Human,
    create_global,
    grant,
    key_for,
    new_org,
    new_user,
    set_parent,
)
from tests.support.databases import PostgresDatabases, delete_redis_keys
from tests.support.harness import (
    ALL_CAPABILITIES,
    Stack,
    TestClock,
    create_coordinator,
    identity,
    start_stack,
    task,
)
from workcoord.api.v1 import (
    admin_pb2,
    feed_pb2,
    lane_pb2,
    maintenance_pb2,
    recovery_pb2,
    session_pb2,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import WorkcoordError

pytestmark = [pytest.mark.pg, pytest.mark.redis, pytest.mark.xdist_group(name="authz-matrix")]

A = admin_pb2
W = work_coordinator_pb2
L = lane_pb2
K = worker_pb2
M = maintenance_pb2
S = session_pb2
Cap = A.WorkKey.Capability
Role = A.OrgMember.Role
Perm = W.Grant.Permission

COLUMNS = "PAOVRLWXKEGgS-"
COLUMN_NAMES = {
    "P": "platform_admin",
    "A": "org_admin",
    "O": "other_org_admin",
    "V": "org_viewer",
    "R": "key_read",
    "L": "key_lease",
    "W": "key_write",
    "X": "key_out_of_scope",
    "K": "key_revoked",
    "E": "key_expired",
    "G": "parent_with_grant",
    "g": "parent_without_grant",
    "S": "service_key",
    "-": "no_credential",
}

# Common rows.
READ = "AANAADDNUUNNDU"  # read a child coordinator (humans with a role, READ keys)
WRITE = "AANDDDANUUNNDU"  # create and change lanes and items (admins, WRITE keys)
LEASE = "AANDDADNUUNNDU"  # worker calls (admins, LEASE keys)
DECIDE = "AANDDDDNUUNNDU"  # approve, deny, resume, retry, resolve (admins only)
CONFIGURE = "AANDDDDNUUNNDU"  # configure the child, its grants
PLATFORM = "ADDDDDDDUUDDDU"  # verified platform admins only
SERVICE = "DDDDDDDDUUDDAU"  # the recovery service only
ANYONE = "AAAAAAAAUUAAAU"  # any valid credential
HUMANS = "AAAADDDDUUDDDU"  # any human
CHILD_READ = "ANNNNNNNUUADDU"  # the parent reading a child (needs READ on GLOBAL + grant)
CHILD_WRITE = "ANNNNNNNUUADDU"  # the parent acting on a child (needs WRITE on GLOBAL + grant)

EXPECTED: dict[str, str] = {
    # --------------------------------------------------------------- AdminService
    "AdminService/GetCurrentPrincipal": ANYONE,
    "AdminService/CreateOrg": PLATFORM,
    "AdminService/ListOrgs": ANYONE,
    "AdminService/GetOrg": "AANANNNNUUNNNU",
    "AdminService/CreateUser": PLATFORM,
    "AdminService/ListUsers": PLATFORM,
    "AdminService/GetUser": "ANNNNNNNUUNNNU",
    "AdminService/AddOrgMember": "AANDDDDDUUDDDU",
    "AdminService/ListOrgMembers": "AANADDDDUUDDDU",
    "AdminService/RemoveOrgMember": "AANDDDDDUUDDDU",
    "AdminService/CreateUserToken": "ANNNNNNNUUNNNU",
    "AdminService/RevokeUserToken": "ANNNNNNNUUNNNU",
    "AdminService/CreateWorkKey": "AANDDDDDUUDDDU",
    "AdminService/ListWorkKeys": "AANDDDDDUUDDDU",
    "AdminService/GetWorkKey": "AANNNNNNUUNNNU",
    "AdminService/RevokeWorkKey": "AANNNNNNUUNNNU",
    "AdminService/GetSettings": HUMANS,
    "AdminService/UpdateSettings": PLATFORM,
    # --------------------------------------------------------------- WorkCoordinatorService
    "WorkCoordinatorService/CreateWorkCoordinator": "AANDDDDDUUDDDU",
    "WorkCoordinatorService/ListWorkCoordinators": ANYONE,
    "WorkCoordinatorService/GetWorkCoordinator": READ,
    "WorkCoordinatorService/UpdateWorkCoordinator": CONFIGURE,
    "WorkCoordinatorService/GetView": READ,
    "WorkCoordinatorService/Explain": READ,
    "WorkCoordinatorService/ListEvents": READ,
    "WorkCoordinatorService/GetDigest": READ,
    "WorkCoordinatorService/ListPendingActions": READ,
    "WorkCoordinatorService/ResolvePendingAction": "nnNDDDDNUUNNDU",
    "WorkCoordinatorService/CreateGrant": CONFIGURE,
    "WorkCoordinatorService/ListGrants": "AANADDDNUUNNDU",
    "WorkCoordinatorService/RevokeGrant": CONFIGURE,
    "WorkCoordinatorService/GetChildSummary": CHILD_READ,
    "WorkCoordinatorService/ListChildEscalations": CHILD_READ,
    "WorkCoordinatorService/AssignChildWork": CHILD_WRITE,
    "WorkCoordinatorService/SteerChildWork": CHILD_WRITE,
    "WorkCoordinatorService/EscalateChildWork": CHILD_WRITE,
    # --------------------------------------------------------------- LaneService
    "LaneService/CreateLane": WRITE,
    "LaneService/ListLanes": READ,
    "LaneService/GetLane": READ,
    "LaneService/UpdateLane": WRITE,
    "LaneService/PauseLane": WRITE,
    "LaneService/ResumeLane": WRITE,
    "LaneService/CancelLane": WRITE,
    "LaneService/AddBlocker": WRITE,
    "LaneService/ResolveBlocker": WRITE,
    "LaneService/LinkTicket": WRITE,
    "LaneService/CreateItem": WRITE,
    "LaneService/GetItem": READ,
    "LaneService/ApproveItem": DECIDE,
    "LaneService/DenyItem": DECIDE,
    "LaneService/ResumeItem": DECIDE,
    "LaneService/CancelItem": WRITE,
    "LaneService/RetryItem": "FFNDDDDNUUNNDU",
    # --------------------------------------------------------------- WorkerService
    "WorkerService/ReportWorker": LEASE,
    "WorkerService/ListWorkers": READ,
    "WorkerService/ForgetWorker": CONFIGURE,
    "WorkerService/Lease": LEASE,
    "WorkerService/Start": LEASE,
    "WorkerService/Heartbeat": LEASE,
    "WorkerService/Complete": LEASE,
    "WorkerService/Fail": LEASE,
    "WorkerService/Checkpoint": LEASE,
    "WorkerService/Release": LEASE,
    # --------------------------------------------------------------- FeedService
    "FeedService/Watch": READ,
    # --------------------------------------------------------------- MaintenanceService
    "MaintenanceService/ListMaintenanceTargets": "ADDDDDDDUUDDAU",
    # An org admin may run a recovery pass on its own coordinator (it holds every access).
    "MaintenanceService/RunMaintenance": "AANDDDDNUUNNAU",
    "MaintenanceService/AcquireLeadership": SERVICE,
    "MaintenanceService/ReleaseLeadership": SERVICE,
    # --------------------------------------------------------------- SessionService
    "SessionService/CreateLoginCode": PLATFORM,
    # Needs no credential: the one-time code is the credential (whatever else is sent).
    "SessionService/ExchangeLoginCode": "AAAAAAAAAAAAAA",
    # Needs no credential either: the id_token is the credential, verified by the coordinator
    # whoever calls; a forged one is refused for all (valid ones: tenancy/test_oidc.py).
    "SessionService/ExchangeIdToken": "UUUUUUUUUUUUUU",
    # Bearer callers have no session to show or end.
    "SessionService/GetSession": "NNNNNNNNUUNNNU",
    "SessionService/EndSession": "NNNNNNNNUUNNNU",
}

# Services answered by another process: RecoveryService runs in the recovery service, which
# forwards the caller's credential to MaintenanceService (rows above) and lets the coordinator
# decide; tests/e2e/test_grpc.py drives it end to end.
OTHER_PROCESS = {"RecoveryService"}

API_MODULES = (
    admin_pb2,
    feed_pb2,
    lane_pb2,
    maintenance_pb2,
    recovery_pb2,
    session_pb2,
    work_coordinator_pb2,
    worker_pb2,
)


def all_methods() -> list[tuple[str, Any, Any]]:
    """(``Service/Method``, request class, response class) of every RPC in the contract."""
    found = []
    for module in API_MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                found.append(
                    (
                        f"{service.name}/{method.name}",
                        _message_class(method.input_type),
                        _message_class(method.output_type),
                    )
                )
    return sorted(found, key=lambda row: row[0])


def _message_class(descriptor: Any) -> Any:
    for module in API_MODULES:
        if descriptor.file.name == module.DESCRIPTOR.name:
            return getattr(module, descriptor.name)
    raise LookupError(descriptor.full_name)


# ------------------------------------------------------------------------------ the world


@dataclass
class World:
    stack: Stack
    child: str  # ORG work coordinator of the stack's org; GLOBAL holds a live grant from it
    child_ungranted: str  # same org; its grant to GLOBAL was revoked
    parent: str  # GLOBAL
    other_cid: str
    lane_id: str
    waiting_item: str  # a WAITING item (of class person) parents may assign
    target_user: Human  # a user with no role, for per-user calls
    key_read_id: str
    full_key: WorkcoordClient  # every capability on the child: builds leases for worker calls
    clients: dict[str, WorkcoordClient] = field(default_factory=dict)
    tokens: dict[str, str | None] = field(default_factory=dict)  # each column's bearer secret

    @property
    def admin(self) -> WorkcoordClient:
        return self.stack.admin

    def cid_for(self, column: str) -> str:
        return self.child_ungranted if column == "g" else self.child

    async def new_lane(self, *items: L.Item) -> L.Lane:
        lane = L.Lane(title="matrix", template=L.Lane.CUSTOM, items=list(items or [task("a")]))
        response = await self.admin.lanes.CreateLane(
            L.CreateLaneRequest(coordinator_id=self.child, lane=lane)
        )
        return response.lane

    async def new_lease(self, start: bool = True) -> K.Lease:
        lane = await self.new_lane(task("w", priority=100))
        request = K.LeaseRequest(
            coordinator_id=self.child,
            worker_id="matrix-builder",
            worker_class="machine",
            max_items=1,
            lease_seconds=300,
        )
        if start:
            request.run_identity.CopyFrom(identity(self.stack.clock))
        # Some lease of this class (a released one may come back first): any live one will do.
        del lane
        (lease,) = (await self.full_key.workers.Lease(request)).leases
        return lease


Builder = Callable[[World, str], Awaitable[Message]]


def _ts(world: World, delta: timedelta) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(world.stack.clock.now() + delta)
    return out


async def _fresh_token(world: World, _column: str) -> Message:
    token = await world.admin.admin.CreateUserToken(
        A.CreateUserTokenRequest(
            user_id=world.target_user.user_id, token=A.UserToken(display_name="t")
        )
    )
    return A.RevokeUserTokenRequest(user_id=world.target_user.user_id, token_id=token.token_id)


async def _fresh_member(world: World, _column: str) -> Message:
    user = await world.admin.admin.CreateUser(
        A.CreateUserRequest(user=A.User(email=f"m-{secrets.token_hex(4)}@example.test"))
    )
    await world.admin.admin.AddOrgMember(
        A.AddOrgMemberRequest(
            org_slug=world.stack.org,
            member=A.OrgMember(user_id=user.user.user_id, role=Role.ORG_VIEWER),
        )
    )
    return A.RemoveOrgMemberRequest(org_slug=world.stack.org, user_id=user.user.user_id)


async def _idle_worker(world: World, column: str) -> Message:
    """A worker holding no lease, registered for this cell alone (forgetting it is allowed)."""
    worker_id = f"forget-{ord(column)}-{secrets.token_hex(3)}"
    await world.full_key.workers.ReportWorker(
        K.ReportWorkerRequest(
            coordinator_id=world.child, worker=K.Worker(worker_id=worker_id, worker_class="person")
        )
    )
    return K.ForgetWorkerRequest(coordinator_id=world.child, worker_id=worker_id)


async def _fresh_key(world: World, _column: str) -> Message:
    key_id, _, _ = await key_for(world.stack, [Cap.READ], [world.child])
    return A.RevokeWorkKeyRequest(key_id=key_id)


async def _fresh_grant(world: World, _column: str) -> Message:
    made = await grant(
        world.admin,
        world.child,
        world.parent,
        [Perm.SUMMARY],
        world.stack.clock.now() + timedelta(days=1),
    )
    return W.RevokeGrantRequest(coordinator_id=world.child, grant_id=made.grant_id)


async def _lane_op(world: World, column: str, cls: Any) -> Message:
    lane = await world.new_lane()
    if cls is L.ResumeLaneRequest:
        await world.admin.lanes.PauseLane(
            L.PauseLaneRequest(coordinator_id=world.child, lane_id=lane.lane_id)
        )
    request: Message = cls(coordinator_id=world.child, lane_id=lane.lane_id)
    return request


async def _blocker(world: World, _column: str) -> Message:
    lane = await world.new_lane()
    added = await world.admin.lanes.AddBlocker(
        L.AddBlockerRequest(
            coordinator_id=world.child, lane_id=lane.lane_id, blocker=L.Blocker(reason="b")
        )
    )
    blocker = added.lane.blockers[0]
    return L.ResolveBlockerRequest(
        coordinator_id=world.child, lane_id=lane.lane_id, blocker_id=blocker.blocker_id
    )


async def _item_in(world: World, cls: Any, **flags: Any) -> Message:
    item = task("x")
    for name, value in flags.items():
        setattr(item, name, value)
    lane = await world.new_lane(item)
    request: Message = cls(
        coordinator_id=world.child, lane_id=lane.lane_id, item_id=lane.items[0].item_id
    )
    return request


async def _worker_call(world: World, column: str, cls: Any, start: bool = True) -> Message:
    lease = await world.new_lease(start=start)
    request: Any = cls(
        coordinator_id=world.child, lease_id=lease.lease_id, lease_token=lease.lease_token
    )
    if cls is K.StartRequest:
        request.run_identity.CopyFrom(identity(world.stack.clock))
    elif cls is K.CompleteRequest:
        request.evidence.CopyFrom(L.Evidence(summary="done"))
    elif cls is K.FailRequest:
        request.error.CopyFrom(L.ErrorInfo(message="boom", type="Boom", retryable=True))
    elif cls is K.CheckpointRequest:
        request.checkpoint.CopyFrom(L.Checkpoint(summary="half"))
    built: Message = request
    return built


async def _login_code(world: World, _column: str) -> Message:
    stub = _session_stub(world.admin)
    made = await stub.CreateLoginCode(S.CreateLoginCodeRequest())
    return S.ExchangeLoginCodeRequest(code=made.code)


def _session_stub(client: WorkcoordClient) -> Any:
    from workcoord.api.v1 import session_pb2_grpc

    return session_pb2_grpc.SessionServiceStub(client.channel)


def _static(message: Callable[[World, str], Message]) -> Builder:
    async def build(world: World, column: str) -> Message:
        return message(world, column)

    return build


BUILDERS: dict[str, Builder] = {
    # AdminService
    "AdminService/GetCurrentPrincipal": _static(lambda w, c: A.GetCurrentPrincipalRequest()),
    "AdminService/CreateOrg": _static(
        lambda w, c: A.CreateOrgRequest(org=A.Org(slug=f"m-{secrets.token_hex(4)}"))
    ),
    "AdminService/ListOrgs": _static(lambda w, c: A.ListOrgsRequest()),
    "AdminService/GetOrg": _static(lambda w, c: A.GetOrgRequest(org_slug=w.stack.org)),
    "AdminService/CreateUser": _static(
        lambda w, c: A.CreateUserRequest(
            user=A.User(email=f"n-{secrets.token_hex(4)}@example.test")
        )
    ),
    "AdminService/ListUsers": _static(lambda w, c: A.ListUsersRequest()),
    "AdminService/GetUser": _static(lambda w, c: A.GetUserRequest(user_id=w.target_user.user_id)),
    "AdminService/AddOrgMember": _static(
        lambda w, c: A.AddOrgMemberRequest(
            org_slug=w.stack.org,
            member=A.OrgMember(user_id=w.target_user.user_id, role=Role.ORG_VIEWER),
        )
    ),
    "AdminService/ListOrgMembers": _static(
        lambda w, c: A.ListOrgMembersRequest(org_slug=w.stack.org)
    ),
    "AdminService/RemoveOrgMember": _fresh_member,
    "AdminService/CreateUserToken": _static(
        lambda w, c: A.CreateUserTokenRequest(
            user_id=w.target_user.user_id, token=A.UserToken(display_name="x")
        )
    ),
    "AdminService/RevokeUserToken": _fresh_token,
    "AdminService/CreateWorkKey": _static(
        lambda w, c: A.CreateWorkKeyRequest(
            work_key=A.WorkKey(display_name="m", coordinator_ids=[w.child], capabilities=[Cap.READ])
        )
    ),
    "AdminService/ListWorkKeys": _static(lambda w, c: A.ListWorkKeysRequest(org_slug=w.stack.org)),
    "AdminService/GetWorkKey": _static(lambda w, c: A.GetWorkKeyRequest(key_id=w.key_read_id)),
    "AdminService/RevokeWorkKey": _fresh_key,
    "AdminService/GetSettings": _static(lambda w, c: A.GetSettingsRequest()),
    "AdminService/UpdateSettings": _static(
        lambda w, c: A.UpdateSettingsRequest(
            settings=A.Settings(work_coordinator_enabled=True),
            update_mask=field_mask_pb2.FieldMask(paths=["work_coordinator_enabled"]),
        )
    ),
    # WorkCoordinatorService
    "WorkCoordinatorService/CreateWorkCoordinator": _static(
        lambda w, c: W.CreateWorkCoordinatorRequest(
            work_coordinator=W.WorkCoordinator(scope=W.WorkCoordinator.ORG, org_slug=w.stack.org)
        )
    ),
    "WorkCoordinatorService/ListWorkCoordinators": _static(
        lambda w, c: W.ListWorkCoordinatorsRequest()
    ),
    "WorkCoordinatorService/GetWorkCoordinator": _static(
        lambda w, c: W.GetWorkCoordinatorRequest(coordinator_id=w.child)
    ),
    "WorkCoordinatorService/UpdateWorkCoordinator": _static(
        lambda w, c: W.UpdateWorkCoordinatorRequest(
            coordinator_id=w.child,
            work_coordinator=W.WorkCoordinator(scope=W.WorkCoordinator.ORG, display_name="m"),
            update_mask=field_mask_pb2.FieldMask(paths=["display_name"]),
        )
    ),
    "WorkCoordinatorService/GetView": _static(
        lambda w, c: W.GetViewRequest(coordinator_id=w.child)
    ),
    "WorkCoordinatorService/Explain": _static(
        lambda w, c: W.ExplainRequest(coordinator_id=w.child, lane_id=w.lane_id)
    ),
    "WorkCoordinatorService/ListEvents": _static(
        lambda w, c: W.ListEventsRequest(coordinator_id=w.child)
    ),
    "WorkCoordinatorService/GetDigest": _static(
        lambda w, c: W.GetDigestRequest(coordinator_id=w.child, day="2026-01-01")
    ),
    "WorkCoordinatorService/ListPendingActions": _static(
        lambda w, c: W.ListPendingActionsRequest(coordinator_id=w.child)
    ),
    "WorkCoordinatorService/ResolvePendingAction": _static(
        lambda w, c: W.ResolvePendingActionRequest(
            coordinator_id=w.child, action_id="pa_doesnotexist", resolution="done by hand"
        )
    ),
    "WorkCoordinatorService/CreateGrant": _static(
        lambda w, c: W.CreateGrantRequest(
            coordinator_id=w.child,
            grant=W.Grant(
                parent_coordinator_id=w.parent,
                permissions=[Perm.SUMMARY],
                expire_time=_ts(w, timedelta(days=1)),
            ),
        )
    ),
    "WorkCoordinatorService/ListGrants": _static(
        lambda w, c: W.ListGrantsRequest(coordinator_id=w.child)
    ),
    "WorkCoordinatorService/RevokeGrant": _fresh_grant,
    "WorkCoordinatorService/GetChildSummary": _static(
        lambda w, c: W.GetChildSummaryRequest(coordinator_id=w.parent, child_id=w.cid_for(c))
    ),
    "WorkCoordinatorService/ListChildEscalations": _static(
        lambda w, c: W.ListChildEscalationsRequest(coordinator_id=w.parent, child_id=w.cid_for(c))
    ),
    "WorkCoordinatorService/AssignChildWork": _static(
        lambda w, c: W.AssignChildWorkRequest(
            coordinator_id=w.parent,
            child_id=w.cid_for(c),
            lane_id=w.lane_id,
            item_id=w.waiting_item,
            worker_id="gpu-1",
        )
    ),
    "WorkCoordinatorService/SteerChildWork": _static(
        lambda w, c: W.SteerChildWorkRequest(
            coordinator_id=w.parent, child_id=w.cid_for(c), lane_id=w.lane_id, priority=5
        )
    ),
    "WorkCoordinatorService/EscalateChildWork": _static(
        lambda w, c: W.EscalateChildWorkRequest(
            coordinator_id=w.parent, child_id=w.cid_for(c), lane_id=w.lane_id, reason="stuck"
        )
    ),
    # LaneService
    "LaneService/CreateLane": _static(
        lambda w, c: L.CreateLaneRequest(
            coordinator_id=w.child,
            lane=L.Lane(title="m", template=L.Lane.CUSTOM, items=[task("q", "person")]),
        )
    ),
    "LaneService/ListLanes": _static(lambda w, c: L.ListLanesRequest(coordinator_id=w.child)),
    "LaneService/GetLane": _static(
        lambda w, c: L.GetLaneRequest(coordinator_id=w.child, lane_id=w.lane_id)
    ),
    "LaneService/UpdateLane": _static(
        lambda w, c: L.UpdateLaneRequest(
            coordinator_id=w.child,
            lane_id=w.lane_id,
            lane=L.Lane(priority=7),
            update_mask=field_mask_pb2.FieldMask(paths=["priority"]),
        )
    ),
    "LaneService/PauseLane": lambda w, c: _lane_op(w, c, L.PauseLaneRequest),
    "LaneService/ResumeLane": lambda w, c: _lane_op(w, c, L.ResumeLaneRequest),
    "LaneService/CancelLane": lambda w, c: _lane_op(w, c, L.CancelLaneRequest),
    "LaneService/AddBlocker": _static(
        lambda w, c: L.AddBlockerRequest(
            coordinator_id=w.child, lane_id=w.lane_id, blocker=L.Blocker(reason="m")
        )
    ),
    "LaneService/ResolveBlocker": _blocker,
    "LaneService/LinkTicket": _static(
        lambda w, c: L.LinkTicketRequest(
            coordinator_id=w.child,
            lane_id=w.lane_id,
            ticket=L.Ticket(tracker="github", key=f"o/r#{secrets.randbelow(10**6)}"),
        )
    ),
    "LaneService/CreateItem": _static(
        lambda w, c: L.CreateItemRequest(
            coordinator_id=w.child,
            lane_id=w.lane_id,
            item=task(f"i{secrets.token_hex(3)}", "person"),
        )
    ),
    "LaneService/GetItem": _static(
        lambda w, c: L.GetItemRequest(
            coordinator_id=w.child, lane_id=w.lane_id, item_id=w.waiting_item
        )
    ),
    "LaneService/ApproveItem": lambda w, c: _item_in(
        w, L.ApproveItemRequest, requires_approval=True
    ),
    "LaneService/DenyItem": lambda w, c: _item_in(w, L.DenyItemRequest, requires_approval=True),
    "LaneService/ResumeItem": lambda w, c: _item_in(w, L.ResumeItemRequest, needs_human=True),
    "LaneService/CancelItem": lambda w, c: _item_in(w, L.CancelItemRequest),
    # A queued item cannot be retried: an authorized caller reaches the state check (F).
    "LaneService/RetryItem": lambda w, c: _item_in(w, L.RetryItemRequest),
    # WorkerService
    "WorkerService/ReportWorker": _static(
        lambda w, c: K.ReportWorkerRequest(
            coordinator_id=w.child, worker=K.Worker(worker_id=f"w-{c}", worker_class="person")
        )
    ),
    "WorkerService/ListWorkers": _static(lambda w, c: K.ListWorkersRequest(coordinator_id=w.child)),
    "WorkerService/ForgetWorker": _idle_worker,
    "WorkerService/Lease": _static(
        lambda w, c: K.LeaseRequest(
            coordinator_id=w.child,
            worker_id=f"lease-{ord(c)}",
            worker_class="codex",
            max_items=1,
            lease_seconds=30,
        )
    ),
    "WorkerService/Start": lambda w, c: _worker_call(w, c, K.StartRequest, start=False),
    "WorkerService/Heartbeat": lambda w, c: _worker_call(w, c, K.HeartbeatRequest),
    "WorkerService/Complete": lambda w, c: _worker_call(w, c, K.CompleteRequest),
    "WorkerService/Fail": lambda w, c: _worker_call(w, c, K.FailRequest),
    "WorkerService/Checkpoint": lambda w, c: _worker_call(w, c, K.CheckpointRequest),
    "WorkerService/Release": lambda w, c: _worker_call(w, c, K.ReleaseRequest),
    # FeedService
    "FeedService/Watch": _static(lambda w, c: feed_pb2.WatchRequest(coordinator_id=w.child)),
    # MaintenanceService
    "MaintenanceService/ListMaintenanceTargets": _static(
        lambda w, c: M.ListMaintenanceTargetsRequest()
    ),
    "MaintenanceService/RunMaintenance": _static(
        lambda w, c: M.RunMaintenanceRequest(coordinator_id=w.child)
    ),
    "MaintenanceService/AcquireLeadership": _static(
        lambda w, c: M.AcquireLeadershipRequest(
            name="matrix", holder_id=f"h-{ord(c)}", lease_seconds=5
        )
    ),
    "MaintenanceService/ReleaseLeadership": _static(
        lambda w, c: M.ReleaseLeadershipRequest(name="matrix", holder_id=f"h-{ord(c)}")
    ),
    # SessionService
    "SessionService/CreateLoginCode": _static(lambda w, c: S.CreateLoginCodeRequest()),
    "SessionService/ExchangeLoginCode": _login_code,
    "SessionService/ExchangeIdToken": _static(
        lambda w, c: S.ExchangeIdTokenRequest(id_token="forged.id.token", nonce="n")
    ),
    "SessionService/GetSession": _static(lambda w, c: S.GetSessionRequest()),
    "SessionService/EndSession": _static(lambda w, c: S.EndSessionRequest()),
}


@pytest.fixture(scope="module")
async def world(pg_databases: PostgresDatabases, redis: str) -> AsyncIterator[World]:
    url = await pg_databases.create()
    stack = await start_stack(
        "postgres",
        url,
        redis,
        clock=TestClock(),
        oidc_issuer="https://idp.invalid",
        oidc_client_id="matrix",
    )
    try:
        yield await _build_world(stack)
    finally:
        await stack.close()
        await delete_redis_keys(stack.coordinator_ids, redis)
        await pg_databases.drop(url)


async def _build_world(stack: Stack) -> World:
    parent = await create_global(stack)
    child = await create_coordinator(
        stack.admin, stack.org, class_capacity={"machine": 10_000, "person": 1, "codex": 4}
    )
    ungranted = await create_coordinator(stack.admin, stack.org)
    for cid in (child, ungranted):
        await set_parent(stack.admin, cid, parent)
    expiry = stack.clock.now() + timedelta(days=30)
    await grant(stack.admin, child, parent, list(ALL_PERMISSIONS), expiry)
    revoked = await grant(stack.admin, ungranted, parent, list(ALL_PERMISSIONS), expiry)
    await stack.admin.coordinators.RevokeGrant(
        W.RevokeGrantRequest(coordinator_id=ungranted, grant_id=revoked.grant_id)
    )
    other_org = await new_org(stack)
    other_cid = await create_coordinator(stack.admin, other_org)

    lane = (
        await stack.admin.lanes.CreateLane(
            L.CreateLaneRequest(
                coordinator_id=child,
                lane=L.Lane(
                    title="matrix",
                    template=L.Lane.CUSTOM,
                    items=[task("gate", "person"), task("waits", "person", depends_on=["gate"])],
                ),
            )
        )
    ).lane
    waiting = next(i for i in lane.items if i.key == "waits")

    admin = await new_user(stack, role=Role.ORG_ADMIN)
    viewer = await new_user(stack, role=Role.ORG_VIEWER)
    outsider = await new_user(stack, org=other_org, role=Role.ORG_ADMIN)
    target = await new_user(stack)
    key_read_id, read_secret, key_read = await key_for(stack, [Cap.READ], [child])
    _, lease_secret, key_lease = await key_for(stack, [Cap.LEASE], [child])
    _, write_secret, key_write = await key_for(stack, [Cap.WRITE], [child])
    _, out_secret, key_out = await key_for(stack, ALL_CAPABILITIES, [other_cid])
    revoked_id, revoked_secret, key_revoked = await key_for(stack, ALL_CAPABILITIES, [child])
    await stack.admin.admin.RevokeWorkKey(A.RevokeWorkKeyRequest(key_id=revoked_id))
    expiring = await stack.admin.admin.CreateWorkKey(
        A.CreateWorkKeyRequest(
            work_key=A.WorkKey(
                display_name="expiring",
                coordinator_ids=[child],
                capabilities=list(ALL_CAPABILITIES),
                expire_time=_ts_at(stack, timedelta(minutes=5)),
            )
        )
    )
    key_expired = stack.client(expiring.secret)
    _, parent_secret, parent_key = await key_for(stack, [Cap.READ, Cap.WRITE], [parent])
    _, _, full_key = await key_for(stack, ALL_CAPABILITIES, [child])
    stack.clock.advance(timedelta(minutes=10))  # the expiring key is now expired
    stack.extra_coordinators.extend([parent, child, ungranted, other_cid])

    clients = {
        "P": stack.admin,
        "A": admin.client,
        "O": outsider.client,
        "V": viewer.client,
        "R": key_read,
        "L": key_lease,
        "W": key_write,
        "X": key_out,
        "K": key_revoked,
        "E": key_expired,
        "G": parent_key,
        "g": parent_key,
        "S": stack.service,
        "-": stack.client(None),
    }
    tokens: dict[str, str | None] = {
        "P": stack.admin_token,
        "A": admin.secret,
        "O": outsider.secret,
        "V": viewer.secret,
        "R": read_secret,
        "L": lease_secret,
        "W": write_secret,
        "X": out_secret,
        "K": revoked_secret,
        "E": expiring.secret,
        "G": parent_secret,
        "g": parent_secret,
        "S": stack.service_key,
        "-": None,
    }
    return World(
        stack=stack,
        child=child,
        child_ungranted=ungranted,
        parent=parent,
        other_cid=other_cid,
        lane_id=lane.lane_id,
        waiting_item=waiting.item_id,
        target_user=target,
        key_read_id=key_read_id,
        full_key=full_key,
        clients=clients,
        tokens=tokens,
    )


def _ts_at(stack: Stack, delta: timedelta) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(stack.clock.now() + delta)
    return out


# ------------------------------------------------------------------------------ running a cell


def _outcome(error: WorkcoordError | None) -> str:
    if error is None:
        return "A"
    reason = error.reason
    if reason == "UNAUTHENTICATED":
        return "U"
    if reason == "PERMISSION_DENIED":
        return "D"
    if reason == "NOT_FOUND":
        # ``n``: authorization passed and the made-up record itself was not found.
        return "n" if "pending action" in error.message else "N"
    if error.code.name == "FAILED_PRECONDITION":
        return "F"
    return f"{reason}: {error.message}"


async def _call(
    client: WorkcoordClient, name: str, request: Message, response_class: Any, streaming: bool
) -> WorkcoordError | None:
    path = f"/workcoord.api.v1.{name}"
    try:
        if streaming:
            stream = client.channel.unary_stream(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response_class.FromString,
            )(request)
            try:
                iterator = stream.__aiter__()
                await asyncio.wait_for(iterator.__anext__(), timeout=10)
            finally:
                stream.cancel()
        else:
            await client.channel.unary_unary(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response_class.FromString,
            )(request)
    except WorkcoordError as err:
        return err
    return None


METHODS = all_methods()


def _tabled(name: str) -> bool:
    """Whether ``name`` has (or must have) a row: served by the coordinator itself."""
    return name.split("/")[0] not in OTHER_PROCESS


def test_the_table_covers_every_method_of_the_contract() -> None:
    names = {name for name, _, _ in METHODS}
    served_here = {n for n in names if _tabled(n)}
    assert served_here == set(EXPECTED), (
        f"missing rows: {sorted(served_here - set(EXPECTED))}; "
        f"stale rows: {sorted(set(EXPECTED) - served_here)}"
    )
    assert set(BUILDERS) == set(EXPECTED)
    assert all(len(row) == len(COLUMNS) for row in EXPECTED.values())


@pytest.mark.parametrize(
    ("name", "request_class", "response_class"),
    [row for row in METHODS if _tabled(row[0])],
    ids=[name for name, _, _ in METHODS if _tabled(name)],
)
async def test_matrix_row(world: World, name: str, request_class: Any, response_class: Any) -> None:
    streaming = name == "FeedService/Watch"
    wrong: list[str] = []
    for column, expected in zip(COLUMNS, EXPECTED[name], strict=True):
        request = await BUILDERS[name](world, column)
        assert isinstance(request, request_class), (name, type(request))
        got = _outcome(await _call(world.clients[column], name, request, response_class, streaming))
        if got != expected:
            wrong.append(
                f"{name} x {COLUMN_NAMES[column]} ({column}): expected {expected}, got {got}"
            )
    assert wrong == []
