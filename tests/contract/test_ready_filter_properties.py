"""The stores' ready filter against the domain's gates, on random items, lanes and clocks.

``leasability.holding_gates`` decides which gates hold an item; a store evaluates the ones of
``STORE_GATES`` (state, the lane's pause and blockers through the item's ``held`` mirror,
backoff) and the claim the rest in Python. Here the memory store, SQLite and PostgreSQL must
return, for ``claim_candidates`` (in claim order, also page by page), ``has_ready`` and
``escalation_candidates``, exactly the items of random lanes that no store-level gate holds,
the gates read from each item's lane (its pause, its open blockers), as the engine keeps the
mirror. Each example seeds its own work coordinator in the case's one database.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workcoord.coordinator.domain.leasability import (
    AWAITING_LEASE,
    STORE_GATES,
    LaneHold,
    Surroundings,
    holding_gates,
)
from workcoord.coordinator.domain.model import Item, ItemState
from workcoord.coordinator.domain.ports import ClaimCursor, ClaimScan, Store

from .records import T0, coordinator, item, lane, seed_coordinator

CLASSES = ("codex", "person")
# Backoffs around the clock, often at its edge (one ending exactly now is over), in µs.
_OFFSETS = st.one_of(
    st.sampled_from([0, 1, -1, 2_000_000, -2_000_000]),
    st.integers(-3_000_000, 3_000_000),
).map(lambda us: timedelta(microseconds=us))
# Mostly open lanes and queued items, where the other gates decide.
_HOLDS = st.sampled_from(
    [LaneHold(), LaneHold(), LaneHold(paused=True), LaneHold(blocked=True), LaneHold(True, True)]
)
_STATES = st.just(ItemState.QUEUED) | st.sampled_from(ItemState)
_EXAMPLES = itertools.count()


@dataclass(frozen=True)
class World:
    """Lanes (paused, open blockers) and their items, at ``now``."""

    holds: list[LaneHold]
    items: list[Item]
    now: datetime


@st.composite
def worlds(draw: st.DrawFn) -> World:
    holds = draw(st.lists(_HOLDS, min_size=1, max_size=4))
    now = T0 + timedelta(seconds=draw(st.integers(0, 3600)))
    records = []
    for seq in range(draw(st.integers(0, 12))):
        lane_index = draw(st.integers(0, len(holds) - 1))
        hold = holds[lane_index]
        offset = draw(st.none() | _OFFSETS)
        records.append(
            item(
                f"it{seq}",
                f"ln{lane_index}",
                seq=seq,
                priority=draw(st.integers(0, 2)),
                state=draw(_STATES),
                worker_class=draw(st.sampled_from(CLASSES)),
                held=hold.paused or hold.blocked,  # the engine's mirror of the lane's hold
                not_before=None if offset is None else now + offset,
                ready_time=now - timedelta(seconds=draw(st.integers(0, 60))),
            )
        )
    return World(holds, records, now)


def _open_at_store(record: Item, hold: LaneHold, now: datetime) -> bool:
    """The domain's answer: waiting for a lease, and no store-level gate closed."""
    closed = holding_gates(record, hold, Surroundings(now))
    return record.state in AWAITING_LEASE and not STORE_GATES.intersection(closed)


@pytest.mark.port("claim_candidates", "has_ready", "escalation_candidates")
@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    # One store per case: each example seeds a work coordinator of its own in it.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(world=worlds())
async def test_stores_select_exactly_the_items_no_store_gate_holds(
    store: Store, world: World
) -> None:
    n = next(_EXAMPLES)
    cid = f"wc_p{n}"
    await seed_coordinator(store, coordinator(cid, org_slug=f"props-{n}"))
    items = [
        replace(i, item_id=f"{cid}_{i.item_id}", lane_id=f"{cid}_{i.lane_id}", coordinator_id=cid)
        for i in world.items
    ]
    async with store.write(cid) as tx:
        for index, hold in enumerate(world.holds):
            await tx.insert_lane(replace(lane(f"{cid}_ln{index}", cid), paused=hold.paused))
        await tx.insert_items(items)
    hold_of = {f"{cid}_ln{index}": hold for index, hold in enumerate(world.holds)}
    expected = [i for i in items if _open_at_store(i, hold_of[i.lane_id], world.now)]
    expected.sort(key=lambda i: (-i.priority, i.seq))

    async with store.write(cid) as tx:
        for worker_class in CLASSES:
            wanted = [i.item_id for i in expected if i.worker_class == worker_class]
            found = await tx.claim_candidates(ClaimScan(cid, (worker_class,), world.now, None, 100))
            assert [i.item_id for i in found.items] == wanted, worker_class
            assert await tx.has_ready(cid, (worker_class,), world.now) == bool(wanted)
            # Page by page (two at a time, after the cursor of the page before): the same.
            paged: list[str] = []
            after: ClaimCursor | None = None
            while (
                page := await tx.claim_candidates(
                    ClaimScan(cid, (worker_class,), world.now, after, 2)
                )
            ).items:
                paged.extend(i.item_id for i in page.items)
                after = page.after
            assert paged == wanted, worker_class
        overdue = await tx.escalation_candidates(cid, world.now, world.now, 100)
        assert sorted(i.item_id for i in overdue) == sorted(i.item_id for i in expected)
