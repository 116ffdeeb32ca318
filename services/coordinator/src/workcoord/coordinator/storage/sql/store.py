"""The SQL store: read and write transactions over one engine, on PostgreSQL or SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import cast

from sqlalchemy.ext.asyncio import AsyncEngine

from workcoord.coordinator.domain.model import Attempt, Coordinator, Item, UsageTotal
from workcoord.coordinator.domain.ports import WriteLock, extend_in_transaction, read_in_turn
from workcoord.kit.clock import Clock

from .accounts import AccountsSql
from .attempts import AttemptsSql
from .beside_claims import BesideClaims
from .coordinators import CoordinatorsSql
from .errors import storage_errors
from .follow_ups import FollowUpsSql
from .lanes_items import LanesItemsSql
from .recovery import RecoverySql
from .tenancy import TenancySql
from .tracker_connections import TrackerConnectionsSql
from .usage import UsageSql
from .view_reads import ViewReadsSql
from .webhooks import WebhooksSql
from .workers import WorkersSql

__all__ = ["SqlStore", "SqlTx"]


class SqlTx(
    CoordinatorsSql,
    ViewReadsSql,
    AccountsSql,
    TenancySql,
    LanesItemsSql,
    AttemptsSql,
    RecoverySql,
    WorkersSql,
    FollowUpsSql,
    UsageSql,
    WebhooksSql,
    TrackerConnectionsSql,
):
    """One transaction: the Reader and Tx ports of the domain, one part per concern."""

    async def coordinators_and_attempts(
        self, coordinator_ids: Sequence[str], lease_ids: Sequence[str]
    ) -> tuple[dict[str, Coordinator | None], dict[str, tuple[Attempt | None, Item | None]]]:
        if self.in_place:
            return await self._coordinators_and_attempts(coordinator_ids, lease_ids)
        return await read_in_turn(self, coordinator_ids, lease_ids)

    async def extend_attempts(
        self, extended: Sequence[tuple[Attempt, Sequence[UsageTotal]]]
    ) -> set[str]:
        if self.in_place:
            return await self._extend_unchanged(extended)
        return await extend_in_transaction(self, extended)


class SqlStore:
    """Opens read and write transactions over one engine."""

    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock
        self.dialect = engine.dialect.name
        # Per coordinator, (revision, time) of the last event this process committed.
        self._event_times: dict[str, tuple[int, datetime]] = {}

    async def close(self) -> None:
        await self.engine.dispose()

    @asynccontextmanager
    async def read(self, *, snapshot: bool = True) -> AsyncIterator[SqlTx]:
        """A read-only snapshot (REPEATABLE READ on PostgreSQL; SQLite's WAL snapshot).

        ``snapshot=False`` (one statement, so nothing to keep consistent across statements):
        autocommit on PostgreSQL, which saves the BEGIN and COMMIT round trips."""
        with storage_errors():
            async with self.engine.connect() as conn:
                if self.dialect == "postgresql" and not snapshot:
                    conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                    yield SqlTx(conn, self.dialect, self.clock.now(), None)
                    return
                if self.dialect == "postgresql":
                    conn = await conn.execution_options(
                        isolation_level="REPEATABLE READ", postgresql_readonly=True
                    )
                async with conn.begin():
                    yield SqlTx(conn, self.dialect, self.clock.now(), None)

    @asynccontextmanager
    async def write(
        self, coordinator_id: str | None = None, lock: WriteLock = WriteLock.ALL
    ) -> AsyncIterator[SqlTx]:
        """A write transaction; with ``coordinator_id``, holding that work coordinator as
        ``lock`` says (``tx.coordinator`` is then its committed state, or None if it does not
        exist; see ``lock_coordinator``). A group of worker writes that holds the row only
        later sees the transaction through :class:`BesideClaims` (a large claim, which also
        takes the row late, sees it as it is: it runs beside groups, never beside a claim)."""
        with storage_errors():
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(workcoord_write=True)
                async with conn.begin():
                    tx = SqlTx(conn, self.dialect, self.clock.now(), None)
                    tx.known_event_times = self._event_times
                    tx.lock_attempts = True
                    if coordinator_id is not None:
                        tx.coordinator = await tx.lock_coordinator(coordinator_id, lock)
                        # The time is the lock holder's: read before the lock, a writer that
                        # waited for it would stamp its events earlier than those of the
                        # writer it waited for (a group's events: see event_time).
                        tx.now = self.clock.now()
                    beside = tx.lock_deferred and lock is WriteLock.WORKER_WRITES
                    yield cast(SqlTx, BesideClaims(tx)) if beside else tx
                    await tx.flush()
                # Committed: the next writer of these coordinators need not read their last
                # event's time (a rolled-back transaction never gets here).
                self._event_times.update(tx.appended_event_times)

    @asynccontextmanager
    async def extend(self) -> AsyncIterator[SqlTx]:
        """Where a heartbeat round reads and extends leases. On PostgreSQL: an autocommit
        connection, each statement committing on its own (no ``BEGIN``/``COMMIT`` round
        trips), the attempts read unlocked with their versions and written back only where
        unchanged (``extend_attempts``). Elsewhere: a write transaction."""
        if self.dialect != "postgresql":
            async with self.write() as tx:
                yield tx
            return
        with storage_errors():
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                tx = SqlTx(conn, self.dialect, self.clock.now(), None)
                tx.in_place = True
                yield tx
