"""Narrowing a work coordinator's allowed action classes stops, in the same transaction, the
queued and leased items that declare a removed class (STOPPED, with an event and a digest
line) and ends their leases: the worker's next write answers LEASE_LOST, cause ``policy``.
Items of classes still allowed are untouched. Both backends.

Before, narrowing changed only the configuration: queued items of a removed class were still
leased and running leases carried on.
"""

from __future__ import annotations

from google.protobuf import field_mask_pb2

from tests.support.harness import Stack, expect_error, task
from workcoord.api.v1 import lane_pb2, policy_pb2, work_coordinator_pb2
from workcoord.kit.errors import LeaseLost

WC = work_coordinator_pb2


def _declaring(key: str, *classes: str) -> lane_pb2.Item:
    item = task(key, priority=9 if key == "leased" else 0)
    item.action_classes.extend(classes)
    return item


async def test_narrowing_stops_queued_items_and_fences_live_leases(stack: Stack) -> None:
    lane = await stack.create_lane(
        _declaring("leased", "repo_edit"),
        _declaring("queued", "repo_edit", "repo_inspect"),
        _declaring("kept", "repo_inspect"),
    )
    [lease] = await stack.lease(max_items=1)
    assert lease.item.key == "leased"

    await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(
                scope=WC.WorkCoordinator.ORG,
                action_policy=policy_pb2.ActionPolicy(
                    allowed_action_classes=["repo_inspect", "local_checks", "state_updates"]
                ),
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["action_policy"]),
        )
    )

    items = {i.key: i for i in lane.items}
    for key in ("leased", "queued"):
        item = await stack.get_item(items[key])
        assert item.state == lane_pb2.Item.STOPPED, key
        assert item.stop_reason == "policy: action class no longer allowed: repo_edit"
    assert (await stack.get_item(items["kept"])).state == lane_pb2.Item.QUEUED

    error = await expect_error(stack.heartbeat(lease), LeaseLost)
    assert error.cause == "policy"

    # Nothing of a stopped item is handed out again.
    more = await stack.lease(max_items=5)
    assert [m.item.key for m in more] == ["kept"]
