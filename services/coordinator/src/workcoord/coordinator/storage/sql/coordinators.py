"""Work coordinators, their revision counter and their event log."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update

from workcoord.coordinator.domain.model import Coordinator, Event, NewEvent

from .. import schema as t
from ..records import event_time, numbered_events
from ._base import SqlTxBase
from .platform import PlatformSql
from .rows import COORDINATORS, EVENTS

_WC = t.work_coordinators


class CoordinatorsSql(PlatformSql, SqlTxBase):
    async def lock_coordinator(self, coordinator_id: str) -> Coordinator | None:
        """Read the work coordinator and hold its row until the transaction ends: writers of
        one work coordinator are serialised, so capacity counts see every committed claim and
        revisions stay gap-free."""
        return await self._coordinator_and_switch(coordinator_id, lock=True)

    async def get_coordinator(self, coordinator_id: str) -> Coordinator | None:
        return await self._coordinator_and_switch(coordinator_id, lock=False)

    async def _coordinator_and_switch(
        self, coordinator_id: str, *, lock: bool
    ) -> Coordinator | None:
        """The work coordinator with the platform switch (one round trip): a command checks
        both, and ``platform_enabled`` then answers from what was read here."""
        switch = (
            select(t.platform_settings.c.work_coordinator_enabled)
            .where(t.platform_settings.c.id == 1)
            .scalar_subquery()
            .label("platform_switch")
        )
        stmt = select(_WC, switch).where(_WC.c.coordinator_id == coordinator_id)
        if lock and self.dialect == "postgresql":
            stmt = stmt.with_for_update(of=_WC)
        row = await self._one(stmt)
        if row is None:
            return None
        switch_value = row._mapping["platform_switch"]
        self._platform_switch = True if switch_value is None else bool(switch_value)
        return COORDINATORS.load(row)

    async def list_coordinators(
        self, after_id: str, limit: int, org_slugs: Sequence[str] | None
    ) -> list[Coordinator]:
        stmt = select(_WC).where(_WC.c.coordinator_id > after_id)
        if org_slugs is not None:
            stmt = stmt.where(_WC.c.org_slug.in_(list(org_slugs)))
        return await self._list(COORDINATORS, stmt.order_by(_WC.c.coordinator_id).limit(limit))

    async def insert_coordinator(self, coordinator: Coordinator, request_id: str) -> None:
        await self._ensure_settings()
        await self._insert(COORDINATORS, [coordinator], request_id=request_id, item_seq=0)

    async def update_coordinator(self, coordinator: Coordinator) -> None:
        """Write what an admin changes; the revision moves only through :meth:`append`."""
        values = COORDINATORS.values(coordinator)
        await self.conn.execute(
            update(_WC)
            .where(_WC.c.coordinator_id == coordinator.coordinator_id)
            .values({k: values[k] for k in _ADMIN_COLUMNS})
        )

    async def next_item_seq(self, count: int) -> int:
        """Reserve ``count`` item sequence numbers of the locked work coordinator; the first."""
        assert self.coordinator is not None
        where = _WC.c.coordinator_id == self.coordinator.coordinator_id
        row = await self._one(select(_WC.c.item_seq).where(where))
        start = int(row[0] if row else 0) + 1
        await self.conn.execute(update(_WC).where(where).values(item_seq=start + count - 1))
        return start

    # -------------------------------------------------------------- the event log

    async def append(self, coordinator: Coordinator, events: Sequence[NewEvent], actor: str) -> int:
        """Give the events the coordinator's next revisions. The rows are written together at
        the end of the transaction (:meth:`flush`), still before its commit: a group of
        worker writes then inserts its events and moves the counter once, not per write."""
        stamp = event_time(self.now, await self._last_event_time(coordinator))
        self._events.extend(numbered_events(coordinator, events, actor, stamp))
        revision = coordinator.revision + len(events)
        self._revisions[coordinator.coordinator_id] = revision
        if events:
            self.appended_event_times[coordinator.coordinator_id] = (revision, stamp)
        return revision

    async def _last_event_time(self, coordinator: Coordinator) -> datetime | None:
        """The time of the coordinator's last event (at ``coordinator.revision``): appended by
        this transaction, known to the store from a commit of this process, else read (one
        primary-key lookup, after the coordinator's lock, so no writer slips in between)."""
        cid = coordinator.coordinator_id
        for known in (self.appended_event_times.get(cid), self.known_event_times.get(cid)):
            if known is not None and known[0] == coordinator.revision:
                return known[1]
        if coordinator.revision <= 0:
            return None
        row = await self._one(
            select(t.events.c.time).where(
                t.events.c.coordinator_id == cid, t.events.c.revision == coordinator.revision
            )
        )
        return row[0] if row is not None else None  # pruned: nothing to follow

    async def flush(self) -> None:
        """Write the held-back updates, the events appended so far and each coordinator's new
        revision: on PostgreSQL in one statement when there is one coordinator to move."""
        events, self._events = self._events, []
        if self.dialect == "postgresql" and len(self._revisions) <= 1:
            revisions, self._revisions = self._revisions, {}
            await self._write_together(events, next(iter(revisions.items()), None))
            return
        await self.write_held_back()
        await self._insert(EVENTS, events)
        revisions, self._revisions = self._revisions, {}
        for coordinator_id, revision in revisions.items():
            await self.conn.execute(
                update(_WC).where(_WC.c.coordinator_id == coordinator_id).values(revision=revision)
            )

    async def list_events(
        self, coordinator_id: str, since_revision: int, limit: int, lane_id: str, item_id: str
    ) -> list[Event]:
        c = t.events.c
        stmt = select(t.events).where(
            c.coordinator_id == coordinator_id, c.revision > since_revision
        )
        if lane_id:
            stmt = stmt.where(c.lane_id == lane_id)
        if item_id:
            stmt = stmt.where(c.item_id == item_id)
        return await self._list(EVENTS, stmt.order_by(c.revision).limit(limit))

    async def event_lane_ids(
        self, coordinator_id: str, after_revision: int, limit: int
    ) -> list[str]:
        """The lane id of each event after ``after_revision`` ("" for events of no lane), in
        revision order, at most ``limit``: one range of the primary key, no event bodies."""
        c = t.events.c
        stmt = (
            select(c.lane_id)
            .where(c.coordinator_id == coordinator_id, c.revision > after_revision)
            .order_by(c.revision)
            .limit(limit)
        )
        return [row[0] for row in await self._rows(stmt)]


# What update_coordinator writes: never the revision, the request id or the item counter.
_ADMIN_COLUMNS = ("display_name", "enabled", "config", "config_version", "update_time")
