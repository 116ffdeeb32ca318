"""The invariant checker finds planted violations (so an empty answer means something)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tests.support.invariants import check_invariants, replay_budgets, replay_capacity
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import CreateLaneInput, LeaseInput
from workcoord.coordinator.domain.model import (
    AttemptStatus,
    Event,
    EventType,
    Item,
    ItemState,
    NewEvent,
)
from workcoord.coordinator.domain.ports import Tx
from workcoord.coordinator.domain.specs import LeaseAsk
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.clock import ManualClock

from .harness import World, lane_spec, run_identity, task

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def _violations(store: MemoryStore, world: World, *private: str) -> list[str]:
    async with store.read() as reader:
        return await check_invariants(reader, world.cid, private_values=private)


async def _setup(engine: Engine, world: World, clock: ManualClock) -> str:
    await engine.lanes.create_lane(
        world.worker,
        CreateLaneInput(
            coordinator_id=world.cid,
            spec=lane_spec(
                task("a", exclusive_key="repo:x"), task("b"), inputs={"p": "secret-123"}
            ),
        ),
    )
    granted = await engine.leasing.lease(
        world.worker,
        LeaseInput(
            coordinator_id=world.cid, ask=LeaseAsk("w1", "codex", 1, 60, 0, run_identity(clock))
        ),
    )
    return granted[0].attempt.lease_id


async def _leased_item(tx: Tx, lease_id: str) -> Item:
    """The item ``lease_id`` holds, as ``tx`` sees it."""
    attempt = await tx.get_attempt(lease_id)
    assert attempt is not None
    item = await tx.get_item(attempt.item_id)
    assert item is not None
    return item


async def test_a_healthy_coordinator_has_no_violations(
    store: MemoryStore, engine: Engine, world: World, clock: ManualClock
) -> None:
    await _setup(engine, world, clock)
    assert await _violations(store, world, "secret-123") == []


async def test_a_revision_gap_is_found(
    store: MemoryStore, engine: Engine, world: World, clock: ManualClock
) -> None:
    await _setup(engine, world, clock)
    async with store.write(world.cid) as tx:
        assert tx.coordinator is not None
        tx.coordinator.revision += 1  # skip one
        await tx.append(tx.coordinator, [NewEvent(EventType.LANE_PAUSED)], "test")
    found = await _violations(store, world)
    assert any("gap-free" in v for v in found)


async def test_an_item_state_out_of_step_with_its_attempt_is_found(
    store: MemoryStore, engine: Engine, world: World, clock: ManualClock
) -> None:
    lease_id = await _setup(engine, world, clock)
    async with store.write(world.cid) as tx:
        item = await _leased_item(tx, lease_id)
        await tx.update_items([replace(item, state=ItemState.QUEUED)])
    found = await _violations(store, world)
    assert any("still names the lease" in v for v in found)
    assert any("has live attempts" in v for v in found)


async def test_a_wrong_attempt_count_and_a_stuck_waiting_item_are_found(
    store: MemoryStore, engine: Engine, world: World, clock: ManualClock
) -> None:
    lease_id = await _setup(engine, world, clock)
    async with store.write(world.cid) as tx:
        item = await _leased_item(tx, lease_id)
        await tx.update_items([replace(item, attempt_count=3)])
        lanes = await tx.lane_items([item.lane_id])
        other = next(i for i in lanes if i.item_id != item.item_id)
        await tx.update_items([replace(other, state=ItemState.WAITING)])
    found = await _violations(store, world)
    assert any("attempt_count 3 != 1" in v for v in found)
    assert any("waits although every dependency succeeded" in v for v in found)


async def test_a_private_value_in_an_event_is_found(
    store: MemoryStore, engine: Engine, world: World, clock: ManualClock
) -> None:
    await _setup(engine, world, clock)
    async with store.write(world.cid) as tx:
        assert tx.coordinator is not None
        await tx.append(
            tx.coordinator, [NewEvent(EventType.LANE_PAUSED, data={"why": "secret-123"})], "t"
        )
    assert any("private value" in v for v in await _violations(store, world, "secret-123"))


async def test_a_stale_hold_and_capacity_overflow_are_found(
    store: MemoryStore, engine: Engine, world: World, clock: ManualClock
) -> None:
    lease_id = await _setup(engine, world, clock)
    async with store.write(world.cid) as tx:
        attempt = await tx.get_attempt(lease_id)
        assert attempt is not None
        # Bypass update_attempts (which drops the hold): the attempt ends, the hold stays.
        tx.tables.attempts[lease_id] = replace(attempt, status=AttemptStatus.COMPLETED)
    found = await _violations(store, world)
    assert any("not live" in v for v in found)


def _event(
    revision: int, type_: EventType, item: str = "", lease: str = "", **data: object
) -> Event:
    return Event("wc", revision, type_, T0, "ln", item, lease, "test", dict(data))


def test_replay_capacity_reports_overflow_and_double_leases() -> None:
    events = [
        _event(1, EventType.ITEM_CREATED, "i1", workerClass="codex"),
        _event(2, EventType.ITEM_CREATED, "i2", workerClass="codex"),
        _event(3, EventType.ITEM_LEASED, "i1", "l1"),
        _event(4, EventType.ITEM_LEASED, "i2", "l2"),
        _event(5, EventType.ITEM_SUCCEEDED, "i2", "l2"),
        _event(6, EventType.ITEM_LEASED, "i1", "l3"),
    ]
    assert replay_capacity(events, {"codex": 2}) == [
        "revision 6: item i1 leased as l3 while l1 is live"
    ]
    found = replay_capacity(events, {"codex": 1})
    assert "revision 4: class 'codex' has 2 live leases, capacity 1" in found
    # A capacity lowered later does not make earlier grants violations.
    assert not any(
        "revision 4" in v for v in replay_capacity(events, [(0, {"codex": 2}), (5, {"codex": 1})])
    )
    # Cancelling an item ends its lease.
    cancelled = [
        *events[:3],
        _event(4, EventType.ITEM_CANCELLED, "i1"),
        _event(5, EventType.ITEM_LEASED, "i1", "l9"),
    ]
    assert replay_capacity(cancelled, {"codex": 1}) == []


def test_replay_budgets_reports_a_lease_of_a_spent_budgets_work() -> None:
    exhausted = _event(2, EventType.BUDGET_EXHAUSTED, scope="lane")
    leased = _event(3, EventType.ITEM_LEASED, "it_a", "ls_b")
    [violation] = replay_budgets([exhausted, leased])
    assert "ls_b" in violation and "revision 2" in violation
    raised = _event(3, EventType.LANE_UPDATED, fields=["budget"])
    after = _event(4, EventType.ITEM_LEASED, "it_a", "ls_c")
    assert replay_budgets([exhausted, raised, after]) == []
    # The day budget: every lane's work, that UTC day.
    day = Event("wc", 2, EventType.BUDGET_EXHAUSTED, T0, "", "", "", "test", {})
    other = Event("wc", 3, EventType.ITEM_LEASED, T0, "ln_other", "it_b", "ls_d", "test", {})
    assert len(replay_budgets([day, other])) == 1
    tomorrow = replace(other, time=T0 + timedelta(days=1))
    assert replay_budgets([day, tomorrow]) == []
