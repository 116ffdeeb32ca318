"""Lease while another claim of the class is in flight in this process: a class that is full
answers at once instead of queueing on the claim lock; a call that may claim still waits for it
and claims once it is free; while claims fill their asks, a call queues without looking."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import CompleteInput, UpdateCoordinatorInput
from workcoord.coordinator.domain.specs import CoordinatorSpec, Evidence, LeaseAsk
from workcoord.kit.clock import ManualClock

from .harness import ADMIN, World, lease_items, new_lane, run_identity, task

WAIT = 30.0  # a generous limit: only a failing test waits this long


async def _queued(call: asyncio.Task[object], lock: asyncio.Lock) -> bool:
    """Whether ``call`` ends up waiting for ``lock`` (not done, a waiter), given the event
    loop's turns to get there."""
    for _ in range(10_000):
        if call.done() or lock._waiters:
            break
        await asyncio.sleep(0)
    return not call.done() and bool(lock._waiters)


async def test_a_full_class_answers_without_waiting_for_a_claim_in_flight(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    await engine.coordinators.update_coordinator(
        ADMIN,
        UpdateCoordinatorInput(
            coordinator_id=world.cid,
            spec=CoordinatorSpec(scope=None, changes={"class_capacity": {"codex": 1}}),
        ),
    )
    await new_lane(engine, world, task("a"), task("b"))
    [held] = await lease_items(engine, world, identity=run_identity(clock))
    assert await lease_items(engine, world, worker_id="w2") == []  # full; w2 is known now
    classes = LeaseAsk("w2", "codex", 1, 60, 0, None).classes
    lock = engine.leasing._claim_locks.setdefault((world.cid, classes), asyncio.Lock())

    async with lock:  # a claim of the class in flight
        full = asyncio.create_task(lease_items(engine, world, worker_id="w2"))
        done, _ = await asyncio.wait({full}, timeout=WAIT)
        assert full in done and full.result() == []

    await engine.attempts.complete(
        world.worker,
        CompleteInput(
            coordinator_id=world.cid,
            lease_id=held.attempt.lease_id,
            lease_token=held.lease_token,
            evidence=Evidence(summary="ok"),
        ),
    )
    async with lock:  # a slot is free now: this one waits for the lock, then claims
        claim = asyncio.create_task(lease_items(engine, world, worker_id="w2"))
        assert await _queued(claim, lock)
    granted = await asyncio.wait_for(claim, WAIT)
    assert [g.item.key for g in granted] == ["b"]


async def test_while_claims_fill_their_asks_a_lease_queues_for_the_claim_without_looking(
    engine: Engine, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look would read the class as ready (the last claim got all it asked for): the call
    waits for the claim in flight at once; once a claim gets less than asked, calls look
    first again."""
    await new_lane(engine, world, task("a"), task("b"), task("c"))
    assert len(await lease_items(engine, world, worker_id="w1")) == 1  # filled its ask
    looks: list[str] = []
    look = engine.leasing._look

    async def counted_look(*args: Any, **kwargs: Any) -> Any:
        looks.append(args[2].worker_id)
        return await look(*args, **kwargs)

    monkeypatch.setattr(engine.leasing, "_look", counted_look)
    classes = LeaseAsk("w2", "codex", 1, 60, 0, None).classes
    lock = engine.leasing._claim_locks[(world.cid, classes)]
    async with lock:  # a claim of the class in flight
        claim = asyncio.create_task(lease_items(engine, world, worker_id="w2"))
        assert await _queued(claim, lock) and looks == []
    assert len(await asyncio.wait_for(claim, WAIT)) == 1
    assert len(await lease_items(engine, world, worker_id="w3", max_items=5)) == 1  # c, of 5
    async with lock:
        empty = asyncio.create_task(lease_items(engine, world, worker_id="w1"))  # known
        done, _ = await asyncio.wait({empty}, timeout=WAIT)
        assert empty in done and empty.result() == [] and looks == ["w1"]
