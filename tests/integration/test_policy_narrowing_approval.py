"""Narrowing the review policy's approval stops old work: when a human turns the work
coordinator's ``ship_requires_approval`` on, every unfinished SHIP item made without an approval
in a lane that inherits the setting now requires one. A live SHIP attempt gets ``stop
POLICY_CHANGED`` on its next heartbeat (its lease no longer extended) and may not complete
(LEASE_LOST, cause ``policy``); when it is released or fails, its item awaits a human's approval
instead of being queued again. A queued SHIP item awaits approval at once. A lane whose own
policy says no approval (a human's weakening) is untouched. A POLICY_NARROWED event names the
field, the leases told to stop and the items now held. Turning it off again approves nothing.
Both backends, through gRPC.
"""

from __future__ import annotations

from google.protobuf import field_mask_pb2, json_format

from tests.support.harness import Stack, expect_error
from workcoord.api.v1 import lane_pb2, policy_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit.errors import LeaseLost

WC = work_coordinator_pb2
State = lane_pb2.Item.State


async def _ship_approval(stack: Stack, required: bool) -> None:
    await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(
                scope=WC.WorkCoordinator.ORG,
                review_policy=policy_pb2.ReviewPolicy(ship_requires_approval=required),
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["review_policy"]),
        )
    )


async def _lane_at_ship(
    stack: Stack, title: str, *, own_approval: bool | None = None
) -> lane_pb2.Item:
    """A STANDARD lane built and reviewed (PASS); its SHIP item. ``own_approval``: the
    lane's own ``ship_requires_approval`` (set by a human), else it inherits."""
    lane = lane_pb2.Lane(title=title, template=lane_pb2.Lane.STANDARD)
    if own_approval is not None:
        lane.review_policy.ship_requires_approval = own_approval
    client = stack.worker if own_approval is None else stack.admin
    created = (
        await client.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=lane)
        )
    ).lane
    build = await stack.lease_and_start("codex")
    await stack.complete(build)
    review = await stack.lease_and_start("claude")
    await stack.worker.workers.Complete(
        worker_pb2.CompleteRequest(
            coordinator_id=stack.cid,
            lease_id=review.lease_id,
            lease_token=review.lease_token,
            evidence=lane_pb2.Evidence(summary="good", verdict=lane_pb2.Evidence.PASS),
        )
    )
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=created.lane_id)
    )
    (ship,) = [i for i in got.lane.items if i.kind == lane_pb2.Item.SHIP]
    assert ship.state == State.QUEUED and not ship.requires_approval
    return ship


async def _item(stack: Stack, item: lane_pb2.Item) -> lane_pb2.Item:
    return await stack.get_item(item)


async def _approve(stack: Stack, item: lane_pb2.Item) -> lane_pb2.Item:
    response = await stack.admin.lanes.ApproveItem(
        lane_pb2.ApproveItemRequest(
            coordinator_id=stack.cid, lane_id=item.lane_id, item_id=item.item_id
        )
    )
    return response.item


async def _heartbeat(stack: Stack, lease: worker_pb2.Lease) -> worker_pb2.HeartbeatResponse:
    return await stack.worker.workers.Heartbeat(
        worker_pb2.HeartbeatRequest(
            coordinator_id=stack.cid, lease_id=lease.lease_id, lease_token=lease.lease_token
        )
    )


def _ship_evidence(stack: Stack) -> lane_pb2.Evidence:
    evidence = lane_pb2.Evidence(
        summary="shipped",
        receipt=lane_pb2.Receipt(environment="prod", version="1.0", url="https://x.test/r"),
    )
    evidence.receipt.time.FromDatetime(stack.clock.now())
    return evidence


async def test_turning_ship_approval_on_stops_a_live_ship_and_holds_queued_ones(
    stack: Stack,
) -> None:
    await _ship_approval(stack, False)
    live_ship = await _lane_at_ship(stack, "Live ship")
    lease = await stack.lease_and_start("machine")
    assert lease.item.item_id == live_ship.item_id
    queued_ship = await _lane_at_ship(stack, "Queued ship")
    own_ship = await _lane_at_ship(stack, "Own policy", own_approval=False)
    before = (await _heartbeat(stack, lease)).lease_expire_time

    await _ship_approval(stack, True)

    [event] = [e for e in await stack.events() if e.type == e.POLICY_NARROWED]
    data = json_format.MessageToDict(event.data)
    assert data["fields"] == ["review_policy.ship_requires_approval"]
    assert data["stopping"] == [lease.lease_id]
    assert data["held"] == [queued_ship.item_id]
    queued = await _item(stack, queued_ship)
    assert queued.state == State.AWAITING_APPROVAL and queued.requires_approval
    own = await _item(stack, own_ship)  # the lane's own "no approval" is a human's, and fixed
    assert own.state == State.QUEUED and not own.requires_approval

    stack.clock.advance(5)
    answer = await _heartbeat(stack, lease)
    assert answer.stop.reason == worker_pb2.Stop.POLICY_CHANGED
    assert "approval" in answer.stop.message
    assert answer.lease_expire_time == before  # told to stop: not extended
    error = await expect_error(
        stack.worker.workers.Complete(
            worker_pb2.CompleteRequest(
                coordinator_id=stack.cid,
                lease_id=lease.lease_id,
                lease_token=lease.lease_token,
                evidence=_ship_evidence(stack),
            )
        ),
        LeaseLost,
    )
    assert error.cause == "policy"
    assert (await _item(stack, live_ship)).state == State.RUNNING

    # Released, the item waits for a human instead of being leased again.
    await stack.release(lease)
    released = await _item(stack, live_ship)
    assert released.state == State.AWAITING_APPROVAL and released.requires_approval
    [other] = await stack.lease("machine", max_items=10)
    assert (
        other.item.item_id == own_ship.item_id
    )  # only the lane with its own policy ships unapproved
    await stack.release(other)

    # A human approves: it is leased, heartbeats without a stop and ships.
    assert (await _approve(stack, released)).state == State.QUEUED
    again = await stack.lease_and_start("machine", worker_id="machine-2")
    if again.item.item_id != live_ship.item_id:  # the other lane's ship may come first
        await stack.release(again)
        again = await stack.lease_and_start("machine", worker_id="machine-2")
    assert again.item.item_id == live_ship.item_id
    assert not (await _heartbeat(stack, again)).HasField("stop")
    await stack.worker.workers.Complete(
        worker_pb2.CompleteRequest(
            coordinator_id=stack.cid,
            lease_id=again.lease_id,
            lease_token=again.lease_token,
            evidence=_ship_evidence(stack),
        )
    )
    lane = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=released.lane_id)
    )
    assert lane.lane.state == lane_pb2.Lane.LIVE


async def test_a_failed_unapproved_ship_awaits_approval_and_widening_approves_nothing(
    stack: Stack,
) -> None:
    await _ship_approval(stack, False)
    ship = await _lane_at_ship(stack, "Ship")
    lease = await stack.lease_and_start("machine")
    await _ship_approval(stack, True)
    await stack.fail(lease)  # retryable: it would have been retried with backoff
    failed = await _item(stack, ship)
    assert failed.state == State.AWAITING_APPROVAL

    await _ship_approval(stack, False)  # widening: nothing is approved by configuration
    assert (await _item(stack, ship)).state == State.AWAITING_APPROVAL
    narrowed = [e for e in await stack.events() if e.type == e.POLICY_NARROWED]
    assert len(narrowed) == 1
    assert await stack.lease("machine") == []


async def test_turning_it_on_when_it_is_already_on_stops_nothing(stack: Stack) -> None:
    await _ship_approval(stack, False)
    ship = await _lane_at_ship(stack, "Ship")
    await _ship_approval(stack, False)  # no change
    assert not [e for e in await stack.events() if e.type == e.POLICY_NARROWED]
    assert (await _item(stack, ship)).state == State.QUEUED


async def test_a_waiting_ship_asks_for_approval_when_it_becomes_ready(stack: Stack) -> None:
    # Review passes on to INTEGRATE, then SHIP: the SHIP waits behind the integration.
    await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(
                scope=WC.WorkCoordinator.ORG,
                review_policy=policy_pb2.ReviewPolicy(
                    ship_requires_approval=False,
                    on_pass=policy_pb2.ReviewPolicy.INTEGRATE_THEN_SHIP,
                ),
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["review_policy"]),
        )
    )
    created = (
        await stack.worker.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=stack.cid,
                lane=lane_pb2.Lane(title="Integrate first", template=lane_pb2.Lane.STANDARD),
            )
        )
    ).lane
    await stack.complete(await stack.lease_and_start("codex"))
    review = await stack.lease_and_start("claude")
    await stack.worker.workers.Complete(
        worker_pb2.CompleteRequest(
            coordinator_id=stack.cid,
            lease_id=review.lease_id,
            lease_token=review.lease_token,
            evidence=lane_pb2.Evidence(summary="good", verdict=lane_pb2.Evidence.PASS),
        )
    )
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=created.lane_id)
    )
    (ship,) = [i for i in got.lane.items if i.kind == lane_pb2.Item.SHIP]
    assert ship.state == State.WAITING and not ship.requires_approval

    await _ship_approval(stack, True)
    [event] = [e for e in await stack.events() if e.type == e.POLICY_NARROWED]
    data = json_format.MessageToDict(event.data)
    assert data["stopping"] == [] and data["held"] == []  # nothing live or queued yet
    assert (await _item(stack, ship)).requires_approval

    await stack.complete(await stack.lease_and_start("machine"))  # the integration
    ready = await _item(stack, ship)
    assert ready.state == State.AWAITING_APPROVAL
    assert await stack.lease("machine") == []
