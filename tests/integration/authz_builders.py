"""The authorization matrix's request builders: for each ``Service/Method`` of
:data:`tests.integration.authz_table.EXPECTED`, how to make a request for one credential
column in the :class:`~tests.integration.authz_world.World` (a fresh record where the call
consumes one: a token to revoke, a lease to complete).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from google.protobuf import field_mask_pb2, timestamp_pb2
from google.protobuf.message import Message

from tests.integration.authz_world import World
from tests.integration.tenancy.world import grant, key_for
from tests.support.harness import identity, task
from workcoord.api.v1 import (
    admin_pb2,
    feed_pb2,
    lane_pb2,
    maintenance_pb2,
    notification_pb2,
    session_pb2,
    tracker_pb2,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.client import WorkcoordClient

A = admin_pb2
W = work_coordinator_pb2
L = lane_pb2
K = worker_pb2
M = maintenance_pb2
S = session_pb2
T = tracker_pb2
NT = notification_pb2
Cap = A.WorkKey.Capability
Role = A.OrgMember.Role
Perm = W.Grant.Permission

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


async def _batch_call(world: World, column: str, batch: Any, cls: Any) -> Message:
    """A batch of one entry: who may call it is decided for the call, before any entry."""
    entry = await _worker_call(world, column, cls)
    built: Message = batch(coordinator_id=world.child, requests=[entry])
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
            work_coordinator=W.WorkCoordinator(
                scope=W.WorkCoordinator.ORG, org_slug=w.stack.org, digest_owner="ops@acme.test"
            )
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
    "WorkCoordinatorService/GetBudget": _static(
        lambda w, c: W.GetBudgetRequest(coordinator_id=w.child)
    ),
    "WorkCoordinatorService/GetUsage": _static(
        lambda w, c: W.GetUsageRequest(coordinator_id=w.child, group_by=W.GetUsageRequest.LANE)
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
    "WorkerService/BatchHeartbeat": lambda w, c: _batch_call(
        w, c, K.BatchHeartbeatRequest, K.HeartbeatRequest
    ),
    "WorkerService/BatchComplete": lambda w, c: _batch_call(
        w, c, K.BatchCompleteRequest, K.CompleteRequest
    ),
    "WorkerService/BatchFail": lambda w, c: _batch_call(w, c, K.BatchFailRequest, K.FailRequest),
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
    "MaintenanceService/GetMailDue": _static(
        lambda w, c: M.GetMailDueRequest(coordinator_id=w.child)
    ),
    "MaintenanceService/MarkMailSent": _static(
        lambda w, c: M.MarkMailSentRequest(coordinator_id=w.child)
    ),
    "MaintenanceService/DeliverWebhooks": _static(
        lambda w, c: M.DeliverWebhooksRequest(wait_seconds=0)
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
    # TrackerService
    "TrackerService/CreateTrackerConnection": _static(
        lambda w, c: T.CreateTrackerConnectionRequest(
            coordinator_id=w.cid_for(c),
            tracker_connection=T.TrackerConnection(
                tracker="gitlab",
                credential="glpat-matrix",
                # A project of its own each call: one project is served by one connection.
                projects=[f"matrix/p{secrets.token_hex(4)}"],
            ),
        )
    ),
    "TrackerService/ListTrackerConnections": _static(
        lambda w, c: T.ListTrackerConnectionsRequest(coordinator_id=w.cid_for(c))
    ),
    "TrackerService/UpdateTrackerConnection": _static(
        lambda w, c: T.UpdateTrackerConnectionRequest(
            coordinator_id=w.cid_for(c),
            tracker_id="trk_missing",
            tracker_connection=T.TrackerConnection(credential="glpat-rotated"),
        )
    ),
    # NotificationService
    "NotificationService/CreateWebhook": _static(
        lambda w, c: NT.CreateWebhookRequest(
            coordinator_id=w.cid_for(c),
            webhook=NT.Webhook(url="https://hooks.example.com/m", event_types=["HUMAN_NEEDED"]),
        )
    ),
    "NotificationService/ListWebhooks": _static(
        lambda w, c: NT.ListWebhooksRequest(coordinator_id=w.cid_for(c))
    ),
    "NotificationService/UpdateWebhook": _static(
        lambda w, c: NT.UpdateWebhookRequest(
            coordinator_id=w.cid_for(c), webhook_id="wh_missing", webhook=NT.Webhook(enabled=True)
        )
    ),
    "NotificationService/DeleteWebhook": _static(
        lambda w, c: NT.DeleteWebhookRequest(coordinator_id=w.cid_for(c), webhook_id="wh_missing")
    ),
    "NotificationService/ListDeliveries": _static(
        lambda w, c: NT.ListDeliveriesRequest(coordinator_id=w.cid_for(c), webhook_id="wh_missing")
    ),
    "NotificationService/Redeliver": _static(
        lambda w, c: NT.RedeliverRequest(
            coordinator_id=w.cid_for(c), webhook_id="wh_missing", delivery_id="dl_missing"
        )
    ),
    "TrackerService/DeleteTrackerConnection": _static(
        lambda w, c: T.DeleteTrackerConnectionRequest(
            coordinator_id=w.cid_for(c), tracker_id="trk_missing"
        )
    ),
}
