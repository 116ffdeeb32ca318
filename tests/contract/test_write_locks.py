"""Who waits for whom among the writers of one work coordinator (``WriteLock``).

On PostgreSQL a Lease's claim (``CLAIM``: the coordinator's row) and a group of worker writes
(``WORKER_WRITES``: an advisory lock, the row only at its flush or before anything off its
hot path) run side by side; every other writer (``ALL``) waits for both. The group's events
are numbered when it takes the row, so the log stays gap-free in commit order. The memory
and SQLite stores serialize every writer, so there the cases run one transaction after the
other and only the outcome (revisions, rows) is checked; on PostgreSQL each wait (or its
absence) is proven before the first transaction commits."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, cast

import pytest
from sqlalchemy import text

from workcoord.coordinator.domain.model import EventType, NewEvent
from workcoord.coordinator.domain.ports import Store, WriteLock

from .records import at, item, seed_leased
from .waits import WAIT_SECONDS, waits_for_a_lock

IT_A = item("it_a", "ln_a", seq=1)


async def _seed(store: Store) -> None:
    await seed_leased(store, IT_A, "ls_a", at(600))


async def _claim_logs(store: Store, *types: EventType) -> None:
    """A claim's transaction that logs events of ``types``."""
    async with store.write("wc_a", WriteLock.CLAIM) as tx:
        assert tx.coordinator is not None
        events = [NewEvent(t, item_id="it_a") for t in types]
        tx.coordinator.revision = await tx.append(tx.coordinator, events, "claim")


async def _events(store: Store) -> list[tuple[int, EventType, str]]:
    async with store.read() as reader:
        events = await reader.list_events("wc_a", 0, 100, "", "")
        stored = await reader.get_coordinator("wc_a")
    assert stored is not None and stored.revision == len(events)
    return [(e.revision, e.type, e.actor) for e in events]


@pytest.mark.port("write", "attempts_with_items", "append", "update_attempts")
async def test_a_claim_commits_beside_an_open_group_whose_events_follow_it(
    store: Store, store_kind: str
) -> None:
    await _seed(store)
    async with store.write("wc_a", WriteLock.WORKER_WRITES) as tx:
        assert tx.coordinator is not None
        found = await tx.attempts_with_items(["ls_a"])
        attempt_a, _ = found["ls_a"]
        assert attempt_a is not None
        await tx.update_attempts([replace(attempt_a, progress="half")])
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_SUCCEEDED, item_id="it_a")], "group"
        )
        if store_kind == "postgres":
            # Not queued behind the group: the claim commits while the group is open.
            await asyncio.wait_for(
                _claim_logs(store, EventType.ITEM_LEASED, EventType.ITEM_STARTED), WAIT_SECONDS
            )
    if store_kind != "postgres":
        await _claim_logs(store, EventType.ITEM_LEASED, EventType.ITEM_STARTED)
    events = await _events(store)
    assert [revision for revision, _, _ in events] == [1, 2, 3]
    if store_kind == "postgres":
        # Numbered when the group took the row, after the claim committed.
        assert tx.coordinator.revision == 3
        assert events[-1] == (3, EventType.ITEM_SUCCEEDED, "group")
    async with store.read() as reader:
        stored = await reader.get_attempt("ls_a")
    assert stored is not None and stored.progress == "half"


@pytest.mark.port("write", "attempts_with_items", "get_coordinator")
async def test_every_other_writer_waits_for_an_open_group(store: Store, store_kind: str) -> None:
    await _seed(store)
    later: asyncio.Task[int] | None = None

    async def other_writer() -> int:
        async with store.write("wc_a") as tx:  # WriteLock.ALL: an admin, a cancel, a sweep
            assert tx.coordinator is not None
            return tx.coordinator.revision

    async with store.write("wc_a", WriteLock.WORKER_WRITES) as tx:
        assert tx.coordinator is not None
        await tx.attempts_with_items(["ls_a"])
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_SUCCEEDED, item_id="it_a")], "group"
        )
        if store_kind == "postgres":
            later = asyncio.create_task(other_writer())
            await waits_for_a_lock(store)
            assert not later.done()
    # The writer that waited reads the coordinator as the group left it.
    seen = await later if later is not None else await other_writer()
    assert seen == 1
    async with store.read() as reader:
        assert (c := await reader.get_coordinator("wc_a")) is not None and c.revision == 1


@pytest.mark.port("write", "lane_items", "append")
async def test_a_group_off_its_hot_path_holds_the_row_and_a_claim_waits(
    store: Store, store_kind: str
) -> None:
    await _seed(store)
    claim: asyncio.Task[None] | None = None
    async with store.write("wc_a", WriteLock.WORKER_WRITES) as tx:
        assert tx.coordinator is not None
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_SUCCEEDED, item_id="it_a")], "group"
        )
        # Off the hot path (a STANDARD lane's next step, a close-out): the row comes first,
        # and the events appended so far are numbered with it.
        assert [i.item_id for i in await tx.lane_items(["ln_a"])] == ["it_a"]
        assert tx.coordinator.revision == 1
        if store_kind == "postgres":
            claim = asyncio.create_task(_claim_logs(store, EventType.ITEM_LEASED))
            await waits_for_a_lock(store)
            assert not claim.done()
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.LANE_DONE, lane_id="ln_a")], "group"
        )
    if claim is not None:
        await claim
    else:
        await _claim_logs(store, EventType.ITEM_LEASED)
    assert await _events(store) == [
        (1, EventType.ITEM_SUCCEEDED, "group"),
        (2, EventType.LANE_DONE, "group"),
        (3, EventType.ITEM_LEASED, "claim"),
    ]


@pytest.mark.parametrize("store_kind", ["postgres"])  # row lock modes: PostgreSQL's alone
@pytest.mark.port("write", "attempts_with_items")
async def test_a_writer_of_an_earlier_release_waits_for_an_open_group(store: Store) -> None:
    """During a rollout, replicas of the release before these locks take ``FOR UPDATE`` of the
    row for every write, with no advisory lock: the group's ``FOR KEY SHARE`` keeps them out
    until it commits, as it keeps out the writers of this release that take ``ALL``."""
    await _seed(store)

    engine = cast(Any, store).inner.engine

    async def earlier_release() -> int:
        async with engine.connect() as conn, conn.begin():
            statement = text(
                "SELECT revision FROM work_coordinators WHERE coordinator_id = 'wc_a' FOR UPDATE"
            )
            return int((await conn.execute(statement)).scalar_one())

    async with store.write("wc_a", WriteLock.WORKER_WRITES) as tx:
        assert tx.coordinator is not None
        await tx.attempts_with_items(["ls_a"])
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_SUCCEEDED, item_id="it_a")], "group"
        )
        waiting = asyncio.create_task(earlier_release())
        await waits_for_a_lock(store)
        assert not waiting.done()
    assert await waiting == 1
