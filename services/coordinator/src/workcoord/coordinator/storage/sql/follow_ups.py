"""What follows work up: the digest, pending actions (ticket closures), ticket syncs and
escalations of items left waiting too long."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import or_, select, update

from workcoord.coordinator.domain.model import (
    DigestEntry,
    Escalation,
    Item,
    LaneState,
    PendingAction,
    PendingActionState,
    Ticket,
)

from .. import schema as t
from ._base import SqlTxBase
from .lanes_items import ready_filter
from .rows import DIGEST_ENTRIES, ESCALATIONS, ITEMS, PENDING_ACTIONS, TICKETS


class FollowUpsSql(SqlTxBase):
    # -------------------------------------------------------------- the digest

    async def insert_digest_entries(self, entries: Sequence[DigestEntry]) -> None:
        await self._insert(DIGEST_ENTRIES, entries)

    async def digest_entries(self, coordinator_id: str, day: str) -> list[DigestEntry]:
        c = t.digest_entries.c
        return await self._list(
            DIGEST_ENTRIES,
            select(t.digest_entries)
            .where(c.coordinator_id == coordinator_id, c.day == day)
            .order_by(c.time, c.entry_id),
        )

    # -------------------------------------------------------------- pending actions

    async def insert_pending_actions(self, actions: Sequence[PendingAction]) -> None:
        await self._insert(PENDING_ACTIONS, actions)

    async def update_pending_action(self, action: PendingAction) -> None:
        await self._update_each(PENDING_ACTIONS, "action_id", [action])

    async def get_pending_action(self, action_id: str) -> PendingAction | None:
        return await self._get(PENDING_ACTIONS, t.pending_actions.c.action_id == action_id)

    async def list_pending_actions(
        self, coordinator_id: str, state: PendingActionState | None, after_id: str, limit: int
    ) -> list[PendingAction]:
        c = t.pending_actions.c
        stmt = select(t.pending_actions).where(
            c.coordinator_id == coordinator_id, c.action_id > after_id
        )
        if state is not None:
            stmt = stmt.where(c.state == state.value)
        return await self._list(PENDING_ACTIONS, stmt.order_by(c.action_id).limit(limit))

    async def due_pending_actions(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[PendingAction]:
        c = t.pending_actions.c
        return await self._list(
            PENDING_ACTIONS,
            select(t.pending_actions)
            .where(
                c.coordinator_id == coordinator_id,
                c.state == PendingActionState.OPEN.value,
                or_(c.next_attempt_time.is_(None), c.next_attempt_time <= now),
            )
            # Spelled out: SQLite would put actions without a time first, PostgreSQL last.
            .order_by(c.next_attempt_time.asc().nulls_last(), c.action_id)
            .limit(limit),
        )

    # -------------------------------------------------------------- ticket syncs

    async def update_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        """Record what the tracker said of the ticket (its state, and when)."""
        c = t.tickets.c
        await self.conn.execute(
            update(t.tickets)
            .where(c.lane_id == ticket.lane_id, c.tracker == ticket.tracker, c.key == ticket.key)
            .values(state=ticket.state, observe_time=ticket.observe_time)
        )

    async def tickets_to_sync(self, coordinator_id: str, limit: int) -> list[Ticket]:
        """Tickets of open lanes: never-synced first, then the longest unsynced."""
        tk = t.tickets.c
        lane = t.lanes.c
        return await self._list(
            TICKETS,
            select(t.tickets)
            .join(t.lanes, lane.lane_id == tk.lane_id)
            .where(
                tk.coordinator_id == coordinator_id,
                lane.state.in_((LaneState.ACTIVE.value, LaneState.LIVE.value)),
            )
            .order_by(tk.observe_time.is_not(None), tk.observe_time, tk.key)
            .limit(limit),
        )

    # -------------------------------------------------------------- escalations

    async def insert_escalations(self, escalations: Sequence[Escalation]) -> None:
        await self._insert(ESCALATIONS, escalations)

    async def open_escalations(self, coordinator_id: str) -> list[Escalation]:
        c = t.escalations.c
        return await self._list(
            ESCALATIONS,
            select(t.escalations)
            .where(c.coordinator_id == coordinator_id, c.open.is_(True))
            .order_by(c.create_time, c.escalation_id),
        )

    async def resolve_escalations(
        self, coordinator_id: str, item_ids: Sequence[str], when: datetime
    ) -> None:
        if not item_ids:
            return
        c = t.escalations.c
        await self.conn.execute(
            update(t.escalations)
            .where(
                c.coordinator_id == coordinator_id, c.open.is_(True), c.item_id.in_(list(item_ids))
            )
            .values(open=False, resolve_time=when)
        )

    async def escalation_candidates(
        self, coordinator_id: str, now: datetime, ready_before: datetime, limit: int
    ) -> list[Item]:
        """Ready items waiting since ``ready_before`` or earlier, not escalated yet."""
        await self.write_held_back()
        c = t.items.c
        escalated = select(t.escalations.c.item_id).where(
            t.escalations.c.coordinator_id == coordinator_id, t.escalations.c.open.is_(True)
        )
        return await self._list(
            ITEMS,
            select(t.items)
            .where(
                *ready_filter(coordinator_id, now),
                c.ready_time <= ready_before,
                c.item_id.not_in(escalated),
            )
            .order_by(c.ready_time, c.item_id)
            .limit(limit),
        )
