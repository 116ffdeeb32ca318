"""Work coordinators, their revision counter and their event log, in memory:
the twin of :mod:`..sql.coordinators`."""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence

from workcoord.coordinator.domain.model import Coordinator, Event, NewEvent

from ..records import event_time, numbered_events, outbox_deliveries
from ._base import CoordinatorRow, MemoryTxBase, copied, refuse
from .platform import PlatformMemory


class CoordinatorsMemory(PlatformMemory, MemoryTxBase):
    async def get_coordinator(self, coordinator_id: str) -> Coordinator | None:
        row = self.tables.coordinators.get(coordinator_id)
        if row is None:
            return None
        settings = self.tables.settings  # the epoch, read with it as in SQL
        self.seen_credentials_epoch = None if settings is None else settings.credentials_epoch
        return copied(row.coordinator)

    async def list_coordinators(
        self, after_id: str, limit: int, org_slugs: Sequence[str] | None
    ) -> list[Coordinator]:
        rows = [
            r.coordinator
            for cid, r in sorted(self.tables.coordinators.items())
            if cid > after_id and (org_slugs is None or r.coordinator.org_slug in org_slugs)
        ]
        return [copied(c) for c in rows[:limit]]

    async def insert_coordinator(self, coordinator: Coordinator, request_id: str) -> None:
        self._ensure_settings()
        coordinators = self._w().coordinators
        if coordinator.coordinator_id in coordinators:
            refuse("pk_work_coordinators")
        coordinators[coordinator.coordinator_id] = CoordinatorRow(
            copied(coordinator), request_id, 0
        )

    async def update_coordinator(self, coordinator: Coordinator) -> None:
        """Write what an admin (or the mailer's marks) changes; the revision moves only through
        :meth:`append`."""
        coordinators = self._w().coordinators
        row = coordinators.get(coordinator.coordinator_id)
        if row is None:
            return
        stored = dataclasses.replace(
            row.coordinator,
            display_name=coordinator.display_name,
            enabled=coordinator.enabled,
            config=copied(coordinator.config),
            config_version=coordinator.config_version,
            update_time=coordinator.update_time,
            mail_marks=coordinator.mail_marks,
            webhook_filters=copied(coordinator.webhook_filters),
            budget=coordinator.budget,
            lane_budgets=coordinator.lane_budgets,
        )
        coordinators[coordinator.coordinator_id] = dataclasses.replace(row, coordinator=stored)

    async def next_item_seq(self, count: int) -> int:
        """Reserve ``count`` item sequence numbers of the locked work coordinator; the first."""
        assert self.coordinator is not None
        coordinators = self._w().coordinators
        cid = self.coordinator.coordinator_id
        row = coordinators[cid]
        start = row.item_seq + 1
        coordinators[cid] = dataclasses.replace(row, item_seq=start + count - 1)
        return start

    # -------------------------------------------------------------- the event log

    async def append(self, coordinator: Coordinator, events: Sequence[NewEvent], actor: str) -> int:
        """Give the events the coordinator's next revisions; they are written at commit."""
        self._w()
        cid = coordinator.coordinator_id
        earlier = [e for e in self._events if e.coordinator_id == cid] or self.tables.events.get(
            cid, []
        )
        stamp = event_time(self.now, earlier[-1].time if earlier else None)
        self._events.extend(copied(e) for e in numbered_events(coordinator, events, actor, stamp))
        if coordinator.webhook_filters:
            self._webhook_filters[cid] = copied(coordinator.webhook_filters)
        revision = coordinator.revision + len(events)
        self._revisions[coordinator.coordinator_id] = revision
        return revision

    def flush(self) -> None:
        """Write the events appended so far and each coordinator's new revision."""
        tables = self._w()
        events, self._events = self._events, []
        filters, self._webhook_filters = self._webhook_filters, {}
        for delivery in outbox_deliveries(filters, events):
            tables.deliveries[delivery.delivery_id] = delivery
        appended: dict[str, list[Event]] = {}
        for event in events:
            appended.setdefault(event.coordinator_id, []).append(event)
        for cid, new in appended.items():
            # A new list: the committed state (and open readers) may still share the old one.
            log = [*tables.events.get(cid, []), *new]
            revisions = [e.revision for e in log]
            if len(set(revisions)) != len(revisions):
                refuse("pk_events")
            if revisions != sorted(revisions):
                log.sort(key=lambda e: e.revision)
            tables.events[cid] = log
        revisions_by_coordinator, self._revisions = self._revisions, {}
        for cid, revision in revisions_by_coordinator.items():
            row = tables.coordinators.get(cid)
            if row is not None:
                stored = dataclasses.replace(row.coordinator, revision=revision)
                tables.coordinators[cid] = dataclasses.replace(row, coordinator=stored)

    async def list_events(
        self, coordinator_id: str, since_revision: int, limit: int, lane_id: str, item_id: str
    ) -> list[Event]:
        found = [
            e
            for e in self.tables.events.get(coordinator_id, [])
            if e.revision > since_revision
            and (not lane_id or e.lane_id == lane_id)
            and (not item_id or e.item_id == item_id)
        ]
        return [copied(e) for e in found[:limit]]

    async def event_lane_ids(
        self, coordinator_id: str, after_revision: int, limit: int
    ) -> list[str]:
        log = self.tables.events.get(coordinator_id, [])  # in revision order
        start = bisect.bisect_right(log, after_revision, key=lambda e: e.revision)
        return [e.lane_id for e in log[start : start + max(limit, 0)]]
