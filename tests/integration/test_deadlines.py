"""Deadlines on every attempt (``max_run_duration``): a heartbeating attempt past it is told
``stop DEADLINE_EXCEEDED``, its lease is never extended past the deadline plus one lease period,
and then it is fenced (LEASE_LOST) and its item retried with backoff as a counted attempt. The
recovery sweep enforces it without another heartbeat. ``why`` shows started, deadline and
remaining. Both backends, through gRPC."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from google.protobuf import duration_pb2, field_mask_pb2

from tests.support.harness import Stack, expect_error, identity, task, violated_fields
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.client import LoopEvent, LoopOptions, Released, Worker
from workcoord.client.retries import RetryClock
from workcoord.client.worker_loop import Assignment
from workcoord.kit.errors import InvalidArgument, LeaseLost

WC = work_coordinator_pb2
STOP = worker_pb2.Stop


async def _set_max_run(stack: Stack, worker_class: str, seconds: int) -> WC.WorkCoordinator:
    response = await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(
                scope=WC.WorkCoordinator.ORG,
                max_run_duration={worker_class: duration_pb2.Duration(seconds=seconds)},
            ),
            update_mask=field_mask_pb2.FieldMask(paths=[f"max_run_duration.{worker_class}"]),
        )
    )
    return response.work_coordinator


async def _heartbeat(stack: Stack, lease: worker_pb2.Lease) -> worker_pb2.HeartbeatResponse:
    return await stack.worker.workers.Heartbeat(
        worker_pb2.HeartbeatRequest(
            coordinator_id=stack.cid, lease_id=lease.lease_id, lease_token=lease.lease_token
        )
    )


async def test_defaults_per_class_and_a_class_changed_alone(stack: Stack) -> None:
    got = await stack.admin.coordinators.GetWorkCoordinator(
        WC.GetWorkCoordinatorRequest(coordinator_id=stack.cid)
    )
    shown = {k: v.seconds for k, v in got.work_coordinator.max_run_duration.items()}
    assert shown == {"codex": 7200, "claude": 7200, "agent": 7200, "machine": 3600}
    updated = await _set_max_run(stack, "machine", 120)
    shown = {k: v.seconds for k, v in updated.max_run_duration.items()}
    assert shown == {"codex": 7200, "claude": 7200, "agent": 7200, "machine": 120}


async def test_bad_bounds_are_invalid_arguments_naming_the_field(stack: Stack) -> None:
    error = await expect_error(_set_max_run(stack, "machine", 10), InvalidArgument)
    assert violated_fields(error) == {"work_coordinator.max_run_duration[machine]"}
    short = task("a")
    short.max_run_duration.FromSeconds(30)
    error = await expect_error(stack.create_lane(short), InvalidArgument)
    assert any(f.endswith("max_run_duration") for f in violated_fields(error)), error
    # Nothing was written: no lane exists.
    lanes = await stack.admin.lanes.ListLanes(lane_pb2.ListLanesRequest(coordinator_id=stack.cid))
    assert list(lanes.lanes) == []


async def test_a_heartbeating_attempt_past_max_run_duration_is_stopped_and_retried(
    stack: Stack,
) -> None:
    await _set_max_run(stack, "machine", 120)
    lane = await stack.create_lane(task("a"))
    lease = await stack.lease_and_start(lease_seconds=30)
    leased_at = stack.clock.now().replace(tzinfo=None)
    deadline = lease.deadline_time.ToDatetime()
    assert deadline == leased_at + timedelta(seconds=120)

    for _ in range(4):  # 25, 50, 75, 100 s after the lease: within the deadline
        stack.clock.advance(25)
        assert not (await _heartbeat(stack, lease)).HasField("stop")
    why = await stack.explain(lease.item.item_id)
    assert why.deadline.lease_id == lease.lease_id
    assert why.deadline.deadline_time == lease.deadline_time
    assert why.deadline.remaining.ToTimedelta() == timedelta(seconds=20)
    assert why.deadline.start_time.ToSeconds() > 0

    stack.clock.advance(21)  # 121 s after the lease: past the deadline
    answer = await _heartbeat(stack, lease)
    assert answer.stop.reason == STOP.DEADLINE_EXCEEDED
    assert "max_run_duration" in answer.stop.message
    # Never extended past the deadline plus one lease period (120 + 30 s after the lease).
    fenced_at = deadline + timedelta(seconds=30)
    assert answer.lease_expire_time.ToDatetime() == fenced_at
    stack.clock.advance(20)
    answer = await _heartbeat(stack, lease)
    assert answer.stop.reason == STOP.DEADLINE_EXCEEDED
    assert answer.lease_expire_time.ToDatetime() == fenced_at

    stack.clock.advance(10)  # 151 s: the worker that went on is fenced
    error = await expect_error(_heartbeat(stack, lease), LeaseLost)
    assert error.cause == "expired"
    report = await stack.maintain()
    assert report.report.expired_attempts == 1
    item = await stack.get_item(lane.items[0])
    assert item.state == lane_pb2.Item.QUEUED
    assert item.attempt_count == 1  # it burned a retry
    assert item.not_before.ToDatetime() > stack.clock.now().replace(tzinfo=None)  # backoff
    [ended] = item.attempts
    assert ended.status == lane_pb2.Attempt.DEAD and ended.counted

    stack.clock.advance(3600)
    again = await stack.lease_and_start(lease_seconds=30)
    assert again.item.item_id == lease.item.item_id
    assert again.attempt == 2
    assert not (await _heartbeat(stack, again)).HasField("stop")


async def test_recovery_enforces_the_deadline_without_another_heartbeat(stack: Stack) -> None:
    own = task("a", worker_class="person")  # person: no default deadline, the item sets one
    own.max_run_duration.FromSeconds(60)
    lane = await stack.create_lane(own)
    [lease] = await stack.lease("person", lease_seconds=300)
    assert (await stack.get_item(lane.items[0])).max_run_duration.seconds == 60
    stack.clock.advance(55)
    assert not (await _heartbeat(stack, lease)).HasField("stop")
    stack.clock.advance(6)
    answer = await _heartbeat(stack, lease)
    assert answer.stop.reason == STOP.DEADLINE_EXCEEDED
    # The worker never heartbeats again. One lease period after the deadline (60 + 300 s
    # after the lease) the sweep ends the lease, not before.
    stack.clock.advance(298)  # 359 s
    assert (await stack.maintain()).report.expired_attempts == 0
    stack.clock.advance(1)  # 360 s
    assert (await stack.maintain()).report.expired_attempts == 1
    item = await stack.get_item(lane.items[0])
    assert item.state == lane_pb2.Item.QUEUED and item.attempt_count == 1
    assert item.HasField("not_before")


async def test_a_class_without_a_deadline_is_never_stopped(stack: Stack) -> None:
    await stack.create_lane(task("a", worker_class="person"))
    [lease] = await stack.lease("person", lease_seconds=300)
    assert not lease.HasField("deadline_time")
    for _ in range(30):  # 2.5 h, heartbeating: more than any class's default
        stack.clock.advance(299)
        assert not (await _heartbeat(stack, lease)).HasField("stop")
    why = await stack.explain(lease.item.item_id)
    assert not why.HasField("deadline")


# The loop's own clock, fifty times faster than real time: a 300 s lease is heartbeated every
# 2 real seconds, while the server's clock moves only when the test advances it.
_FAST = 50.0
_FAST_CLOCK = RetryClock(
    monotonic=lambda: time.monotonic() * _FAST, sleep=lambda s: asyncio.sleep(s / _FAST)
)


@pytest.mark.timeout(120)
async def test_a_deadline_past_reaches_every_lease_of_a_batched_heartbeat_loop(
    stack: Stack,
) -> None:
    # Two items, each bounded to a minute, leased together by one loop holding two leases:
    # its heartbeats go out as one BatchHeartbeat, whose per-entry stop must reach each
    # assignment as the plain Heartbeat's does.
    items = []
    for key in ("a", "b"):
        item = task(key)
        item.max_run_duration.FromSeconds(60)
        items.append(item)
    await stack.create_lane(*items)
    worker = Worker(stack.worker, stack.cid, "w-batched", "machine")
    held: list[Assignment] = []
    both = asyncio.Event()
    events: list[LoopEvent] = []

    async def handler(assignment: Assignment) -> Released:
        held.append(assignment)
        if len(held) == 2:
            both.set()
        await assignment.told_to_stop.wait()
        return Released("told to stop")

    async def pass_the_deadline() -> None:
        await both.wait()
        stack.clock.advance(61)  # the server's clock: both attempts are past their deadline

    options = LoopOptions(
        concurrency=2,
        lease_seconds=300,
        wait_seconds=0,
        once=True,
        run_identity=identity(stack.clock),
        clock=_FAST_CLOCK,
    )
    mover = asyncio.create_task(pass_the_deadline())
    report = await worker.run(handler, options, on_event=events.append)
    await mover
    assert report.outcomes == {"released": 2}
    for assignment in held:
        assert assignment.told_stop is not None
        assert assignment.told_stop.reason == STOP.DEADLINE_EXCEEDED
    told = [e for e in events if e.kind == "stop_told"]
    assert sorted(e.lease_id for e in told) == sorted(a.lease_id for a in held)
    assert all(e.detail.startswith("DEADLINE_EXCEEDED") for e in told)
