"""Request ids are scoped to the caller's tenant, and a reused id with another body is refused.

Before, a work coordinator's request id was looked up across the whole installation: org B's
admin reusing org A's id got A's work coordinator back. Runs on both backends.
"""

from __future__ import annotations

from tests.integration.tenancy.world import new_org, new_user
from tests.support.harness import Stack, expect_error, task
from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import AlreadyExists

WC = work_coordinator_pb2


async def _create(
    client: WorkcoordClient, org: str, request_id: str, name: str
) -> WC.WorkCoordinator:
    response = await client.coordinators.CreateWorkCoordinator(
        WC.CreateWorkCoordinatorRequest(
            work_coordinator=WC.WorkCoordinator(
                scope=WC.WorkCoordinator.ORG,
                org_slug=org,
                display_name=name,
                digest_owner=f"ops@{org}.test",
            ),
            request_id=request_id,
        )
    )
    return response.work_coordinator


async def test_another_orgs_request_id_never_answers_with_its_coordinator(stack: Stack) -> None:
    admin_a = await new_user(stack, org=stack.org, role=admin_pb2.OrgMember.ORG_ADMIN)
    org_b = await new_org(stack)
    admin_b = await new_user(stack, org=org_b, role=admin_pb2.OrgMember.ORG_ADMIN)

    mine = await _create(admin_a.client, stack.org, "shared-id", "A's work")
    theirs = await _create(admin_b.client, org_b, "shared-id", "A's work")
    assert theirs.coordinator_id != mine.coordinator_id
    assert theirs.org_slug == org_b

    # A true retry in each org gets that org's own work coordinator back.
    again = await _create(admin_a.client, stack.org, "shared-id", "A's work")
    assert again.coordinator_id == mine.coordinator_id
    again_b = await _create(admin_b.client, org_b, "shared-id", "A's work")
    assert again_b.coordinator_id == theirs.coordinator_id


async def test_a_reused_request_id_with_another_body_is_refused(stack: Stack) -> None:
    first = await _create(stack.admin, stack.org, "reused", "first")
    error = await expect_error(_create(stack.admin, stack.org, "reused", "second"), AlreadyExists)
    assert [v.field for v in error.field_violations] == ["request_id"]
    listed = await stack.admin.coordinators.GetWorkCoordinator(
        WC.GetWorkCoordinatorRequest(coordinator_id=first.coordinator_id)
    )
    assert listed.work_coordinator.display_name == "first"


async def test_lane_and_item_request_ids_replay_or_refuse(stack: Stack) -> None:
    def create_lane(title: str) -> lane_pb2.CreateLaneRequest:
        return lane_pb2.CreateLaneRequest(
            coordinator_id=stack.cid,
            lane=lane_pb2.Lane(title=title, template=lane_pb2.Lane.CUSTOM, items=[task("a")]),
            request_id="lane-1",
        )

    lane = (await stack.worker.lanes.CreateLane(create_lane("one"))).lane
    replay = (await stack.worker.lanes.CreateLane(create_lane("one"))).lane
    assert replay.lane_id == lane.lane_id
    error = await expect_error(stack.worker.lanes.CreateLane(create_lane("two")), AlreadyExists)
    assert [v.field for v in error.field_violations] == ["request_id"]

    def create_item(key: str) -> lane_pb2.CreateItemRequest:
        return lane_pb2.CreateItemRequest(
            coordinator_id=stack.cid, lane_id=lane.lane_id, item=task(key), request_id="item-1"
        )

    item = (await stack.worker.lanes.CreateItem(create_item("b"))).item
    assert (await stack.worker.lanes.CreateItem(create_item("b"))).item.item_id == item.item_id
    error = await expect_error(stack.worker.lanes.CreateItem(create_item("c")), AlreadyExists)
    assert [v.field for v in error.field_violations] == ["request_id"]
