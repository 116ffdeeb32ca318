"""What follows work up: the digest, pending actions (ticket closures), ticket syncs and
escalations of items left waiting too long.

Statements: :mod:`.statements.follow_ups`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import (
    DigestEntry,
    Escalation,
    Item,
    PendingAction,
    PendingActionState,
    Ticket,
)

from ._base import SqlTxBase
from .rows import DIGEST_ENTRIES, ESCALATIONS, ITEMS, PENDING_ACTIONS, TICKETS
from .statements import follow_ups as sql


class FollowUpsSql(SqlTxBase):
    # -------------------------------------------------------------- the digest

    async def insert_digest_entries(self, entries: Sequence[DigestEntry]) -> None:
        await self._insert(DIGEST_ENTRIES, entries)

    async def digest_entries(self, coordinator_id: str, day: str) -> list[DigestEntry]:
        params = {"coordinator_id": coordinator_id, "day": day}
        return await self._list(DIGEST_ENTRIES, sql.DIGEST_ENTRIES, params)

    # -------------------------------------------------------------- pending actions

    async def insert_pending_actions(self, actions: Sequence[PendingAction]) -> None:
        await self._insert(PENDING_ACTIONS, actions)

    async def update_pending_action(self, action: PendingAction) -> None:
        await self._update_each(PENDING_ACTIONS, "action_id", [action])

    async def get_pending_action(self, action_id: str) -> PendingAction | None:
        return await self._get(PENDING_ACTIONS, sql.GET_PENDING_ACTION, {"action_id": action_id})

    async def list_pending_actions(
        self, coordinator_id: str, state: PendingActionState | None, after_id: str, limit: int
    ) -> list[PendingAction]:
        stmt = sql.list_pending_actions(coordinator_id, state, after_id, limit)
        return await self._list(PENDING_ACTIONS, stmt)

    async def due_pending_actions(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[PendingAction]:
        params = {"coordinator_id": coordinator_id, "now": now, "limit": limit}
        return await self._list(PENDING_ACTIONS, sql.DUE_PENDING_ACTIONS, params)

    # -------------------------------------------------------------- ticket syncs

    async def update_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        """Record what the tracker said of the ticket (its state, and when)."""
        params = {
            "b_lane_id": ticket.lane_id,
            "b_tracker": ticket.tracker,
            "b_key": ticket.key,
            "state": ticket.state,
            "observe_time": ticket.observe_time,
        }
        await self.conn.execute(sql.UPDATE_TICKET, params)

    async def tickets_to_sync(self, coordinator_id: str, limit: int) -> list[Ticket]:
        """Tickets of open lanes: never-synced first, then the longest unsynced."""
        params = {"coordinator_id": coordinator_id, "limit": limit}
        return await self._list(TICKETS, sql.TICKETS_TO_SYNC, params)

    # -------------------------------------------------------------- escalations

    async def insert_escalations(self, escalations: Sequence[Escalation]) -> None:
        await self.write_held_back()  # a resolution held back must not close these
        await self._insert(ESCALATIONS, escalations)

    async def open_escalations(self, coordinator_id: str) -> list[Escalation]:
        await self.write_held_back()
        params = {"coordinator_id": coordinator_id}
        return await self._list(ESCALATIONS, sql.OPEN_ESCALATIONS, params)

    async def resolve_escalations(
        self, coordinator_id: str, item_ids: Sequence[str], when: datetime
    ) -> None:
        """Held back (see :class:`SqlTxBase`): written by the next ``write_held_back`` or with
        the flush, so a claim pays no round trip for it."""
        for item_id in item_ids:
            self._pending_resolutions[(coordinator_id, item_id)] = when

    async def escalation_candidates(
        self, coordinator_id: str, now: datetime, ready_before: datetime, limit: int
    ) -> list[Item]:
        """Ready items waiting since ``ready_before`` or earlier, not escalated yet."""
        await self.write_held_back()
        params = {
            "coordinator_id": coordinator_id,
            "now": now,
            "ready_before": ready_before,
            "limit": limit,
        }
        return await self._list(ITEMS, sql.ESCALATION_CANDIDATES, params)
