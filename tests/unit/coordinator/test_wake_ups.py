"""Wake-ups of a waiting Lease: only by its class, debounced, the first waiter claiming at once
(the engine on the in-memory store and an in-process bus; no timed sleeps)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import CompleteInput, CreateLaneInput, LeaseInput
from workcoord.coordinator.domain.results import GrantedLease, LaneDetail
from workcoord.coordinator.domain.specs import Evidence, LeaseAsk, RunIdentity
from workcoord.kit.clock import ManualClock

from .harness import World, lane_spec, run_identity, task


async def _lease(
    engine: Engine,
    world: World,
    worker_class: str = "codex",
    *,
    worker_id: str = "w1",
    identity: RunIdentity | None = None,
    wait_seconds: int = 0,
) -> list[GrantedLease]:
    ask = LeaseAsk(worker_id, worker_class, 1, 60, wait_seconds, identity)
    return await engine.leasing.lease(world.worker, LeaseInput(coordinator_id=world.cid, ask=ask))


async def _one(engine: Engine, world: World, **kwargs: Any) -> GrantedLease:
    granted = await _lease(engine, world, **kwargs)
    assert len(granted) == 1
    return granted[0]


async def _lane(engine: Engine, world: World, *items: Any) -> LaneDetail:
    return await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(*items))
    )


async def test_a_waiting_lease_looks_again_only_for_its_class(
    engine: Engine, world: World, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits that ready another class, or none (a grant, a Start), do not wake the waiter;
    a commit readying its class wakes it once, and it claims at once."""
    looks: list[str] = []
    parked = asyncio.Event()
    look, claim, wait = (
        engine.leasing._lease_once,
        engine.leasing._claim_when_woken,
        engine.leasing._wait_for_work,
    )

    async def counted_look(*args: Any) -> list[GrantedLease]:
        looks.append(args[2].worker_class)
        return await look(*args)

    async def counted_claim(*args: Any) -> list[GrantedLease]:
        looks.append(f"claim {args[2].worker_class}")
        return await claim(*args)

    async def noted_wait(*args: Any) -> bool:
        parked.set()
        return await wait(*args)

    monkeypatch.setattr(engine.leasing, "_lease_once", counted_look)
    monkeypatch.setattr(engine.leasing, "_claim_when_woken", counted_claim)
    monkeypatch.setattr(engine.leasing, "_wait_for_work", noted_wait)
    waiter = asyncio.create_task(
        _lease(engine, world, worker_class="machine", worker_id="w1", wait_seconds=30)
    )
    await asyncio.wait_for(parked.wait(), timeout=60)
    assert looks.count("machine") == 2  # before listening, and once more after
    parked.clear()
    await _lane(engine, world, task("a", worker_class="codex"))
    lease = await _one(
        engine, world, worker_class="codex", worker_id="w2", identity=run_identity(clock)
    )
    await engine.attempts.complete(
        world.worker,
        CompleteInput(
            coordinator_id=world.cid,
            lease_id=lease.attempt.lease_id,
            lease_token=lease.lease_token,
            evidence=Evidence(summary="ok"),
        ),
    )
    for _ in range(50):  # a woken waiter would look and park again within these turns
        await asyncio.sleep(0)
    assert looks.count("machine") == 2 and not parked.is_set()
    await _lane(engine, world, task("m", worker_class="machine"))
    granted = await asyncio.wait_for(waiter, timeout=60)
    assert [g.item.key for g in granted] == ["m"]
    assert [w for w in looks if "machine" in w] == ["machine", "machine", "claim machine"]


async def test_of_the_waiters_one_wakeup_wakes_only_the_first_claims_at_once(
    engine: Engine, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The others look first (a read) instead of all queueing on the coordinator's lock."""
    calls: list[tuple[str, str]] = []
    parked: asyncio.Queue[str] = asyncio.Queue()
    look, claim, wait = (
        engine.leasing._lease_once,
        engine.leasing._claim_when_woken,
        engine.leasing._wait_for_work,
    )

    async def counted_look(*args: Any) -> list[GrantedLease]:
        calls.append(("look", args[2].worker_id))
        return await look(*args)

    async def counted_claim(*args: Any) -> list[GrantedLease]:
        calls.append(("claim", args[2].worker_id))
        return await claim(*args)

    async def noted_wait(*args: Any) -> bool:
        await parked.put("parked")
        return await wait(*args)

    monkeypatch.setattr(engine.leasing, "_lease_once", counted_look)
    monkeypatch.setattr(engine.leasing, "_claim_when_woken", counted_claim)
    monkeypatch.setattr(engine.leasing, "_wait_for_work", noted_wait)
    waiters = [
        asyncio.create_task(_lease(engine, world, worker_id=f"w{n}", wait_seconds=30))
        for n in range(3)
    ]
    for _ in waiters:
        await asyncio.wait_for(parked.get(), timeout=60)
    calls.clear()
    await _lane(engine, world, task("a"))
    # The one that got the item returns; the two others park again.
    done, _pending = await asyncio.wait(waiters, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    for _ in range(2):
        await asyncio.wait_for(parked.get(), timeout=60)
    assert [g.item.key for g in done.pop().result()] == ["a"]
    assert sorted(kind for kind, _ in calls) == ["claim", "look", "look"]
    for waiter in waiters:
        waiter.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)
