"""The switch (platform ``workCoordinatorEnabled`` and per work coordinator ``enabled``): work
calls answer COORDINATION_DISABLED and recovery passes stop, administration stays available,
and nothing is lost when it is switched back on."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import timedelta

import pytest

from tests.integration.tenancy.world import (
    Permission,
    Role,
    create_global,
    grant,
    in_days,
    new_user,
    set_parent,
    switch_off,
)
from tests.support.harness import Stack, expect_error, task
from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2
from workcoord.kit.errors import CoordinationDisabled

A = admin_pb2
W = work_coordinator_pb2
State = lane_pb2.Item.State


@pytest.mark.parametrize("switch", ["platform", "coordinator"])
async def test_off_stops_work_keeps_administration_and_loses_nothing(
    stack: Stack, switch: str
) -> None:
    parent = await create_global(stack)
    await set_parent(stack.admin, stack.cid, parent)
    lane = await stack.create_lane(task("a"), task("b"), task("c", depends_on=["a"]))
    (held,) = await stack.lease()
    await stack.start(held)
    admin = await new_user(stack, role=Role.ORG_ADMIN)
    other = await stack.new_coordinator()

    await switch_off(stack, switch)
    work_calls: list[Awaitable[object]] = [
        stack.create_lane(task("x")),
        stack.lease(),
        stack.heartbeat(held),
        stack.worker.coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid)),
        stack.worker.lanes.GetLane(
            lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
        ),
    ]
    for call in work_calls:
        await expect_error(call, CoordinationDisabled, "COORDINATION_DISABLED")
    # Another coordinator is stopped only by the platform switch.
    if switch == "coordinator":
        await stack.create_lane(task("elsewhere"), coordinator_id=other, client=stack.admin)
    else:
        await expect_error(
            stack.create_lane(task("elsewhere"), coordinator_id=other, client=stack.admin),
            CoordinationDisabled,
        )
    # Administration stays available.
    await stack.admin.admin.GetSettings(A.GetSettingsRequest())
    await admin.client.coordinators.GetWorkCoordinator(
        W.GetWorkCoordinatorRequest(coordinator_id=stack.cid)
    )
    await admin.client.admin.ListOrgMembers(A.ListOrgMembersRequest(org_slug=stack.org))
    await admin.client.admin.ListWorkKeys(A.ListWorkKeysRequest(org_slug=stack.org))
    await admin.client.admin.CreateWorkKey(
        A.CreateWorkKeyRequest(
            work_key=A.WorkKey(
                display_name="k", coordinator_ids=[stack.cid], capabilities=[A.WorkKey.READ]
            )
        )
    )
    await grant(admin.client, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 1))
    await admin.client.coordinators.ListGrants(W.ListGrantsRequest(coordinator_id=stack.cid))
    # Recovery passes stop: the held lease expires while off and is not swept.
    stack.clock.advance(timedelta(minutes=5))
    report = await stack.maintain()
    assert report.report.skipped_disabled
    assert report.report.expired_attempts == 0

    await switch_off(stack, switch, on=True)
    report = await stack.maintain()
    assert report.report.expired_attempts == 1 and report.report.requeued == 1
    # Everything queued before is still there and leasable; the expired item comes back.
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    states = {i.key: i.state for i in got.lane.items}
    assert states == {"a": State.QUEUED, "b": State.QUEUED, "c": State.WAITING}
    stack.clock.advance(timedelta(minutes=10))
    leased = await stack.lease(max_items=10)
    assert {lease.item.key for lease in leased} == {"a", "b"}
