"""Usage on worker writes: running totals per attempt, only growing, bounded, kept on the
attempt (the engine on the in-memory store)."""

from __future__ import annotations

from typing import Any

import pytest

from workcoord.coordinator.domain import usage
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    CheckpointInput,
    CompleteInput,
    FailInput,
    HeartbeatInput,
)
from workcoord.coordinator.domain.model import Attempt, UsageScope
from workcoord.coordinator.domain.specs import Checkpoint, Evidence, Failure, Usage
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import InvalidArgument

from .harness import World, lease_one, new_lane, run_identity, task


async def _attempt(store: MemoryStore, lease_id: str) -> Attempt:
    async with store.read() as reader:
        attempt = await reader.get_attempt(lease_id)
    assert attempt is not None
    return attempt


def test_check_usage_refuses_a_lower_total_naming_the_field() -> None:
    before = Usage(input_tokens=10, output_tokens=5, cost_micros=300, model="m1")
    with pytest.raises(InvalidArgument) as refused:
        usage.check_usage(before, Usage(input_tokens=10, output_tokens=4, cost_micros=300))
    assert refused.value.field_violations[0].field == "usage.output_tokens"
    with pytest.raises(InvalidArgument) as bounded:
        usage.check_usage(Usage(), Usage(cost_micros=usage.MAX_TOTAL + 1))
    assert bounded.value.field_violations[0].field == "usage.cost_micros"
    with pytest.raises(InvalidArgument):
        usage.check_usage(Usage(), Usage(cache_read_tokens=-1))
    # Equal totals are accepted; a report without a model keeps the one reported before.
    same = usage.check_usage(before, Usage(input_tokens=10, output_tokens=5, cost_micros=300))
    assert same.model == "m1"
    grown = Usage(input_tokens=15, output_tokens=9, cost_micros=500, model="m1")
    assert usage.increase(before, grown) == Usage(
        input_tokens=5, output_tokens=4, cost_micros=200, model="m1"
    )
    assert grown.tokens == 24


async def test_heartbeats_keep_running_totals_and_a_lower_one_changes_nothing(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await new_lane(engine, world, task("a"))
    lease = await lease_one(engine, world, identity=run_identity(clock))
    ref: dict[str, Any] = {
        "coordinator_id": world.cid,
        "lease_id": lease.attempt.lease_id,
        "lease_token": lease.lease_token,
    }
    first = Usage(input_tokens=1000, output_tokens=200, cost_micros=400_000, model="sonnet")
    await engine.attempts.heartbeat(world.worker, HeartbeatInput(**ref, usage=first))
    assert usage.reported(await _attempt(store, lease.attempt.lease_id)) == first
    expiry_before = (await _attempt(store, lease.attempt.lease_id)).lease_expire_time
    clock.advance(5)
    with pytest.raises(InvalidArgument) as refused:
        await engine.attempts.heartbeat(
            world.worker,
            HeartbeatInput(**ref, usage=Usage(input_tokens=999, output_tokens=300)),
        )
    assert refused.value.field_violations[0].field == "usage.input_tokens"
    kept = await _attempt(store, lease.attempt.lease_id)
    assert usage.reported(kept) == first  # the refused write changed nothing
    assert kept.lease_expire_time == expiry_before
    # A heartbeat without usage keeps what was reported.
    await engine.attempts.heartbeat(world.worker, HeartbeatInput(**ref, progress="p"))
    assert usage.reported(await _attempt(store, lease.attempt.lease_id)) == first
    final = Usage(input_tokens=2000, output_tokens=400, cost_micros=900_000)
    done = await engine.attempts.complete(
        world.worker, CompleteInput(**ref, evidence=Evidence(summary="ok"), usage=final)
    )
    assert usage.reported(done) == Usage(
        input_tokens=2000, output_tokens=400, cost_micros=900_000, model="sonnet"
    )
    assert usage.reported(await _attempt(store, lease.attempt.lease_id)).cost_micros == 900_000


@pytest.mark.parametrize("final_write", ["fail", "checkpoint"])
async def test_fail_and_checkpoint_carry_the_final_usage(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore, final_write: str
) -> None:
    await new_lane(engine, world, task("a"))
    lease = await lease_one(engine, world, identity=run_identity(clock))
    ref: dict[str, Any] = {
        "coordinator_id": world.cid,
        "lease_id": lease.attempt.lease_id,
        "lease_token": lease.lease_token,
    }
    await engine.attempts.heartbeat(
        world.worker, HeartbeatInput(**ref, usage=Usage(output_tokens=50, cost_micros=10))
    )
    lower = Usage(output_tokens=49, cost_micros=10)
    final = Usage(output_tokens=70, cost_micros=30, model="gpt")
    if final_write == "fail":
        error = Failure(message="boom", retryable=True)
        with pytest.raises(InvalidArgument):
            await engine.attempts.fail(world.worker, FailInput(**ref, error=error, usage=lower))
        ended = await engine.attempts.fail(world.worker, FailInput(**ref, error=error, usage=final))
    else:
        point = Checkpoint(summary="half")
        with pytest.raises(InvalidArgument):
            await engine.attempts.checkpoint(
                world.worker, CheckpointInput(**ref, checkpoint=point, usage=lower)
            )
        ended = await engine.attempts.checkpoint(
            world.worker, CheckpointInput(**ref, checkpoint=point, usage=final)
        )
    assert usage.reported(ended) == final
    assert usage.reported(await _attempt(store, lease.attempt.lease_id)) == final


async def test_each_report_adds_its_increase_to_every_roll_up(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await new_lane(engine, world, task("a"), task("b"))
    lane_id = detail.lane.lane_id
    day = usage.day_of(clock.now())
    spent = 0
    for cost in (300, 700):
        lease = await lease_one(engine, world, identity=run_identity(clock))
        ref: dict[str, Any] = {
            "coordinator_id": world.cid,
            "lease_id": lease.attempt.lease_id,
            "lease_token": lease.lease_token,
        }
        half = Usage(input_tokens=10, cost_micros=cost // 2, model="opus")
        await engine.attempts.heartbeat(world.worker, HeartbeatInput(**ref, usage=half))
        with pytest.raises(InvalidArgument):  # refused: adds nothing
            await engine.attempts.heartbeat(world.worker, HeartbeatInput(**ref, usage=Usage()))
        await engine.attempts.heartbeat(world.worker, HeartbeatInput(**ref, usage=half))
        final = Usage(input_tokens=25, output_tokens=5, cost_micros=cost)
        await engine.attempts.complete(
            world.worker, CompleteInput(**ref, evidence=Evidence(summary="ok"), usage=final)
        )
        spent += cost
        item_id = lease.attempt.item_id
        async with store.read() as reader:
            (of_item,) = await reader.usage_totals(world.cid, UsageScope.ITEM, day, [item_id])
        assert (of_item.cost_micros, of_item.tokens) == (cost, 30)
    async with store.read() as reader:
        for scope, key in (
            (UsageScope.COORDINATOR, ""),
            (UsageScope.LANE, lane_id),
            (UsageScope.WORKER_CLASS, "codex"),
            (UsageScope.MODEL, "opus"),
        ):
            for when in (day, ""):
                (rolled,) = await reader.usage_totals(world.cid, scope, when, [key])
                assert (rolled.cost_micros, rolled.input_tokens) == (spent, 50), (scope, when)
        (days,) = await reader.usage_days(world.cid, UsageScope.COORDINATOR, "", day)
        assert days.cost_micros == spent
