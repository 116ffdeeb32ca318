"""Narrowing a work coordinator's allowed action classes stops old work the way deadlines do:
the live attempts whose item declares a removed class get ``stop POLICY_CHANGED`` on their
next heartbeat, which no longer extends their lease, and may not complete or checkpoint
(LEASE_LOST, cause ``policy``) — only release or fail; their queued items (and a released one)
wait behind the ``policy`` gate, shown by ``why``, until a human allows the class again. A
POLICY_NARROWED event names what narrowed and which leases were told to stop. Widening stops
nothing. Items of classes still allowed are untouched. Both backends.
"""

from __future__ import annotations

from google.protobuf import field_mask_pb2, json_format

from tests.support.harness import Stack, expect_error, task
from workcoord.api.v1 import lane_pb2, policy_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit.errors import LeaseLost

WC = work_coordinator_pb2
ALL = ["repo_inspect", "repo_edit", "local_checks", "state_updates"]


def _declaring(key: str, *classes: str) -> lane_pb2.Item:
    item = task(key, priority=9 if key == "leased" else 0)
    item.action_classes.extend(classes)
    return item


async def _allow(stack: Stack, classes: list[str]) -> None:
    await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(
                scope=WC.WorkCoordinator.ORG,
                action_policy=policy_pb2.ActionPolicy(allowed_action_classes=classes),
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["action_policy"]),
        )
    )


async def _heartbeat(stack: Stack, lease: worker_pb2.Lease) -> worker_pb2.HeartbeatResponse:
    return await stack.worker.workers.Heartbeat(
        worker_pb2.HeartbeatRequest(
            coordinator_id=stack.cid, lease_id=lease.lease_id, lease_token=lease.lease_token
        )
    )


async def test_narrowing_stops_a_live_attempt_and_gates_queued_items(stack: Stack) -> None:
    lane = await stack.create_lane(
        _declaring("leased", "repo_edit"),
        _declaring("queued", "repo_edit", "repo_inspect"),
        _declaring("kept", "repo_inspect"),
    )
    lease = await stack.lease_and_start(lease_seconds=30)
    assert lease.item.key == "leased"
    before = (await _heartbeat(stack, lease)).lease_expire_time

    await _allow(stack, ["repo_inspect", "local_checks", "state_updates"])

    [event] = [e for e in await stack.events() if e.type == e.POLICY_NARROWED]
    data = json_format.MessageToDict(event.data)
    assert data["removed"] == ["repo_edit"]
    assert data["stopping"] == [lease.lease_id]
    items = {i.key: i for i in lane.items}
    assert data["held"] == [items["queued"].item_id]

    stack.clock.advance(5)
    answer = await _heartbeat(stack, lease)
    assert answer.stop.reason == worker_pb2.Stop.POLICY_CHANGED
    assert "repo_edit" in answer.stop.message
    assert answer.lease_expire_time == before  # told to stop: not extended
    error = await expect_error(stack.complete(lease), LeaseLost)
    assert error.cause == "policy"
    assert (await stack.get_item(items["leased"])).state == lane_pb2.Item.RUNNING

    # The queued item waits behind the policy gate, and so does the released one.
    why = await stack.explain(items["queued"].item_id)
    assert [g.gate for g in why.gates] == [WC.Gate.POLICY]
    assert "repo_edit" in why.gates[0].detail
    await stack.release(lease)
    released = await stack.get_item(items["leased"])
    assert released.state == lane_pb2.Item.QUEUED
    assert released.attempt_count == 0  # a policy stop burns no retry when released
    more = await stack.lease(max_items=5)
    assert [m.item.key for m in more] == ["kept"]
    await stack.start(more[0])
    await stack.complete(more[0])  # frees the class's slot (machine: capacity 2)

    # A human allows the class again: the gate opens.
    await _allow(stack, ALL)
    again = await stack.lease(max_items=5)
    assert sorted(m.item.key for m in again) == ["leased", "queued"]


async def test_widening_does_nothing_to_live_work(stack: Stack) -> None:
    await _allow(stack, ["repo_inspect"])
    await stack.create_lane(_declaring("leased", "repo_inspect"))
    lease = await stack.lease_and_start(lease_seconds=30)
    seen = len(await stack.events())
    await _allow(stack, ALL)
    widened = (await stack.events())[seen:]
    assert [e.type for e in widened] == [widened[0].COORDINATOR_UPDATED]
    stack.clock.advance(5)
    answer = await _heartbeat(stack, lease)
    assert not answer.HasField("stop")
    await stack.complete(lease)
