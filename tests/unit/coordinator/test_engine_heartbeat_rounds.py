"""Heartbeats in rounds (``domain/engine/heartbeats.py``): the calls in flight share one
round (``store.extend()``) across work coordinators and callers, and each is answered as it
would be alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import BatchInput, HeartbeatInput
from workcoord.coordinator.domain.ports import WriteLock
from workcoord.coordinator.domain.results import GrantedLease, HeartbeatAnswer
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import LeaseLost, NotFound, PermissionDenied

from .harness import World, lease_one, make_world, new_lane, task


class Counted:
    """``store`` whose rounds (``extend``) and write transactions are counted."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.rounds = 0
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    @asynccontextmanager
    async def extend(self) -> AsyncIterator[Any]:
        self.rounds += 1
        async with self.store.extend() as tx:
            yield tx

    @asynccontextmanager
    async def write(
        self, coordinator_id: str | None = None, lock: WriteLock = WriteLock.ALL
    ) -> AsyncIterator[Any]:
        self.writes += 1
        async with self.store.write(coordinator_id, lock) as tx:
            yield tx


async def _leased(engine: Engine, world: World, count: int) -> list[GrantedLease]:
    await new_lane(engine, world, *[task(f"t{i}") for i in range(count)])
    return [await lease_one(engine, world, worker_id=f"w{i}") for i in range(count)]


def _beat(world: World, lease: GrantedLease, token: str | None = None) -> HeartbeatInput:
    return HeartbeatInput(
        coordinator_id=world.cid,
        lease_id=lease.attempt.lease_id,
        lease_token=token or lease.lease_token,
    )


async def test_calls_in_flight_share_one_round_and_each_gets_its_own_answer(
    engine: Engine, store: MemoryStore, clock: ManualClock
) -> None:
    one, two = await make_world(engine), await make_world(engine)
    ones, twos = await _leased(engine, one, 3), await _leased(engine, two, 2)
    counted = Counted(store)
    engine.store = counted
    clock.advance(10)
    stranger = two.worker  # a key of the other work coordinator only
    calls = [
        engine.attempts.heartbeat(one.worker, _beat(one, ones[0])),
        engine.attempts.heartbeat(one.worker, _beat(one, ones[1], token="not-the-token")),
        engine.attempts.batch_heartbeat(
            two.worker,
            BatchInput(coordinator_id=two.cid, entries=(_beat(two, twos[0]), _beat(two, twos[1]))),
        ),
        engine.attempts.heartbeat(stranger, _beat(one, ones[2])),
        engine.attempts.heartbeat(
            one.worker,
            HeartbeatInput(coordinator_id="wc_missing", lease_id="ls_x", lease_token="t"),
        ),
    ]
    answers = await asyncio.gather(*calls, return_exceptions=True)
    assert counted.rounds == 1  # one round for all the calls
    # The refused entry is heartbeated again alone, under its row's lock: the round answers
    # only what it extended.
    assert counted.writes == 1
    expiry = clock.now() + timedelta(seconds=60)
    assert isinstance(answers[0], HeartbeatAnswer) and answers[0].lease_expire_time == expiry
    assert isinstance(answers[1], LeaseLost)
    batch = answers[2]
    assert isinstance(batch, list)
    assert [r.value.lease_expire_time for r in batch if r.value] == [expiry, expiry]
    assert isinstance(answers[3], (PermissionDenied, NotFound))
    assert isinstance(answers[4], NotFound)
    # What the round wrote is what each call alone would have written.
    async with store.read() as reader:
        for lease, extended in ((ones[0], True), (ones[1], False), (ones[2], False)):
            attempt = await reader.get_attempt(lease.attempt.lease_id)
            assert attempt is not None
            assert (attempt.lease_expire_time == expiry) is extended


async def test_a_lease_named_twice_goes_in_two_rounds(
    engine: Engine, world: World, store: MemoryStore, clock: ManualClock
) -> None:
    [lease] = await _leased(engine, world, 1)
    counted = Counted(store)
    engine.store = counted
    clock.advance(5)
    first, second = await asyncio.gather(
        engine.attempts.heartbeat(world.worker, _beat(world, lease)),
        engine.attempts.heartbeat(world.worker, _beat(world, lease)),
    )
    assert first == second
    assert (counted.rounds, counted.writes) == (2, 0)


@pytest.mark.parametrize("calls", [1, 40])
async def test_every_call_is_answered_whatever_the_load(
    engine: Engine, clock: ManualClock, calls: int
) -> None:
    world = await make_world(engine, capacities={"codex": calls})
    leases = await _leased(engine, world, calls)
    clock.advance(1)
    answers = await asyncio.gather(
        *(engine.attempts.heartbeat(world.worker, _beat(world, lease)) for lease in leases)
    )
    assert {a.lease_expire_time for a in answers} == {clock.now() + timedelta(seconds=60)}
