"""The digest, pending actions, ticket syncs and escalations, in memory:
the twin of :mod:`..sql.follow_ups`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import (
    DigestEntry,
    Escalation,
    Item,
    LaneState,
    PendingAction,
    PendingActionState,
    Ticket,
)

from ._base import MemoryTxBase, copied, insert_new, selected
from .lanes_items import ready


class FollowUpsMemory(MemoryTxBase):
    # -------------------------------------------------------------- the digest

    async def insert_digest_entries(self, entries: Sequence[DigestEntry]) -> None:
        insert_new(self._w().digest_entries, entries, lambda e: e.entry_id, "pk_digest_entries")

    async def digest_entries(self, coordinator_id: str, day: str) -> list[DigestEntry]:
        found = [
            e
            for e in self.tables.digest_entries.values()
            if e.coordinator_id == coordinator_id and e.day == day
        ]
        return sorted(found, key=lambda e: (e.time, e.entry_id))

    # -------------------------------------------------------------- pending actions

    async def insert_pending_actions(self, actions: Sequence[PendingAction]) -> None:
        insert_new(self._w().pending_actions, actions, lambda a: a.action_id, "pk_pending_actions")

    async def update_pending_action(self, action: PendingAction) -> None:
        stored = self._w().pending_actions
        if action.action_id in stored:
            stored[action.action_id] = copied(action)

    async def get_pending_action(self, action_id: str) -> PendingAction | None:
        action = self.tables.pending_actions.get(action_id)
        return copied(action) if action else None

    async def list_pending_actions(
        self, coordinator_id: str, state: PendingActionState | None, after_id: str, limit: int
    ) -> list[PendingAction]:
        found = [
            a
            for a in self.tables.pending_actions.values()
            if a.coordinator_id == coordinator_id
            and a.action_id > after_id
            and (state is None or a.state == state)
        ]
        found.sort(key=lambda a: a.action_id)
        return [copied(a) for a in found[:limit]]

    async def due_pending_actions(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[PendingAction]:
        found = [
            a
            for a in self.tables.pending_actions.values()
            if a.coordinator_id == coordinator_id
            and a.state == PendingActionState.OPEN
            and (a.next_attempt_time is None or a.next_attempt_time <= now)
        ]
        # Soonest first; an action without a time after those with one.
        found.sort(
            key=lambda a: (a.next_attempt_time is None, a.next_attempt_time or now, a.action_id)
        )
        return [copied(a) for a in found[:limit]]

    # -------------------------------------------------------------- ticket syncs

    async def update_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        """Record what the tracker said of the ticket (its state, and when)."""
        tickets = self._w().tickets
        key = (ticket.lane_id, ticket.tracker, ticket.key)
        row = tickets.get(key)
        if row is not None:
            stored = dataclasses.replace(
                row[1], state=ticket.state, observe_time=ticket.observe_time
            )
            tickets[key] = (row[0], stored)

    async def tickets_to_sync(self, coordinator_id: str, limit: int) -> list[Ticket]:
        """Tickets of open lanes: never-synced first, then the longest unsynced."""
        open_lanes = {LaneState.ACTIVE, LaneState.LIVE}
        lanes = self.tables.lanes
        found = [
            tk
            for cid, tk in self.tables.tickets.values()
            if cid == coordinator_id
            and tk.lane_id in lanes
            and lanes[tk.lane_id].state in open_lanes
        ]
        found.sort(
            key=lambda tk: (tk.observe_time is not None, tk.observe_time or self.now, tk.key)
        )
        return [copied(tk) for tk in found[:limit]]

    # -------------------------------------------------------------- escalations

    async def insert_escalations(self, escalations: Sequence[Escalation]) -> None:
        stored = self._w().escalations
        insert_new(stored, escalations, lambda e: e.escalation_id, "pk_escalations")

    async def open_escalations(self, coordinator_id: str) -> list[Escalation]:
        return selected(
            self.tables.escalations.values(),
            lambda e: e.coordinator_id == coordinator_id and e.open,
            lambda e: (e.create_time, e.escalation_id),
        )

    async def resolve_escalations(
        self, coordinator_id: str, item_ids: Sequence[str], when: datetime
    ) -> None:
        stored = self._w().escalations
        wanted = set(item_ids)
        for eid, e in list(stored.items()):
            if e.coordinator_id == coordinator_id and e.open and e.item_id in wanted:
                stored[eid] = dataclasses.replace(e, open=False, resolve_time=when)

    async def escalation_candidates(
        self, coordinator_id: str, now: datetime, ready_before: datetime, limit: int
    ) -> list[Item]:
        """Ready items waiting since ``ready_before`` or earlier, not escalated yet."""
        escalated = {
            e.item_id
            for e in self.tables.escalations.values()
            if e.coordinator_id == coordinator_id and e.open
        }
        found = [
            i
            for i in self.tables.items.values()
            if ready(i, coordinator_id, now)
            and i.ready_time is not None
            and i.ready_time <= ready_before
            and i.item_id not in escalated
        ]
        found.sort(key=lambda i: (i.ready_time or now, i.item_id))
        return [copied(i) for i in found[:limit]]
