"""Policies only tighten through keys: a work key may set a lane's or item's policy only to
something at least as strict as the work coordinator's; a weaker one is refused with
PERMISSION_DENIED naming the field, over gRPC and REST alike, and nothing is written. A human
administrator may weaken, and the weakening is a POLICY_WEAKENED event with the human as actor.
Both backends.

Before, a work key created a STANDARD lane with ``shipRequiresApproval: false`` and, after build
and review, its SHIP item went straight to QUEUED: configuration auto-approved a send.
"""

from __future__ import annotations

import httpx
from google.protobuf import duration_pb2

from tests.support.harness import Stack, event_type, expect_error, start_gateway_for, task
from tests.support.rest import bearer, error_info, expect_status
from workcoord.api.v1 import event_pb2, lane_pb2, policy_pb2, worker_pb2
from workcoord.kit.errors import PermissionDenied

State = lane_pb2.Item.State
SHIP_APPROVAL = "lane.review_policy.ship_requires_approval"


def _standard(**review: object) -> lane_pb2.Lane:
    lane = lane_pb2.Lane(title="Fix the parser", template=lane_pb2.Lane.STANDARD)
    lane.review_policy.CopyFrom(policy_pb2.ReviewPolicy(**review))  # type: ignore[arg-type]
    return lane


async def _create(stack: Stack, lane: lane_pb2.Lane, *, human: bool = False) -> lane_pb2.Lane:
    client = stack.admin if human else stack.worker
    response = await client.lanes.CreateLane(
        lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=lane)
    )
    return response.lane


async def _lanes(stack: Stack) -> list[lane_pb2.Lane]:
    response = await stack.admin.lanes.ListLanes(
        lane_pb2.ListLanesRequest(coordinator_id=stack.cid)
    )
    return list(response.lanes)


def _fields(event: event_pb2.Event) -> list[str]:
    """The ``data.fields`` of a POLICY_WEAKENED event."""
    return [str(name) for name in event.data["fields"]]  # type: ignore[union-attr]


async def _build_and_pass_review(stack: Stack, lane: lane_pb2.Lane) -> lane_pb2.Item:
    """Build, then review with a PASS; the lane's SHIP item as it stands afterwards."""
    build = await stack.lease_and_start("codex")
    await stack.complete(build)
    review = await stack.lease_and_start("claude")
    await stack.worker.workers.Complete(
        worker_pb2.CompleteRequest(
            coordinator_id=stack.cid,
            lease_id=review.lease_id,
            lease_token=review.lease_token,
            evidence=lane_pb2.Evidence(summary="looks good", verdict=lane_pb2.Evidence.PASS),
        )
    )
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    (ship,) = [i for i in got.lane.items if i.kind == lane_pb2.Item.SHIP]
    return ship


async def test_a_key_may_not_drop_the_ship_approval(stack: Stack) -> None:
    before = len(await stack.events())
    error = await expect_error(
        _create(stack, _standard(ship_requires_approval=False)), PermissionDenied
    )
    assert error.metadata["field"] == SHIP_APPROVAL
    assert SHIP_APPROVAL in error.message
    assert await _lanes(stack) == []
    assert len(await stack.events()) == before

    # What a key may create ships only once a human approves.
    lane = await _create(stack, _standard())
    ship = await _build_and_pass_review(stack, lane)
    assert ship.state == State.AWAITING_APPROVAL


async def test_a_human_may_drop_it_and_the_event_names_the_human(stack: Stack) -> None:
    lane = await _create(stack, _standard(ship_requires_approval=False), human=True)
    ship = await _build_and_pass_review(stack, lane)
    assert ship.state == State.QUEUED

    weakened = [e for e in await stack.events() if event_type(e) == "POLICY_WEAKENED"]
    assert len(weakened) == 1
    (event,) = weakened
    assert event.lane_id == lane.lane_id
    assert event.actor.startswith("user:")
    assert _fields(event) == [SHIP_APPROVAL]


async def test_every_weaker_field_is_refused_and_stricter_ones_pass(stack: Stack) -> None:
    weak = _standard(max_fail_rounds=5, ship_requires_approval=False)
    weak.retry_policy.CopyFrom(policy_pb2.RetryPolicy(maximum_attempts=9, backoff_coefficient=1))
    error = await expect_error(_create(stack, weak), PermissionDenied)
    assert error.metadata["fields"].split(",") == [
        "lane.review_policy.max_fail_rounds",
        SHIP_APPROVAL,
        "lane.retry_policy.maximum_attempts",
        "lane.retry_policy.backoff_coefficient",
    ]

    strict = _standard(
        max_fail_rounds=1, on_pass=policy_pb2.ReviewPolicy.NONE, ship_requires_approval=True
    )
    strict.retry_policy.CopyFrom(
        policy_pb2.RetryPolicy(
            maximum_attempts=2,
            backoff_coefficient=4,
            initial_interval=duration_pb2.Duration(seconds=30),
            maximum_interval=duration_pb2.Duration(seconds=600),
        )
    )
    await _create(stack, strict)
    assert [lane.title for lane in await _lanes(stack)] == ["Fix the parser"]
    assert "POLICY_WEAKENED" not in [event_type(e) for e in await stack.events()]


async def test_items_of_a_custom_lane_are_held_to_the_same_rule(stack: Stack) -> None:
    fast = policy_pb2.RetryPolicy(maximum_attempts=10)
    error = await expect_error(stack.create_lane(task("a", retry_policy=fast)), PermissionDenied)
    assert error.metadata["field"] == "lane.items[0].retry_policy.maximum_attempts"

    lane = await stack.create_lane(task("a"))
    add = lane_pb2.CreateItemRequest(
        coordinator_id=stack.cid, lane_id=lane.lane_id, item=task("b", retry_policy=fast)
    )
    error = await expect_error(stack.worker.lanes.CreateItem(add), PermissionDenied)
    assert error.metadata["field"] == "item.retry_policy.maximum_attempts"
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    assert [i.key for i in got.lane.items] == ["a"]

    item = (await stack.admin.lanes.CreateItem(add)).item
    (event,) = [e for e in await stack.events() if event_type(e) == "POLICY_WEAKENED"]
    assert (event.lane_id, event.item_id) == (lane.lane_id, item.item_id)
    assert event.actor.startswith("user:")
    assert _fields(event) == ["item.retry_policy.maximum_attempts"]


async def test_rest_refuses_the_same_with_the_field_in_the_error_info(stack: Stack) -> None:
    gateway = await start_gateway_for(stack.address)
    try:
        async with httpx.AsyncClient(base_url=f"http://{gateway.address}") as http:
            response = await http.post(
                f"/v1/work-coordinators/{stack.cid}/lanes",
                headers=bearer(stack.key_secret),
                json={
                    "title": "Fix the parser",
                    "template": "STANDARD",
                    "reviewPolicy": {"shipRequiresApproval": False},
                },
            )
            body = expect_status(response, 403, 7, "PERMISSION_DENIED")
            assert error_info(body)["metadata"]["field"] == SHIP_APPROVAL
            assert SHIP_APPROVAL in body["message"]
    finally:
        await gateway.stop()
    assert await _lanes(stack) == []
