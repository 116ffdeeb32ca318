"""Who waits for whom among the writers of one work coordinator (``WriteLock``).

On PostgreSQL a Lease's claim (``CLAIM``: the claims' advisory lock and the coordinator's row;
``LARGE_CLAIM``: the advisory lock, the row only at its flush) and a group of worker writes
(``WORKER_WRITES``: its own advisory lock, the row only at its flush or, with the claims'
advisory lock, before anything off its hot path) run side by side; claims wait for each other,
and every other writer (``ALL``) waits for all of them. Events of a writer that takes the row
late are numbered when it does, so the log stays gap-free in commit order. The memory
and SQLite stores serialize every writer, so there the cases run one transaction after the
other and only the outcome (revisions, rows) is checked; on PostgreSQL each wait (or its
absence) is proven before the first transaction commits."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, cast

import pytest
from sqlalchemy import text

from workcoord.coordinator.domain.model import EventType, NewEvent, UsageScope
from workcoord.coordinator.domain.ports import Store, WriteLock

from .records import at, item, seed_leased
from .waits import WAIT_SECONDS, waits_for_a_lock

IT_A = item("it_a", "ln_a", seq=1)


async def _seed(store: Store) -> None:
    await seed_leased(store, IT_A, "ls_a", at(600))


CLAIMS = pytest.mark.parametrize("claim", [WriteLock.CLAIM, WriteLock.LARGE_CLAIM])


async def _claim_logs(store: Store, *types: EventType, lock: WriteLock = WriteLock.CLAIM) -> None:
    """A claim's transaction that logs events of ``types``."""
    async with store.write("wc_a", lock) as tx:
        assert tx.coordinator is not None
        events = [NewEvent(t, item_id="it_a") for t in types]
        tx.coordinator.revision = await tx.append(tx.coordinator, events, "claim")


async def _events(store: Store) -> list[tuple[int, EventType, str]]:
    async with store.read() as reader:
        events = await reader.list_events("wc_a", 0, 100, "", "")
        stored = await reader.get_coordinator("wc_a")
    assert stored is not None and stored.revision == len(events)
    return [(e.revision, e.type, e.actor) for e in events]


@CLAIMS
@pytest.mark.port("write", "attempts_with_items", "append", "update_attempts")
async def test_a_claim_commits_beside_an_open_group_whose_events_follow_it(
    store: Store, store_kind: str, claim: WriteLock
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
                _claim_logs(store, EventType.ITEM_LEASED, EventType.ITEM_STARTED, lock=claim),
                WAIT_SECONDS,
            )
    if store_kind != "postgres":
        await _claim_logs(store, EventType.ITEM_LEASED, EventType.ITEM_STARTED, lock=claim)
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


@CLAIMS
@pytest.mark.port("write", "lane_items", "append")
async def test_a_group_off_its_hot_path_holds_the_row_and_a_claim_waits(
    store: Store, store_kind: str, claim: WriteLock
) -> None:
    await _seed(store)
    waiting: asyncio.Task[None] | None = None
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
            waiting = asyncio.create_task(_claim_logs(store, EventType.ITEM_LEASED, lock=claim))
            await waits_for_a_lock(store)
            assert not waiting.done()
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.LANE_DONE, lane_id="ln_a")], "group"
        )
    if waiting is not None:
        await waiting
    else:
        await _claim_logs(store, EventType.ITEM_LEASED, lock=claim)
    assert await _events(store) == [
        (1, EventType.ITEM_SUCCEEDED, "group"),
        (2, EventType.LANE_DONE, "group"),
        (3, EventType.ITEM_LEASED, "claim"),
    ]


async def _group_logs(store: Store, *, off_hot_path: bool = False) -> None:
    """A group's transaction that logs ITEM_SUCCEEDED (after a read off its hot path)."""
    async with store.write("wc_a", WriteLock.WORKER_WRITES) as tx:
        assert tx.coordinator is not None
        if off_hot_path:
            await tx.lane_items(["ln_a"])
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_SUCCEEDED, item_id="it_a")], "group"
        )


@pytest.mark.port("write", "append")
async def test_a_group_flushes_beside_an_open_large_claim_whose_events_follow_it(
    store: Store, store_kind: str
) -> None:
    await _seed(store)
    async with store.write("wc_a", WriteLock.LARGE_CLAIM) as tx:
        assert tx.coordinator is not None
        tx.coordinator.revision = await tx.append(
            tx.coordinator,
            [NewEvent(t, item_id="it_a") for t in (EventType.ITEM_LEASED, EventType.ITEM_STARTED)],
            "claim",
        )
        if store_kind == "postgres":
            # The group takes the row and commits while the claim is still choosing.
            await asyncio.wait_for(_group_logs(store), WAIT_SECONDS)
    if store_kind != "postgres":
        await _group_logs(store)
    events = await _events(store)
    if store_kind == "postgres":
        # Numbered when the claim took the row, after the group committed.
        assert tx.coordinator.revision == 3
        assert events == [
            (1, EventType.ITEM_SUCCEEDED, "group"),
            (2, EventType.ITEM_LEASED, "claim"),
            (3, EventType.ITEM_STARTED, "claim"),
        ]
    else:
        assert [revision for revision, _, _ in events] == [1, 2, 3]


@pytest.mark.parametrize("store_kind", ["postgres"])  # lock waits: PostgreSQL's alone
@pytest.mark.parametrize(
    ("first", "then"),
    [
        (WriteLock.CLAIM, "group"),  # a claim of a few holds the row: the flush waits
        (WriteLock.LARGE_CLAIM, "claim"),  # claims take turns
        (WriteLock.LARGE_CLAIM, "large claim"),
        (WriteLock.CLAIM, "large claim"),
        (WriteLock.LARGE_CLAIM, "any other writer"),  # ALL
    ],
)
@pytest.mark.port("write", "append")
async def test_who_waits_for_an_open_claim(store: Store, first: WriteLock, then: str) -> None:
    await _seed(store)

    async def other_writer() -> None:
        async with store.write("wc_a") as tx:
            assert tx.coordinator is not None

    second = {
        "group": lambda: _group_logs(store),
        "claim": lambda: _claim_logs(store, EventType.ITEM_LEASED),
        "large claim": lambda: _claim_logs(
            store, EventType.ITEM_LEASED, lock=WriteLock.LARGE_CLAIM
        ),
        "any other writer": other_writer,
    }[then]
    async with store.write("wc_a", first) as tx:
        assert tx.coordinator is not None
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_LEASED, item_id="it_a")], "first claim"
        )
        waiting = asyncio.create_task(second())
        await waits_for_a_lock(store)
        assert not waiting.done()
    await waiting
    events = await _events(store)
    assert events[0] == (1, EventType.ITEM_LEASED, "first claim")


OFF_ITS_HOT_PATH = "the group goes off its hot path"
READ_BUDGETS = "the claim read its budgets"


@pytest.mark.parametrize("store_kind", ["postgres"])  # lock waits: PostgreSQL's alone
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(OFF_ITS_HOT_PATH, marks=pytest.mark.port("write", "append", "lane_items")),
        pytest.param(READ_BUDGETS, marks=pytest.mark.port("write", "append", "usage_totals")),
    ],
)
async def test_a_group_waits_for_an_open_large_claim_when(store: Store, case: str) -> None:
    """Off its hot path a group may write what a claim has locked (a close-out cancelling
    queued items): it keeps claims out first, or the two would wait for each other. And a
    claim reads what the budgets spent before it chooses: from that read on, a group's spend
    commits after the claim, or an item of a budget spent meanwhile could be leased after the
    spend committed (the invariant checker's rule 7)."""
    await _seed(store)
    async with store.write("wc_a", WriteLock.LARGE_CLAIM) as tx:
        assert tx.coordinator is not None
        if case == READ_BUDGETS:
            await tx.usage_totals("wc_a", UsageScope.LANE, "", ["ln_a"])
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_LEASED, item_id="it_a")], "claim"
        )
        waiting = asyncio.create_task(_group_logs(store, off_hot_path=case == OFF_ITS_HOT_PATH))
        await waits_for_a_lock(store)
        assert not waiting.done()
    await waiting
    assert await _events(store) == [
        (1, EventType.ITEM_LEASED, "claim"),
        (2, EventType.ITEM_SUCCEEDED, "group"),
    ]


@pytest.mark.parametrize("store_kind", ["postgres"])  # row lock modes: PostgreSQL's alone
@pytest.mark.parametrize("lock", [WriteLock.WORKER_WRITES, WriteLock.LARGE_CLAIM])
@pytest.mark.port("write", "attempts_with_items")
async def test_a_writer_of_an_earlier_release_waits_for_an_open_group_or_large_claim(
    store: Store, lock: WriteLock
) -> None:
    """During a rollout, replicas of the release before these locks take ``FOR UPDATE`` of the
    row for every write, with no advisory lock: the ``FOR KEY SHARE`` of a group or a large
    claim keeps them out until it commits, as it keeps out the writers of this release that
    take ``ALL``."""
    await _seed(store)

    engine = cast(Any, store).inner.engine

    async def earlier_release() -> int:
        async with engine.connect() as conn, conn.begin():
            statement = text(
                "SELECT revision FROM work_coordinators WHERE coordinator_id = 'wc_a' FOR UPDATE"
            )
            return int((await conn.execute(statement)).scalar_one())

    async with store.write("wc_a", lock) as tx:
        assert tx.coordinator is not None
        await tx.attempts_with_items(["ls_a"])
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_SUCCEEDED, item_id="it_a")], "writer"
        )
        waiting = asyncio.create_task(earlier_release())
        await waits_for_a_lock(store)
        assert not waiting.done()
    assert await waiting == 1
