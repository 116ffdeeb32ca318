"""The ready queue (migration 0016): triggers on ``items`` keep one ``ready_items`` row per
QUEUED item, on PostgreSQL and SQLite, whoever writes, with its lane's turn (0017); and because
no index of ``items`` names its state any more, the sweep's requeue and a lease are HOT updates
on PostgreSQL (checked with the transaction's own statistics,
``pg_stat_get_xact_tuples_hot_updated``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.contract.records import T0, at, attempt, item, lane, seed_coordinator, seed_lane
from tests.support.databases import PostgresDatabases, SqliteDatabases
from workcoord.coordinator.domain.model import ItemState
from workcoord.coordinator.storage.migrate import MIGRATIONS, upgrade_async
from workcoord.coordinator.storage.sql import SqlStore, make_engine, normalize_url
from workcoord.kit.clock import ManualClock

QUEUE_COLUMNS = "item_id, coordinator_id, worker_class, priority, seq, lane_id, held, not_before"
STATES = [ItemState.QUEUED, ItemState.WAITING, ItemState.LEASED, ItemState.SUCCEEDED]


@pytest.fixture
async def sql_store(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> AsyncIterator[SqlStore]:
    url = await (pg_databases if backend == "postgres" else sqlite_databases).create("queue")
    store = SqlStore(make_engine(url), ManualClock(T0))
    try:
        yield store
    finally:
        await store.close()
        if backend == "postgres":
            await pg_databases.drop(url)


async def _queue(store: SqlStore) -> set[tuple[Any, ...]]:
    async with store.read() as reader:
        rows = await reader.conn.execute(text(f"SELECT {QUEUE_COLUMNS} FROM ready_items"))
        return {tuple(row) for row in rows}


async def _queued_items(store: SqlStore) -> set[tuple[Any, ...]]:
    async with store.read() as reader:
        rows = await reader.conn.execute(
            text(f"SELECT {QUEUE_COLUMNS} FROM items WHERE state = 'QUEUED'")
        )
        return {tuple(row) for row in rows}


async def test_the_queue_holds_exactly_the_queued_items_whoever_writes(sql_store: SqlStore) -> None:
    await seed_coordinator(sql_store)
    items = [
        item(f"it_{n}", "ln_a", seq=n, priority=n % 3, state=STATES[n % len(STATES)])
        for n in range(12)
    ]
    await seed_lane(sql_store, *items)
    assert await _queue(sql_store) == await _queued_items(sql_store)
    assert len(await _queue(sql_store)) == 3
    # Raw writes, as an older release or an operator would make them: into and out of the
    # queue, a queued item re-prioritised, one deleted, and a change the queue ignores.
    statements = [
        "UPDATE items SET state = 'QUEUED' WHERE item_id IN ('it_1', 'it_2')",
        "UPDATE items SET state = 'LEASED' WHERE item_id = 'it_4'",
        "UPDATE items SET priority = 7 WHERE item_id = 'it_8'",
        "UPDATE items SET title = 'renamed' WHERE item_id = 'it_0'",
        "UPDATE items SET held = true WHERE item_id = 'it_2'",
        "DELETE FROM items WHERE item_id = 'it_1'",
    ]
    async with sql_store.write("wc_a") as tx:
        for statement in statements:
            await tx.conn.execute(text(statement))
    queue = await _queue(sql_store)
    assert queue == await _queued_items(sql_store)
    assert {row[0] for row in queue} == {"it_0", "it_2", "it_8"}
    assert ("it_8", "wc_a", "codex", 7, 8, "ln_a", False, None) in queue
    assert ("it_2", "wc_a", "codex", 2, 2, "ln_a", True, None) in queue


async def test_a_sweep_requeues_through_the_queue(sql_store: SqlStore) -> None:
    await seed_coordinator(sql_store)
    leased = [
        replace(item(f"it_{n}", "ln_a", seq=n, state=ItemState.LEASED), current_lease_id=f"ls_{n}")
        for n in range(6)
    ]
    await seed_lane(sql_store, *leased)
    async with sql_store.write("wc_a") as tx:
        await tx.insert_attempts(
            [attempt(f"ls_{n}", leased[n], expire_time=at(5)) for n in range(6)]
        )
    assert await _queue(sql_store) == set()
    async with sql_store.write("wc_a") as tx:
        expired = await tx.end_expired_leases("wc_a", at(10), 100)
        await tx.write_retries(
            [
                replace(e.item, state=ItemState.QUEUED, current_lease_id="", not_before=at(20))
                for e in expired
                if e.item is not None
            ]
        )
    assert len(await _queue(sql_store)) == 6
    assert await _queue(sql_store) == await _queued_items(sql_store)
    # The claim reads the queue: nothing before the backoff ends, all six after it.
    async with sql_store.read() as reader:
        assert not await reader.has_ready("wc_a", ("codex",), at(15))
        assert await reader.has_ready("wc_a", ("codex",), at(20))


async def _counts(tx: Any) -> tuple[int, int]:
    row = await tx.conn.execute(
        text(
            "SELECT pg_stat_get_xact_tuples_updated('items'::regclass), "
            "pg_stat_get_xact_tuples_hot_updated('items'::regclass)"
        )
    )
    updated, hot = row.one()
    return int(updated), int(hot)


async def _updates(tx: Any, before: tuple[int, int]) -> tuple[int, int]:
    """Items updated, and HOT-updated, by this transaction: the backend's pending counts may
    still hold earlier transactions' (flushed at most once a second), so the difference."""
    updated, hot = await _counts(tx)
    return updated - before[0], hot - before[1]


COUNT = 40


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_sweeps_requeue_is_a_hot_update(sql_store: SqlStore) -> None:
    """LEASED → QUEUED through the sweep's port methods rewrites no index of ``items``: every
    update is HOT (``items`` keeps room on its pages for a new version of each row). Before
    0016 ``state`` sat in ``ix_items_ready``'s predicate and none was."""
    await seed_coordinator(sql_store)
    leased = [
        replace(item(f"it_{n}", "ln_a", seq=n, state=ItemState.LEASED), current_lease_id=f"ls_{n}")
        for n in range(COUNT)
    ]
    await seed_lane(sql_store, *leased)
    async with sql_store.write("wc_a") as tx:
        await tx.insert_attempts(
            [attempt(f"ls_{n}", leased[n], expire_time=at(5)) for n in range(COUNT)]
        )
    async with sql_store.write("wc_a") as tx:
        before = await _counts(tx)
        expired = await tx.end_expired_leases("wc_a", at(10), 1000)
        requeued = [
            replace(e.item, state=ItemState.QUEUED, current_lease_id="", not_before=None)
            for e in expired
            if e.item is not None
        ]
        await tx.write_retries(requeued)
        assert await _updates(tx, before) == (COUNT, COUNT)
    assert len(await _queue(sql_store)) == COUNT


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_lease_is_a_hot_update(sql_store: SqlStore) -> None:
    """QUEUED → LEASED of every item of a page in one transaction: all HOT, and the queue is
    left empty."""
    await seed_coordinator(sql_store)
    await seed_lane(sql_store, *(item(f"it_{n}", "ln_a", seq=n) for n in range(COUNT)))
    assert len(await _queue(sql_store)) == COUNT
    async with sql_store.write("wc_a") as tx:
        before = await _counts(tx)
        await tx.conn.execute(
            text("UPDATE items SET state = 'LEASED', current_lease_id = 'ls', update_time = :t"),
            {"t": T0 + timedelta(seconds=1)},
        )
        assert await _updates(tx, before) == (COUNT, COUNT)
    assert await _queue(sql_store) == set()


def _downgrade(url: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    command.downgrade(config, revision)


async def test_0016_downgrades_and_backfills_the_queue_on_upgrade(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> None:
    """Down to 0015 (``ix_items_ready`` back, the queue and its triggers gone), items written
    there by code that knows no queue, then up again: the backfill lists exactly the QUEUED
    items and the triggers follow later writes."""
    url = await (pg_databases if backend == "postgres" else sqlite_databases).create("down")
    store = SqlStore(make_engine(url), ManualClock(T0))
    try:
        await seed_coordinator(store)
        await seed_lane(
            store,
            *(item(f"it_{n}", "ln_a", seq=n, state=STATES[n % len(STATES)]) for n in range(8)),
        )
    finally:
        await store.close()
    await asyncio.to_thread(_downgrade, url, "0015")
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            names = await conn.run_sync(
                lambda sync: (
                    set(inspect(sync).get_table_names()),
                    {i["name"] for i in inspect(sync).get_indexes("items")},
                )
            )
            assert "ready_items" not in names[0]
            assert "ix_items_ready" in names[1]
            # The release before knows no queue: its writes touch items only.
            await conn.execute(text("UPDATE items SET state = 'QUEUED' WHERE item_id = 'it_2'"))
    finally:
        await engine.dispose()
    await upgrade_async(url)
    store = SqlStore(make_engine(url), ManualClock(T0))
    try:
        assert {row[0] for row in await _queue(store)} == {"it_0", "it_2", "it_4"}
        assert await _queue(store) == await _queued_items(store)
        async with store.write("wc_a") as tx:
            await tx.conn.execute(text("UPDATE items SET state = 'LEASED' WHERE item_id = 'it_0'"))
        assert {row[0] for row in await _queue(store)} == {"it_2", "it_4"}
    finally:
        await store.close()
        if backend == "postgres":
            await pg_databases.drop(url)


async def _turns(store: SqlStore) -> dict[str, int]:
    async with store.read() as reader:
        rows = await reader.conn.execute(text("SELECT item_id, served_turn FROM ready_items"))
        return {str(item_id): int(turn) for item_id, turn in rows}


async def test_the_queue_rows_hold_their_lanes_turn_whoever_writes(sql_store: SqlStore) -> None:
    """Raw writes, as a release before 0017 would make them: a lane's turn set in ``lanes``
    only, an item queued by its state only, and a queue row inserted without a turn (the
    sweep's set statement of 0016)."""
    await seed_coordinator(sql_store)
    await seed_lane(sql_store, item("it_a1", "ln_a", seq=1), item("it_a2", "ln_a", seq=2))
    await seed_lane(
        sql_store,
        item("it_b1", "ln_b", seq=3),
        item("it_b2", "ln_b", seq=4, state=ItemState.LEASED),
        item("it_b3", "ln_b", seq=5, state=ItemState.LEASED),
        record=lane("ln_b"),
    )
    assert await _turns(sql_store) == {"it_a1": 0, "it_a2": 0, "it_b1": 0}
    async with sql_store.write("wc_a") as tx:
        await tx.conn.execute(text("UPDATE lanes SET served_turn = 7 WHERE lane_id = 'ln_b'"))
        await tx.conn.execute(text("UPDATE items SET state = 'QUEUED' WHERE item_id = 'it_b2'"))
        await tx.conn.execute(text("UPDATE items SET state = 'QUEUED' WHERE item_id = 'it_b3'"))
        await tx.conn.execute(text("DELETE FROM ready_items WHERE item_id = 'it_b3'"))
        await tx.conn.execute(
            text(
                "INSERT INTO ready_items (item_id, coordinator_id, worker_class, lane_id, "
                "priority, seq, held, not_before) SELECT item_id, coordinator_id, worker_class, "
                "lane_id, priority, seq, held, not_before FROM items WHERE item_id = 'it_b3'"
            )
        )
    assert await _turns(sql_store) == {"it_a1": 0, "it_a2": 0, "it_b1": 7, "it_b2": 7, "it_b3": 7}
    # A lane's update that leaves its turn alone leaves its queue rows alone.
    async with sql_store.write("wc_a") as tx:
        await tx.conn.execute(text("UPDATE lanes SET title = 'renamed' WHERE lane_id = 'ln_a'"))
        await tx.mark_lanes_served(["ln_a"], 9)
    assert await _turns(sql_store) == {"it_a1": 9, "it_a2": 9, "it_b1": 7, "it_b2": 7, "it_b3": 7}


async def test_0017_downgrades_and_backfills_the_turns_on_upgrade(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> None:
    """Down to 0016 (no turn in the queue), a lane served there by code that knows no turn
    in the queue, then up again: the backfill copies each lane's turn and the triggers
    follow later turns."""
    url = await (pg_databases if backend == "postgres" else sqlite_databases).create("down17")
    store = SqlStore(make_engine(url), ManualClock(T0))
    try:
        await seed_coordinator(store)
        await seed_lane(store, item("it_a1", "ln_a", seq=1), item("it_a2", "ln_a", seq=2))
        await seed_lane(store, item("it_b1", "ln_b", seq=3), record=lane("ln_b"))
    finally:
        await store.close()
    await asyncio.to_thread(_downgrade, url, "0016")
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in inspect(sync).get_columns("ready_items")}
            )
            assert "served_turn" not in columns
            await conn.execute(text("UPDATE lanes SET served_turn = 4 WHERE lane_id = 'ln_b'"))
            await conn.execute(text("UPDATE items SET priority = 2 WHERE item_id = 'it_b1'"))
    finally:
        await engine.dispose()
    await upgrade_async(url)
    store = SqlStore(make_engine(url), ManualClock(T0))
    try:
        assert await _turns(store) == {"it_a1": 0, "it_a2": 0, "it_b1": 4}
        async with store.write("wc_a") as tx:
            await tx.mark_lanes_served(["ln_a"], 5)
        assert await _turns(store) == {"it_a1": 5, "it_a2": 5, "it_b1": 4}
    finally:
        await store.close()
        if backend == "postgres":
            await pg_databases.drop(url)
