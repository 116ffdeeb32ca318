"""Lanes with their blockers and tickets, and the items of lanes: what is ready, in which
order it is claimed.

Statements: :mod:`.statements.lanes` and :mod:`.statements.items`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import Blocker, Item, ItemState, Lane, LaneState, Ticket
from workcoord.coordinator.domain.ports import ClaimPage, ClaimScan, LaneCursor

from ._base import SqlTxBase, copied
from .rows import BLOCKERS, ITEMS, LANES, TICKETS
from .statements import items as item_sql
from .statements import lanes as sql


class LanesItemsSql(SqlTxBase):
    # -------------------------------------------------------------- lanes

    async def get_lane(self, lane_id: str) -> Lane | None:
        return await self._get(LANES, sql.GET_LANE, {"lane_id": lane_id})

    async def list_lanes(
        self, coordinator_id: str, state: LaneState | None, after: LaneCursor | None, limit: int
    ) -> list[Lane]:
        return await self._list(LANES, sql.list_lanes(coordinator_id, state, after, limit))

    async def insert_lane(self, lane: Lane) -> None:
        await self._insert(LANES, [lane])

    async def update_lane(self, lane: Lane) -> None:
        """Write the lane and move its version (on the caller's record too)."""
        lane.version += 1
        self._lane_counts.pop(lane.lane_id, None)
        await self._update_each(LANES, "lane_id", [lane])

    async def lane_blockers(self, lane_ids: Sequence[str]) -> list[Blocker]:
        if not lane_ids:
            return []
        return await self._list(BLOCKERS, sql.LANE_BLOCKERS, {"lane_ids": list(lane_ids)})

    async def insert_blocker(self, coordinator_id: str, blocker: Blocker) -> None:
        await self._insert(BLOCKERS, [blocker], coordinator_id=coordinator_id)

    async def update_blocker(self, blocker: Blocker) -> None:
        params = {
            "b_blocker_id": blocker.blocker_id,
            "open": blocker.open,
            "resolve_time": blocker.resolve_time,
        }
        await self.conn.execute(sql.UPDATE_BLOCKER, params)

    async def lane_tickets(self, lane_ids: Sequence[str]) -> list[Ticket]:
        if not lane_ids:
            return []
        return await self._list(TICKETS, sql.LANE_TICKETS, {"lane_ids": list(lane_ids)})

    async def insert_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        await self._insert(TICKETS, [ticket], coordinator_id=coordinator_id)

    # -------------------------------------------------------------- items

    async def get_item(self, item_id: str) -> Item | None:
        return await self._held_back_or_stored(
            self._pending_items, ITEMS, item_sql.GET_ITEM, item_id
        )

    async def items_by_ids(self, item_ids: Sequence[str]) -> list[Item]:
        if not item_ids:
            return []
        await self.write_held_back()
        return await self._list(ITEMS, item_sql.ITEMS_BY_IDS, {"item_ids": list(item_ids)})

    async def lane_items(self, lane_ids: Sequence[str]) -> list[Item]:
        if not lane_ids:
            return []
        await self.write_held_back()
        return await self._list(ITEMS, item_sql.LANE_ITEMS, {"lane_ids": list(lane_ids)})

    async def lane_item_states(self, lane_id: str) -> dict[str, ItemState]:
        # Held-back updates stand in for their rows (no need to write them first).
        states: dict[str, ItemState] = {}
        for r in await self._rows(item_sql.LANE_ITEM_STATES, {"lane_id": lane_id}):
            pending = self._pending_items.get(r.item_id)
            states[r.key] = pending.state if pending is not None else ItemState(r.state)
        return states

    async def lane_with_state_counts(
        self, lane_id: str
    ) -> tuple[Lane | None, dict[ItemState, int]]:
        """One round trip (``LANE_WITH_STATE_COUNTS``): the lane's row once per state its items
        are in, with the count (one row with no state if it has no items). Held-back item
        updates stand in for their rows: each such row comes back on its own, counted in the
        state of its update."""
        pending = {i.item_id: i for i in self._pending_items.values() if i.lane_id == lane_id}
        read = self._lane_counts.pop(lane_id, None)
        if read is not None and set(pending) == {read[2]}:
            # Read with the attempt (attempt_with_item), and only that item changed since.
            lane, others, item_id = read
            state = pending[item_id].state
            return copied(lane), {**others, state: others.get(state, 0) + 1}
        params = {"lane_id": lane_id, "pending": list(pending)}
        rows = await self._rows(sql.LANE_WITH_STATE_COUNTS, params)
        if not rows:
            return None, {}
        counts: dict[ItemState, int] = {}
        at = LANES.width
        for row in rows:
            state, pending_id, n = row[at : at + 3]
            if pending_id is not None:
                state = pending[pending_id].state
            elif state is None:
                continue  # the lane has no items
            else:
                state = ItemState(state)
            counts[state] = counts.get(state, 0) + int(n)
        return LANES.load(rows[0]), counts

    async def waiting_items(self, lane_id: str) -> list[Item]:
        await self.write_held_back()
        return await self._list(ITEMS, item_sql.WAITING_ITEMS, {"lane_id": lane_id})

    async def queued_items(self, coordinator_id: str) -> list[Item]:
        await self.write_held_back()
        return await self._list(ITEMS, item_sql.QUEUED_ITEMS, {"coordinator_id": coordinator_id})

    async def insert_items(self, items: Sequence[Item]) -> None:
        for item in items:
            self._lane_counts.pop(item.lane_id, None)
        await self._insert(ITEMS, items)

    async def update_items(self, items: Sequence[Item]) -> None:
        """Hold the items' updates back (see :class:`SqlTxBase`)."""
        for item in items:
            # A copy: the record as it is now is what gets written (see write_held_back).
            self._pending_items[item.item_id] = copied(item)
            read = self._lane_counts.get(item.lane_id)
            if read is not None and read[2] != item.item_id:
                del self._lane_counts[item.lane_id]  # another item of the lane changed

    async def claim_candidates(self, scan: ClaimScan) -> ClaimPage:
        """Ready items of the asked classes in claim order (highest priority first; within one, the
        lane served longest ago first; then FIFO), after the cursor ``scan.after``
        (``claim_candidates``, a statement per number of classes). On PostgreSQL they are
        locked, skipping rows another claim holds."""
        await self.write_held_back()
        if not scan.worker_classes:
            return ClaimPage([], None)
        params: dict[str, object] = {
            "coordinator_id": scan.coordinator_id,
            "now": scan.now,
            "limit": scan.limit,
        }
        params.update({f"worker_class_{i}": c for i, c in enumerate(scan.worker_classes)})
        if scan.after is not None:
            priority, turn, seq = scan.after
            params.update(after_priority=priority, after_turn=turn, after_seq=seq)
        stmt = item_sql.claim_candidates(len(scan.worker_classes), after=scan.after is not None)
        rows = await self._rows(stmt, params)
        items = [self._load_item(row) for row in rows]
        if not rows:
            return ClaimPage(items, None)
        last = items[-1]
        return ClaimPage(items, (last.priority, int(rows[-1][ITEMS.width]), last.seq))

    async def mark_lanes_served(self, lane_ids: Sequence[str], turn: int) -> None:
        """Held back (see :class:`SqlTxBase`): written by the next ``write_held_back`` (the
        claim's scan calls it) or with the flush."""
        for lane_id in lane_ids:
            self._pending_turns[lane_id] = turn

    async def has_ready(
        self, coordinator_id: str, worker_classes: tuple[str, ...], now: datetime
    ) -> bool:
        await self.write_held_back()
        params = {
            "coordinator_id": coordinator_id,
            "worker_classes": list(worker_classes),
            "now": now,
        }
        return await self._one(item_sql.HAS_READY, params) is not None

    async def count_ready(self, coordinator_id: str) -> dict[str, int]:
        """Queued items per class (held or backing off included)."""
        await self.write_held_back()
        rows = await self._rows(item_sql.COUNT_READY, {"coordinator_id": coordinator_id})
        return {str(r.worker_class): int(r.n) for r in rows}

    async def count_awaiting_human(
        self, coordinator_id: str
    ) -> dict[str, tuple[int, datetime | None]]:
        await self.write_held_back()
        rows = await self._rows(item_sql.COUNT_AWAITING_HUMAN, {"coordinator_id": coordinator_id})
        return {str(r.state): (int(r.n), r.since) for r in rows}

    async def next_not_before(
        self, coordinator_id: str, worker_classes: tuple[str, ...], now: datetime
    ) -> datetime | None:
        """When the next queued item of the classes stops backing off (None: none is)."""
        await self.write_held_back()
        params = {
            "coordinator_id": coordinator_id,
            "worker_classes": list(worker_classes),
            "now": now,
        }
        row = await self._one(item_sql.NEXT_NOT_BEFORE, params)
        return row[0] if row is not None else None
