"""GLOBAL as parent, parent grants, and the children routes: each needs its own live grant at
the moment of the request; the summary is redacted; a parent never reads or leases child work."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest
from google.protobuf import field_mask_pb2

from tests.integration.tenancy.world import (
    ALL_PERMISSIONS,
    Permission,
    Role,
    create_global,
    grant,
    in_days,
    key_for,
    new_user,
    other_org_coordinator,
    set_parent,
    switch_off,
)
from tests.support.harness import (
    ALL_CAPABILITIES,
    Stack,
    event_type,
    expect_error,
    task,
    to_json,
    violated_fields,
)
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit.errors import (
    CoordinationDisabled,
    IllegalTransition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)

W = work_coordinator_pb2

PLANTED_TITLE = "Quarterly payroll for ACME-PRIVATE-TITLE"
PLANTED_INPUT = "acme-private-input-7f3a"
PLANTED_BRIEF = "acme-private-brief-91c2"


async def _family(stack: Stack) -> str:
    """GLOBAL, made the parent of the stack's coordinator; returns GLOBAL's id."""
    parent = await create_global(stack)
    await set_parent(stack.admin, stack.cid, parent)
    return parent


async def _planted_lane(stack: Stack) -> lane_pb2.Lane:
    item = task("a", title=PLANTED_TITLE, inputs={"secret": PLANTED_INPUT})
    item.brief = PLANTED_BRIEF
    return await stack.create_lane(
        item, task("b", depends_on=["a"]), inputs={"k": PLANTED_INPUT}, title=PLANTED_TITLE
    )


def _summary_request(parent: str, child: str) -> W.GetChildSummaryRequest:
    return W.GetChildSummaryRequest(coordinator_id=parent, child_id=child)


# ----------------------------------------------------------------------------- parents


async def test_only_global_can_be_a_parent(stack: Stack) -> None:
    _, other = await other_org_coordinator(stack)
    for bad in (other, "wc_doesnotexist"):
        err = await expect_error(set_parent(stack.admin, stack.cid, bad), InvalidArgument)
        assert violated_fields(err) == {"work_coordinator.parent_coordinator_id"}
    parent = await create_global(stack)
    await set_parent(stack.admin, stack.cid, parent)
    got = await stack.admin.coordinators.GetWorkCoordinator(
        W.GetWorkCoordinatorRequest(coordinator_id=stack.cid)
    )
    assert got.work_coordinator.parent_coordinator_id == parent


async def test_only_platform_admins_configure_global(stack: Stack) -> None:
    parent = await create_global(stack)
    org_admin = await new_user(stack, role=Role.ORG_ADMIN)
    update = W.UpdateWorkCoordinatorRequest(
        coordinator_id=parent,
        work_coordinator=W.WorkCoordinator(scope=W.WorkCoordinator.GLOBAL, display_name="mine"),
        update_mask=field_mask_pb2.FieldMask(paths=["display_name"]),
    )
    await expect_error(org_admin.client.coordinators.UpdateWorkCoordinator(update), NotFound)
    # A platform admin whose identity is not verified is no platform admin.
    unverified = await new_user(stack, platform_admin=True, verified=False)
    await expect_error(unverified.client.coordinators.UpdateWorkCoordinator(update), NotFound)
    await expect_error(
        unverified.client.coordinators.CreateWorkCoordinator(
            W.CreateWorkCoordinatorRequest(
                work_coordinator=W.WorkCoordinator(scope=W.WorkCoordinator.GLOBAL)
            )
        ),
        PermissionDenied,
    )
    # A work key scoped to GLOBAL reads it but never configures it.
    _, _, key = await key_for(stack, ALL_CAPABILITIES, [parent])
    await key.coordinators.GetWorkCoordinator(W.GetWorkCoordinatorRequest(coordinator_id=parent))
    await expect_error(key.coordinators.UpdateWorkCoordinator(update), PermissionDenied)
    await stack.admin.coordinators.UpdateWorkCoordinator(update)


# ----------------------------------------------------------------------------- grants


async def test_create_grant_rules(stack: Stack) -> None:
    parent = await create_global(stack)
    # No configured parent yet: a grant to GLOBAL is refused.
    err = await expect_error(
        grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 1)),
        InvalidArgument,
    )
    assert violated_fields(err) == {"grant.parent_coordinator_id"}
    await set_parent(stack.admin, stack.cid, parent)
    err = await expect_error(
        grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 90.01)),
        InvalidArgument,
    )
    assert violated_fields(err) == {"grant.expire_time"}
    err = await expect_error(
        grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, -0.01)),
        InvalidArgument,
    )
    assert "grant.expire_time" in violated_fields(err)
    err = await expect_error(
        grant(stack.admin, stack.cid, parent, [], in_days(stack, 1)), InvalidArgument
    )
    assert "grant.permissions" in violated_fields(err)
    missing_expiry = W.CreateGrantRequest(
        coordinator_id=stack.cid,
        grant=W.Grant(parent_coordinator_id=parent, permissions=[Permission.SUMMARY]),
    )
    err = await expect_error(stack.admin.coordinators.CreateGrant(missing_expiry), InvalidArgument)
    assert "grant.expire_time" in violated_fields(err)

    # The child's org admin grants; a viewer, another org's admin and a work key may not.
    admin = await new_user(stack, role=Role.ORG_ADMIN)
    viewer = await new_user(stack, role=Role.ORG_VIEWER)
    other_org, _ = await other_org_coordinator(stack)
    outsider = await new_user(stack, org=other_org, role=Role.ORG_ADMIN)
    expiry = in_days(stack, 90)
    await expect_error(
        grant(viewer.client, stack.cid, parent, [Permission.SUMMARY], expiry), PermissionDenied
    )
    await expect_error(
        grant(outsider.client, stack.cid, parent, [Permission.SUMMARY], expiry), NotFound
    )
    await expect_error(
        grant(stack.worker, stack.cid, parent, [Permission.SUMMARY], expiry), PermissionDenied
    )
    made = await grant(admin.client, stack.cid, parent, [Permission.SUMMARY], expiry)
    assert made.live and made.coordinator_id == stack.cid
    assert made.created_by == f"user:{admin.user_id}"
    listed = await viewer.client.coordinators.ListGrants(
        W.ListGrantsRequest(coordinator_id=stack.cid)
    )
    assert [g.grant_id for g in listed.grants] == [made.grant_id]
    await expect_error(
        outsider.client.coordinators.ListGrants(W.ListGrantsRequest(coordinator_id=stack.cid)),
        NotFound,
    )
    types = [event_type(e) for e in await stack.events()]
    assert "GRANT_CREATED" in types


async def test_each_children_route_needs_its_own_live_grant(stack: Stack) -> None:
    parent = await _family(stack)
    lane = await _planted_lane(stack)
    a = next(i for i in lane.items if i.key == "a")
    calls: dict[int, Callable[[], Awaitable[object]]] = {
        Permission.SUMMARY: lambda: stack.admin.coordinators.GetChildSummary(
            _summary_request(parent, stack.cid)
        ),
        Permission.ESCALATIONS: lambda: stack.admin.coordinators.ListChildEscalations(
            W.ListChildEscalationsRequest(coordinator_id=parent, child_id=stack.cid)
        ),
        Permission.ASSIGN: lambda: stack.admin.coordinators.AssignChildWork(
            W.AssignChildWorkRequest(
                coordinator_id=parent,
                child_id=stack.cid,
                lane_id=lane.lane_id,
                item_id=a.item_id,
                worker_id="gpu-box-1",
            )
        ),
        Permission.STEER: lambda: stack.admin.coordinators.SteerChildWork(
            W.SteerChildWorkRequest(
                coordinator_id=parent, child_id=stack.cid, lane_id=lane.lane_id, priority=9
            )
        ),
        Permission.ESCALATE: lambda: stack.admin.coordinators.EscalateChildWork(
            W.EscalateChildWorkRequest(
                coordinator_id=parent,
                child_id=stack.cid,
                lane_id=lane.lane_id,
                item_id=a.item_id,
                reason="stuck for a day",
            )
        ),
    }
    # Without any grant, every route is refused.
    for call in calls.values():
        await expect_error(call(), PermissionDenied)
    # Each grant opens exactly its own route.
    for permission in ALL_PERMISSIONS:
        made = await grant(stack.admin, stack.cid, parent, [permission], in_days(stack, 1))
        for other, call in calls.items():
            if other == permission:
                await call()
            else:
                await expect_error(call(), PermissionDenied)
        await stack.admin.coordinators.RevokeGrant(
            W.RevokeGrantRequest(coordinator_id=stack.cid, grant_id=made.grant_id)
        )
        await expect_error(calls[permission](), PermissionDenied)


async def test_revocation_and_expiry_take_effect_on_the_next_request(stack: Stack) -> None:
    parent = await _family(stack)
    await _planted_lane(stack)
    made = await grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 1))
    await stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid))
    stack.clock.advance(timedelta(days=1) - timedelta(seconds=1))
    await stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid))
    stack.clock.advance(timedelta(seconds=1))
    await expect_error(
        stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid)),
        PermissionDenied,
    )
    listed = await stack.admin.coordinators.ListGrants(
        W.ListGrantsRequest(coordinator_id=stack.cid)
    )
    assert [(g.grant_id, g.live) for g in listed.grants] == [(made.grant_id, False)]

    second = await grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 2))
    await stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid))
    revoked = await stack.admin.coordinators.RevokeGrant(
        W.RevokeGrantRequest(coordinator_id=stack.cid, grant_id=second.grant_id)
    )
    assert not revoked.grant.live and revoked.grant.HasField("revoke_time")
    await expect_error(
        stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid)),
        PermissionDenied,
    )
    types = [event_type(e) for e in await stack.events()]
    assert types.count("GRANT_CREATED") == 2 and types.count("GRANT_REVOKED") == 1
    # Unsetting the parent suspends even a live grant: the relation and the grant both count.
    await grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 3))
    await set_parent(stack.admin, stack.cid, "")
    await expect_error(
        stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid)),
        PermissionDenied,
    )


async def test_the_summary_is_redacted(stack: Stack) -> None:
    parent = await _family(stack)
    lane = await _planted_lane(stack)
    leases = await stack.lease("machine")
    await stack.start(leases[0])
    await grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 1))
    summary = (
        await stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid))
    ).summary
    assert [s.lane_id for s in summary.lanes] == [lane.lane_id]
    assert {i.item_id for i in summary.items} == {i.item_id for i in lane.items}
    assert summary.revision > 0
    text = to_json(summary)
    for private in (
        PLANTED_TITLE,
        PLANTED_INPUT,
        PLANTED_BRIEF,
        leases[0].lease_id,
        leases[0].lease_token,
        "agent-7",
        "build-3",
        "/srv/lanes/parser",
        "fleet-bot",
    ):
        assert private not in text
    # Only the fields of the contract's summary messages, by construction and on the wire.
    allowed = {
        "laneId",
        "itemId",
        "kind",
        "state",
        "priority",
        "nextAction",
        "createTime",
        "updateTime",
    }
    document = json.loads(text)
    for entry in [*document["lanes"], *document["items"]]:
        assert set(entry) <= allowed, entry


async def test_parent_actions_change_the_child_and_are_recorded(stack: Stack) -> None:
    parent = await _family(stack)
    lane = await _planted_lane(stack)
    a = next(i for i in lane.items if i.key == "a")
    await grant(
        stack.admin,
        stack.cid,
        parent,
        [Permission.ASSIGN, Permission.STEER, Permission.ESCALATE, Permission.ESCALATIONS],
        in_days(stack, 30),
    )
    assigned = await stack.admin.coordinators.AssignChildWork(
        W.AssignChildWorkRequest(
            coordinator_id=parent,
            child_id=stack.cid,
            lane_id=lane.lane_id,
            item_id=a.item_id,
            worker_id="gpu-box-1",
        )
    )
    assert assigned.item.item_id == a.item_id
    item = await stack.get_item(a)
    assert item.placement.worker_id == "gpu-box-1"
    # Only that worker leases it now.
    assert await stack.lease("machine", worker_id="machine-9") == []

    steered = await stack.admin.coordinators.SteerChildWork(
        W.SteerChildWorkRequest(
            coordinator_id=parent, child_id=stack.cid, lane_id=lane.lane_id, priority=77
        )
    )
    assert steered.lane.priority == 77
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    assert got.lane.priority == 77
    assert {i.priority for i in got.lane.items} == {77}

    raised = await stack.admin.coordinators.EscalateChildWork(
        W.EscalateChildWorkRequest(
            coordinator_id=parent,
            child_id=stack.cid,
            lane_id=lane.lane_id,
            item_id=a.item_id,
            reason="waiting on a GPU for days",
        )
    )
    assert raised.escalation.open and list(raised.escalation.escalated_to) == []
    listed = await stack.admin.coordinators.ListChildEscalations(
        W.ListChildEscalationsRequest(coordinator_id=parent, child_id=stack.cid)
    )
    assert [e.escalation_id for e in listed.escalations] == [raised.escalation.escalation_id]
    assert all(list(e.escalated_to) == [] for e in listed.escalations)
    view = await stack.admin.coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid))
    assert [e.reason for e in view.view.escalations] == ["waiting on a GPU for days"]

    events = await stack.events()
    actions = [e for e in events if event_type(e) == "PARENT_ACTION"]
    assert [e.data["action"] for e in actions] == ["ASSIGN", "STEER", "ESCALATE"]
    assert all(e.data["parentCoordinatorId"] == parent for e in actions)
    assert "ESCALATED" in [event_type(e) for e in events]

    # Work already leased cannot be reassigned by a parent.
    b_lane = await stack.create_lane(task("z"))
    leases = await stack.lease("machine", worker_id="machine-2")
    assert [lease.item.lane_id for lease in leases] == [b_lane.lane_id]
    await expect_error(
        stack.admin.coordinators.AssignChildWork(
            W.AssignChildWorkRequest(
                coordinator_id=parent,
                child_id=stack.cid,
                lane_id=b_lane.lane_id,
                item_id=leases[0].item.item_id,
                worker_id="gpu-box-1",
            )
        ),
        IllegalTransition,
    )


async def test_a_parent_never_reads_child_bodies_nor_leases_child_work(stack: Stack) -> None:
    parent = await _family(stack)
    lane = await _planted_lane(stack)
    await grant(stack.admin, stack.cid, parent, list(ALL_PERMISSIONS), in_days(stack, 30))
    # A credential of the parent: a work key with every capability on GLOBAL.
    _, _, parent_key = await key_for(stack, ALL_CAPABILITIES, [parent])
    await parent_key.coordinators.GetChildSummary(_summary_request(parent, stack.cid))
    child_calls: list[Awaitable[object]] = [
        parent_key.lanes.GetLane(
            lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
        ),
        parent_key.lanes.ListLanes(lane_pb2.ListLanesRequest(coordinator_id=stack.cid)),
        parent_key.coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid)),
        parent_key.coordinators.ListEvents(W.ListEventsRequest(coordinator_id=stack.cid)),
        parent_key.workers.Lease(
            worker_pb2.LeaseRequest(
                coordinator_id=stack.cid,
                worker_id="w1",
                worker_class="machine",
                max_items=1,
                lease_seconds=30,
            )
        ),
    ]
    for call in child_calls:
        await expect_error(call, NotFound)
    # And the child's own people cannot use the parent's routes.
    child_admin = await new_user(stack, role=Role.ORG_ADMIN)
    await expect_error(
        child_admin.client.coordinators.GetChildSummary(_summary_request(parent, stack.cid)),
        NotFound,
    )


async def test_recovery_escalation_also_notifies_a_parent_with_a_live_escalate_grant(
    stack: Stack,
) -> None:
    parent = await _family(stack)
    await stack.create_lane(task("lonely"))
    stack.clock.advance(timedelta(hours=2))
    await stack.maintain()
    view = await stack.admin.coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid))
    assert len(view.view.escalations) == 1
    assert parent not in view.view.escalations[0].escalated_to

    await grant(stack.admin, stack.cid, parent, [Permission.ESCALATE], in_days(stack, 1))
    await stack.create_lane(task("lonelier"))
    stack.clock.advance(timedelta(hours=2))
    await stack.maintain()
    view = await stack.admin.coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid))
    assert len(view.view.escalations) == 2
    newest = max(view.view.escalations, key=lambda e: e.create_time.ToDatetime())
    assert parent in newest.escalated_to


@pytest.mark.parametrize("switch", ["platform", "coordinator"])
async def test_children_routes_stop_when_the_child_is_switched_off(
    stack: Stack, switch: str
) -> None:
    parent = await _family(stack)
    await grant(stack.admin, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 1))
    _, _, parent_key = await key_for(stack, ALL_CAPABILITIES, [parent])
    await switch_off(stack, switch)
    await expect_error(
        parent_key.coordinators.GetChildSummary(_summary_request(parent, stack.cid)),
        CoordinationDisabled,
        "COORDINATION_DISABLED",
    )
    # A person still reads the summary, and grants stay administrable while it is off.
    await stack.admin.coordinators.GetChildSummary(_summary_request(parent, stack.cid))
    listed = await stack.admin.coordinators.ListGrants(
        W.ListGrantsRequest(coordinator_id=stack.cid)
    )
    assert len(listed.grants) == 1
