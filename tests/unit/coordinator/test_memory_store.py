"""The in-memory store: atomic commits, snapshot reads, and the database's invariants."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import CreateLaneInput, LeaseInput
from workcoord.coordinator.domain.model import AttemptStatus, EventType, NewEvent
from workcoord.coordinator.domain.ports import ClaimScan, OrgRecord
from workcoord.coordinator.domain.specs import LeaseAsk
from workcoord.coordinator.storage.memory import MemoryStore, ReadOnlyViolation
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import AlreadyExists, Internal

from .harness import World, lane_spec, task


class Boom(Exception):
    pass


async def test_an_exception_inside_write_rolls_back_everything(
    store: MemoryStore, world: World
) -> None:
    before = await _revision(store, world)
    with pytest.raises(Boom):
        async with store.write(world.cid) as tx:
            assert tx.coordinator is not None
            await tx.insert_org(OrgRecord("rolled-back", "x", tx.now))
            await tx.append(tx.coordinator, [NewEvent(EventType.LANE_CREATED)], "test")
            raise Boom
    async with store.read() as reader:
        assert await reader.get_org("rolled-back") is None
        assert len(await reader.list_events(world.cid, 0, 100, "", "")) == before
    assert await _revision(store, world) == before


async def _revision(store: MemoryStore, world: World) -> int:
    async with store.read() as reader:
        coordinator = await reader.get_coordinator(world.cid)
    assert coordinator is not None
    return coordinator.revision


async def test_readers_see_the_state_committed_when_they_opened(
    store: MemoryStore, clock: ManualClock
) -> None:
    async with store.read() as reader:
        async with store.write() as tx:
            await tx.insert_org(OrgRecord("later", "x", tx.now))
        assert await reader.get_org("later") is None
    async with store.read() as reader:
        assert await reader.get_org("later") is not None


async def test_a_read_transaction_refuses_writes(store: MemoryStore) -> None:
    async with store.read() as reader:
        with pytest.raises(ReadOnlyViolation):
            await reader.insert_org(OrgRecord("x", "x", reader.now))


async def test_records_are_copied_in_and_out(
    store: MemoryStore, engine: Engine, world: World
) -> None:
    detail = await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("a")))
    )
    detail.items[0].depends_on.append("mutated")  # the caller's copy
    async with store.read() as reader:
        item = await reader.get_item(detail.items[0].item_id)
        assert item is not None
        item.inputs["x"] = 1  # a reader's copy
        again = await reader.get_item(item.item_id)
    assert again is not None and again.depends_on == [] and again.inputs == {}


async def test_duplicate_keys_are_refused_like_the_database(store: MemoryStore) -> None:
    async with store.write() as tx:
        await tx.insert_org(OrgRecord("dup", "x", tx.now))
    with pytest.raises(AlreadyExists):
        async with store.write() as tx:
            await tx.insert_org(OrgRecord("dup", "y", tx.now))


async def test_two_live_attempts_of_one_item_fail_loudly(
    store: MemoryStore, engine: Engine, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    # A broken invariant is a bug, not a conflict: INTERNAL, logged with the constraint's name.
    await engine.lanes.create_lane(
        world.worker,
        CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("a", exclusive_key="k"))),
    )
    (lease,) = await engine.leasing.lease(
        world.worker,
        LeaseInput(coordinator_id=world.cid, ask=LeaseAsk("w1", "codex", 1, 60, 0, None)),
    )
    twin = replace(lease.attempt, lease_id="ls_twin", exclusive_key="")
    with pytest.raises(Internal):
        async with store.write(world.cid) as tx:
            await tx.insert_attempts([twin])
    assert "uq_attempts_one_live_per_item" in caplog.text
    other_item = await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("b")))
    )
    thief = replace(lease.attempt, lease_id="ls_thief", item_id=other_item.items[0].item_id)
    with pytest.raises(Internal):
        async with store.write(world.cid) as tx:
            await tx.insert_attempts([thief])
    assert "pk_exclusive_holds" in caplog.text
    # Ending the holder frees the key; the ended attempt no longer counts as live.
    async with store.write(world.cid) as tx:
        ended = replace(lease.attempt, status=AttemptStatus.RELEASED)
        await tx.update_attempts([ended])
        await tx.insert_attempts([replace(thief, lease_id="ls_next")])
        assert await tx.live_exclusive_holders(world.cid, ["k"]) == {"k": "ls_next"}


async def test_writes_are_serialised(store: MemoryStore, clock: ManualClock) -> None:
    import asyncio

    order: list[str] = []

    async def writer(name: str) -> None:
        async with store.write() as tx:
            order.append(f"{name}-in")
            await asyncio.sleep(0.01)
            await tx.insert_org(OrgRecord(name, name, tx.now))
            order.append(f"{name}-out")

    await asyncio.gather(writer("a"), writer("b"))
    assert order in (["a-in", "a-out", "b-in", "b-out"], ["b-in", "b-out", "a-in", "a-out"])


async def test_claim_order_and_expiry_queries(
    store: MemoryStore, engine: Engine, world: World, clock: ManualClock
) -> None:
    await engine.lanes.create_lane(
        world.worker,
        CreateLaneInput(
            coordinator_id=world.cid,
            spec=lane_spec(task("a", priority=1), task("b", priority=3), task("c", priority=1)),
        ),
    )
    async with store.write(world.cid) as tx:
        found = await tx.claim_candidates(ClaimScan(world.cid, ("codex",), tx.now, None, 10))
        assert [i.key for i in found.items] == ["b", "a", "c"]
        after = (found.items[0].priority, 0, found.items[0].seq)
        rest = await tx.claim_candidates(ClaimScan(world.cid, ("codex",), tx.now, after, 10))
        assert [i.key for i in rest.items] == ["a", "c"]
    granted = await engine.leasing.lease(
        world.worker,
        LeaseInput(coordinator_id=world.cid, ask=LeaseAsk("w1", "codex", 2, 30, 0, None)),
    )
    clock.advance(timedelta(seconds=30))
    async with store.write(world.cid) as tx:
        ended = await tx.end_expired_leases(world.cid, tx.now, 10)
        assert {e.attempt.lease_id for e in ended} == {g.attempt.lease_id for g in granted}
