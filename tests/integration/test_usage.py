"""Usage on worker writes over gRPC (on SQLite and PostgreSQL): running totals kept on the
attempt, a lower total refused naming the field, bounds checked by the field rules."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.support.harness import Stack, expect_error, task, violated_fields
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit.errors import InvalidArgument

Usage = lane_pb2.Usage


def _fence(stack: Stack, lease: worker_pb2.Lease) -> dict[str, Any]:
    return {
        "coordinator_id": stack.cid,
        "lease_id": lease.lease_id,
        "lease_token": lease.lease_token,
    }


async def test_heartbeats_and_complete_keep_the_attempts_running_totals(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    workers = stack.worker.workers
    first = Usage(input_tokens=1200, output_tokens=300, cost_micros=400_000, model="sonnet-4")
    await workers.Heartbeat(worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=first))
    item = await stack.get_item(lease.item)
    assert item.attempts[0].usage == first
    # A lower total is refused, naming the field, and changes nothing.
    lower = Usage(input_tokens=1199, output_tokens=300, cost_micros=400_000)
    err = await expect_error(
        workers.Heartbeat(worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=lower)),
        InvalidArgument,
    )
    assert violated_fields(err) == {"usage.input_tokens"}
    assert (await stack.get_item(lease.item)).attempts[0].usage == first
    # Out of bounds: the field rules refuse it before the engine sees it.
    huge = Usage(cost_micros=10**13)
    err = await expect_error(
        workers.Heartbeat(worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=huge)),
        InvalidArgument,
    )
    assert violated_fields(err) == {"usage.cost_micros"}
    final = Usage(input_tokens=2000, output_tokens=500, cache_read_tokens=7, cost_micros=800_000)
    done = await workers.Complete(
        worker_pb2.CompleteRequest(
            **_fence(stack, lease), evidence=lane_pb2.Evidence(summary="ok"), usage=final
        )
    )
    expected = Usage(
        input_tokens=2000,
        output_tokens=500,
        cache_read_tokens=7,
        cost_micros=800_000,
        model="sonnet-4",
    )
    assert done.attempt.usage == expected
    assert (await stack.get_item(lease.item)).attempts[0].usage == expected


@pytest.mark.parametrize("write", ["fail", "checkpoint"])
async def test_fail_and_checkpoint_store_the_final_usage(stack: Stack, write: str) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    workers = stack.worker.workers
    final = Usage(output_tokens=90, cost_micros=1234, model="gpt-5")
    if write == "fail":
        error = lane_pb2.ErrorInfo(message="boom", type="Boom", retryable=True)
        failed = await workers.Fail(
            worker_pb2.FailRequest(**_fence(stack, lease), error=error, usage=final)
        )
        attempt = failed.attempt
    else:
        point = lane_pb2.Checkpoint(summary="half way")
        checkpointed = await workers.Checkpoint(
            worker_pb2.CheckpointRequest(**_fence(stack, lease), checkpoint=point, usage=final)
        )
        attempt = checkpointed.attempt
    assert attempt.usage == final
    assert (await stack.get_item(lease.item)).attempts[0].usage == final


async def test_get_usage_answers_the_roll_ups_by_lane_class_model_and_day(stack: Stack) -> None:
    W = work_coordinator_pb2
    lanes = []
    for cost in (300_000, 900_000):
        lane = await stack.create_lane(task("a"))
        lanes.append(lane.lane_id)
        lease = await stack.lease_and_start()
        spent = Usage(input_tokens=100, output_tokens=10, cost_micros=cost, model=f"m{cost}")
        await stack.worker.workers.Heartbeat(
            worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=spent)
        )
        await stack.worker.workers.Complete(
            worker_pb2.CompleteRequest(
                **_fence(stack, lease), evidence=lane_pb2.Evidence(summary="ok"), usage=spent
            )
        )
    today = stack.clock.now().date().isoformat()
    coordinators = stack.admin.coordinators
    ever = await coordinators.GetUsage(W.GetUsageRequest(coordinator_id=stack.cid))
    assert (ever.day, ever.total.cost_micros, ever.total.tokens) == ("", 1_200_000, 220)
    by_lane = await coordinators.GetUsage(
        W.GetUsageRequest(coordinator_id=stack.cid, day=today, group_by=W.GetUsageRequest.LANE)
    )
    assert by_lane.total.cost_micros == 1_200_000
    assert [(g.key, g.cost_micros) for g in by_lane.groups] == [
        (lanes[1], 900_000),
        (lanes[0], 300_000),
    ]  # the costliest first
    by_model = await coordinators.GetUsage(
        W.GetUsageRequest(coordinator_id=stack.cid, group_by=W.GetUsageRequest.MODEL)
    )
    assert [g.key for g in by_model.groups] == ["m900000", "m300000"]
    by_class = await coordinators.GetUsage(
        W.GetUsageRequest(coordinator_id=stack.cid, group_by=W.GetUsageRequest.WORKER_CLASS)
    )
    assert [(g.key, g.input_tokens) for g in by_class.groups] == [("machine", 200)]
    of_lane = await coordinators.GetUsage(
        W.GetUsageRequest(
            coordinator_id=stack.cid, lane_id=lanes[0], group_by=W.GetUsageRequest.DAY
        )
    )
    assert of_lane.total.cost_micros == 300_000
    assert [(g.key, g.cost_micros) for g in of_lane.groups] == [(today, 300_000)]
    # GetLane and GetItem show what the lane and its items spent, all time.
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lanes[1])
    )
    lane = got.lane
    assert (lane.usage.cost_micros, lane.usage.tokens) == (900_000, 110)
    assert [item.usage.cost_micros for item in lane.items] == [900_000]
    item = await stack.get_item(lane.items[0])
    assert item.usage.input_tokens == 100
    # The digest shows the day's spend and the lanes that spent the most.
    digest = await coordinators.GetDigest(W.GetDigestRequest(coordinator_id=stack.cid, day=today))
    assert digest.digest.usage.cost_micros == 1_200_000
    assert [g.key for g in digest.digest.top_lanes] == [lanes[1], lanes[0]]
    yesterday = (stack.clock.now() - timedelta(days=1)).date().isoformat()
    before = await coordinators.GetUsage(W.GetUsageRequest(coordinator_id=stack.cid, day=yesterday))
    assert before.total.cost_micros == 0
    err = await expect_error(
        coordinators.GetUsage(W.GetUsageRequest(coordinator_id=stack.cid, day="2026-13-45")),
        InvalidArgument,
    )
    assert violated_fields(err) == {"day"}
    err = await expect_error(
        coordinators.GetUsage(
            W.GetUsageRequest(
                coordinator_id=stack.cid, lane_id=lanes[0], group_by=W.GetUsageRequest.MODEL
            )
        ),
        InvalidArgument,
    )
    assert violated_fields(err) == {"group_by"}


async def test_the_view_and_why_show_the_days_spend_and_each_lanes_cost(stack: Stack) -> None:
    W = work_coordinator_pb2
    coordinators = stack.admin.coordinators
    costs: dict[str, tuple[int, str]] = {}
    for cost in (250_000, 700_000):
        await stack.create_lane(task("a"))
        if not costs:
            # Nothing spent yet: the view carries no totals.
            view = (await coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid))).view
            assert not view.HasField("day_usage") and list(view.lane_usage) == []
        lease = await stack.lease_and_start()
        spent = Usage(input_tokens=40, output_tokens=2, cost_micros=cost, model="m")
        await stack.worker.workers.Heartbeat(
            worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=spent)
        )
        leased = await stack.get_item(lease.item)
        costs[leased.lane_id] = (cost, leased.item_id)
    idle = await stack.create_lane(task("idle"))
    today = stack.clock.now().date().isoformat()
    view = (await coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid))).view
    assert (view.day_usage.key, view.day_usage.cost_micros, view.day_usage.tokens) == (
        today,
        950_000,
        84,
    )
    # Each lane of the page that spent, the costliest first; the idle lane is absent.
    assert [(u.key, u.cost_micros) for u in view.lane_usage] == sorted(
        ((lane_id, cost) for lane_id, (cost, _) in costs.items()), key=lambda kv: -kv[1]
    )
    assert idle.lane_id not in {u.key for u in view.lane_usage}
    for lane_id, (cost, item_id) in costs.items():
        why = (
            await coordinators.Explain(W.ExplainRequest(coordinator_id=stack.cid, lane_id=lane_id))
        ).explanation
        assert (why.usage.key, why.usage.cost_micros) == ("", cost)
        assert (why.day_usage.key, why.day_usage.cost_micros) == (today, 950_000)
        of_item = await stack.explain(item_id)
        assert (of_item.usage.cost_micros, of_item.day_usage.cost_micros) == (cost, 950_000)
    quiet = (
        await coordinators.Explain(W.ExplainRequest(coordinator_id=stack.cid, lane_id=idle.lane_id))
    ).explanation
    assert not quiet.HasField("usage") and quiet.day_usage.cost_micros == 950_000
