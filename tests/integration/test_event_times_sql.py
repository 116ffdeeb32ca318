"""The time of a work coordinator's last event comes with its lock (``LOCK_COORDINATOR``): a
write that follows another process's write stamps its events after that one's without reading
the event log again, and a write that waited for the lock reads it as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from sqlalchemy import event, text

from tests.contract.records import at, seed_coordinator
from workcoord.coordinator.domain.model import EventType, NewEvent
from workcoord.coordinator.storage.sql import SqlStore, make_engine
from workcoord.kit.clock import ManualClock

pytestmark = pytest.mark.pg


@pytest.fixture
async def stores(pg_url: str) -> AsyncIterator[tuple[SqlStore, SqlStore, ManualClock]]:
    """Two stores on one database, as two coordinator processes; the second's clock is 30 s
    behind the first's."""
    ahead = ManualClock(at(30))
    behind = ManualClock(at(0))
    first = SqlStore(make_engine(pg_url, pool_size=2), ahead)
    second = SqlStore(make_engine(pg_url, pool_size=2), behind)
    try:
        yield first, second, behind
    finally:
        await first.close()
        await second.close()


async def _append(store: SqlStore, type: EventType) -> None:
    async with store.write("wc_a") as tx:
        assert tx.coordinator is not None
        await tx.append(tx.coordinator, [NewEvent(type)], "w")


def _event_log_reads(store: SqlStore) -> tuple[list[str], Callable[..., None]]:
    statements: list[str] = []

    def note(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith("SELECT EVENTS.TIME"):
            statements.append(statement)

    event.listen(store.engine.sync_engine, "before_cursor_execute", note)
    return statements, note


async def _until_waiting_for_a_lock(store: SqlStore) -> None:
    """Return once a session of this database waits for a row lock (the second writer)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    async with asyncio.timeout(30):
        while True:
            async with store.engine.connect() as conn:
                if (await conn.execute(query)).scalar_one():
                    return
            await asyncio.sleep(0.01)


async def test_a_write_after_another_process_reads_the_last_time_with_the_lock(
    stores: tuple[SqlStore, SqlStore, ManualClock],
) -> None:
    first, second, _ = stores
    await seed_coordinator(second)
    await _append(first, EventType.LANE_CREATED)  # at 30 s, by the process ahead
    reads, note = _event_log_reads(second)
    try:
        await _append(second, EventType.ITEM_QUEUED)  # its own clock says 0 s
    finally:
        event.remove(second.engine.sync_engine, "before_cursor_execute", note)
    assert reads == []  # no LAST_EVENT_TIME: the lock's read had it
    async with second.read() as reader:
        events = await reader.list_events("wc_a", 0, 10, "", "")
    assert [(e.revision, e.time) for e in events] == [(1, at(30)), (2, at(30))]


async def test_a_write_that_waited_for_the_lock_stamps_after_the_writer_it_waited_for(
    stores: tuple[SqlStore, SqlStore, ManualClock],
) -> None:
    """The lock's own look-up cannot see an event committed while it waited (its snapshot is
    older): the time is then read as before, never taken as missing."""
    first, second, _ = stores
    await seed_coordinator(second)
    await _append(first, EventType.LANE_CREATED)
    holding = asyncio.Event()
    release = asyncio.Event()

    async def hold_and_append() -> None:
        async with first.write("wc_a") as tx:
            assert tx.coordinator is not None
            await tx.append(tx.coordinator, [NewEvent(EventType.ITEM_QUEUED)], "w")
            holding.set()
            await release.wait()

    holder = asyncio.create_task(hold_and_append())
    await holding.wait()
    waiter = asyncio.create_task(_append(second, EventType.ITEM_LEASED))
    await _until_waiting_for_a_lock(first)
    release.set()
    await asyncio.gather(holder, waiter)
    async with second.read() as reader:
        events = await reader.list_events("wc_a", 0, 10, "", "")
    assert [(e.revision, e.time) for e in events] == [(1, at(30)), (2, at(30)), (3, at(30))]
