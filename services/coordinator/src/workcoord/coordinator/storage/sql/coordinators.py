"""Work coordinators, their revision counter and their event log.

Statements: :mod:`.statements.coordinators`, :mod:`.statements.events` and, for the flush,
:mod:`.statements.bulk`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.sql.base import Executable

from workcoord.coordinator.domain.model import Coordinator, Event, NewEvent
from workcoord.coordinator.domain.ports import WriteLock

from ..records import event_time, numbered_events, outbox_deliveries
from ._base import SqlTxBase
from .platform import PlatformSql
from .rows import COORDINATORS, DELIVERIES, EVENTS
from .statements import coordinators as sql
from .statements import events as event_sql

# The writers that hold the row FOR KEY SHARE and take it FOR NO KEY UPDATE at their flush.
_ROW_AT_FLUSH = frozenset({WriteLock.LARGE_CLAIM, WriteLock.WORKER_WRITES})


class CoordinatorsSql(PlatformSql, SqlTxBase):
    async def lock_coordinator(
        self, coordinator_id: str, lock: WriteLock = WriteLock.ALL
    ) -> Coordinator | None:
        """Read the work coordinator and hold it as ``lock`` says until the transaction ends
        (docs/architecture.md, "Who waits for whom"): ``ALL`` with ``LOCK_COORDINATOR``,
        ``CLAIM`` with ``LOCK_FOR_CLAIM``, ``LARGE_CLAIM`` with ``LOCK_FOR_LARGE_CLAIM`` and
        ``WORKER_WRITES`` with ``LOCK_FOR_WORKER_WRITES``; the last two (on PostgreSQL) leave
        the row to each other until :meth:`lock_row` (``lock_deferred``). So capacity counts
        see every committed claim, and revisions stay gap-free. The credentials epoch comes
        with the row (``locked_credentials_epoch``), and the time of its last event when the
        lock was free (``locked_event_times``: an ``append`` after another process's write
        needs no read)."""
        if lock is WriteLock.CLAIM:
            statement: Executable = sql.LOCK_FOR_CLAIM.of(self.dialect)
        elif lock is WriteLock.LARGE_CLAIM:
            statement = sql.LOCK_FOR_LARGE_CLAIM.of(self.dialect)
        elif lock is WriteLock.WORKER_WRITES:
            statement = sql.LOCK_FOR_WORKER_WRITES.of(self.dialect)
        else:
            statement = sql.LOCK_COORDINATOR.of(self.dialect)
        coordinator = await self._coordinator_and_switch(statement, coordinator_id, True)
        if lock in _ROW_AT_FLUSH and self.dialect == "postgresql":
            self.lock_deferred = coordinator is not None
        return coordinator

    async def lock_row(self, *, claims_out: bool = False) -> None:
        """A large claim or a group of worker writes (``lock_deferred``): lock the coordinator's
        row now, ``FOR NO KEY UPDATE`` (``LOCK_COORDINATOR_ROW``: it waits for a claim or
        another flush), and number the events appended so far from the revision the row holds
        now. At the flush; and a group before anything off its hot path (``BesideClaims``),
        with ``claims_out``: the claims' advisory lock first (``LOCK_FOR_CLAIM``), so it waits
        for a claim in flight and none starts beside it. Only the revision (and its last event)
        can have moved since the transaction read the coordinator: the writers that change
        anything else take ``WriteLock.ALL``, which waits for its ``FOR KEY SHARE``."""
        if not self.lock_deferred:
            return
        self.lock_deferred = False
        coordinator = self.coordinator
        assert coordinator is not None
        statement = sql.LOCK_FOR_CLAIM.of(self.dialect) if claims_out else sql.LOCK_COORDINATOR_ROW
        locked = await self._coordinator_and_switch(statement, coordinator.coordinator_id, True)
        assert locked is not None  # deleting a coordinator takes WriteLock.ALL
        coordinator.revision = locked.revision
        deferred, self._deferred_events = self._deferred_events, []
        for appended_to, events, actor in deferred:
            appended_to.revision = await self.append(appended_to, events, actor)

    async def get_coordinator(self, coordinator_id: str) -> Coordinator | None:
        return await self._coordinator_and_switch(sql.COORDINATOR_WITH_SWITCH, coordinator_id)

    async def _coordinator_and_switch(
        self, statement: Executable, coordinator_id: str, locked: bool = False
    ) -> Coordinator | None:
        """The work coordinator with the platform switch and the credentials epoch (one round
        trip): a command checks both, and ``platform_enabled`` then answers from what was read
        here (``seen_credentials_epoch``: the epoch)."""
        row = await self._one(statement, {"coordinator_id": coordinator_id})
        if row is None:
            return None
        coordinator = self._load_coordinator(row)
        if locked:
            self.locked_credentials_epoch = self.seen_credentials_epoch
            last_time = row._mapping["last_event_time"]
            if last_time is not None:
                self.locked_event_times[coordinator_id] = (coordinator.revision, last_time)
        return coordinator

    async def list_coordinators(
        self, after_id: str, limit: int, org_slugs: Sequence[str] | None
    ) -> list[Coordinator]:
        slugs = list(org_slugs) if org_slugs is not None else None
        return await self._list(COORDINATORS, sql.list_coordinators(after_id, limit, slugs))

    async def insert_coordinator(self, coordinator: Coordinator, request_id: str) -> None:
        await self._ensure_settings()
        await self._insert(COORDINATORS, [coordinator], request_id=request_id, item_seq=0)

    async def update_coordinator(self, coordinator: Coordinator) -> None:
        """Write what an admin (or the mailer's marks) changes; the revision moves only through
        :meth:`append`."""
        values = COORDINATORS.values(coordinator)
        params = {name: values[name] for name in sql.ADMIN_COLUMNS}
        params["b_coordinator_id"] = coordinator.coordinator_id
        await self.conn.execute(sql.UPDATE_COORDINATOR, params)

    async def next_item_seq(self, count: int) -> int:
        """Reserve ``count`` item sequence numbers of the locked work coordinator; the first."""
        assert self.coordinator is not None
        coordinator_id = self.coordinator.coordinator_id
        row = await self._one(sql.ITEM_SEQ, {"coordinator_id": coordinator_id})
        start = int(row[0] if row else 0) + 1
        params = {"b_coordinator_id": coordinator_id, "item_seq": start + count - 1}
        await self.conn.execute(sql.SET_ITEM_SEQ, params)
        return start

    # -------------------------------------------------------------- the event log

    async def append(self, coordinator: Coordinator, events: Sequence[NewEvent], actor: str) -> int:
        """Give the events the coordinator's next revisions. The rows are written together at
        the end of the transaction (:meth:`flush`), still before its commit: a group of
        worker writes then inserts its events and moves the counter once, not per write.
        Before a deferred row lock is taken (``lock_deferred``) the events wait for it
        (:meth:`lock_row` numbers them) and the revision answered is provisional."""
        if self.lock_deferred:
            self._deferred_events.append((coordinator, list(events), actor))
            return coordinator.revision + len(events)
        stamp = event_time(self.now, await self._last_event_time(coordinator))
        self._events.extend(numbered_events(coordinator, events, actor, stamp))
        if coordinator.webhook_filters:
            self._webhook_filters[coordinator.coordinator_id] = coordinator.webhook_filters
        revision = coordinator.revision + len(events)
        self._revisions[coordinator.coordinator_id] = revision
        if events:
            self.appended_event_times[coordinator.coordinator_id] = (revision, stamp)
        return revision

    async def _last_event_time(self, coordinator: Coordinator) -> datetime | None:
        """The time of the coordinator's last event (at ``coordinator.revision``): appended by
        this transaction, read with the coordinator's lock, known to the store from a commit of
        this process, else read (``LAST_EVENT_TIME``, after the coordinator's lock, so no
        writer slips in between)."""
        cid = coordinator.coordinator_id
        for known in (
            self.appended_event_times.get(cid),
            self.locked_event_times.get(cid),
            self.known_event_times.get(cid),
        ):
            if known is not None and known[0] == coordinator.revision:
                return known[1]
        if coordinator.revision <= 0:
            return None
        params = {"coordinator_id": cid, "revision": coordinator.revision}
        row = await self._one(event_sql.LAST_EVENT_TIME, params)
        return row[0] if row is not None else None  # pruned: nothing to follow

    async def flush(self) -> None:
        """Write the held-back updates and roll-ups, the events appended so far and each
        coordinator's new revision, just before commit: on PostgreSQL in ONE statement when
        there is one coordinator to move (``_write_together``); else the roll-ups, the
        held-back updates, one insert of the events and one ``SET_REVISION`` per coordinator.
        Events a webhook of their coordinator selects add one insert of their outbox rows
        (none without such a webhook: the filters come with the coordinator's row, no read)."""
        # A large claim or a group of worker writes commits holding the row, like every
        # writer: what it wrote (a spend among it) is seen by every claim that commits after
        # it. It builds its writes before it waits for the row, so that it holds it for less.
        before = None
        if self.lock_deferred and self.dialect == "postgresql":
            before = self.held_back_parts()
        await self.lock_row()
        events, self._events = self._events, []
        filters, self._webhook_filters = self._webhook_filters, {}
        deliveries = outbox_deliveries(filters, events) if filters else []
        if self.dialect == "postgresql" and len(self._revisions) <= 1:
            revisions, self._revisions = self._revisions, {}
            usage, self._pending_usage = self._pending_usage, []
            moved = next(iter(revisions.items()), None)
            await self._write_together(events, moved, usage, before)
            await self._insert(DELIVERIES, deliveries)
            return
        await self.write_held_back_usage()
        await self._insert(DELIVERIES, deliveries)
        await self.write_held_back(before)
        await self._insert(EVENTS, events)
        revisions, self._revisions = self._revisions, {}
        for coordinator_id, revision in revisions.items():
            params = {"b_coordinator_id": coordinator_id, "revision": revision}
            await self.conn.execute(sql.SET_REVISION, params)

    async def list_events(
        self, coordinator_id: str, since_revision: int, limit: int, lane_id: str, item_id: str
    ) -> list[Event]:
        stmt = event_sql.list_events(coordinator_id, since_revision, limit, lane_id, item_id)
        return await self._list(EVENTS, stmt)

    async def event_lane_ids(
        self, coordinator_id: str, after_revision: int, limit: int
    ) -> list[str]:
        """The lane id of each event after ``after_revision`` ("" for events of no lane), in
        revision order, at most ``limit``: one range of the primary key, no event bodies."""
        params = {
            "coordinator_id": coordinator_id,
            "after_revision": after_revision,
            "limit": limit,
        }
        return [row[0] for row in await self._rows(event_sql.EVENT_LANE_IDS, params)]
