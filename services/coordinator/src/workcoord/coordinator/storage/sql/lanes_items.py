"""Lanes with their blockers and tickets, and the items of lanes: what is ready, in which
order it is claimed."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.sql import ColumnElement

from workcoord.coordinator.domain.model import (
    Blocker,
    Item,
    ItemState,
    Lane,
    LaneState,
    Ticket,
)

from .. import schema as t
from ._base import SqlTxBase
from .rows import BLOCKERS, ITEMS, LANES, TICKETS

_QUEUED = ItemState.QUEUED.value


def ready_filter(coordinator_id: str, now: datetime) -> list[ColumnElement[bool]]:
    """Items a worker could claim at ``now``: queued, not held, not backing off."""
    c = t.items.c
    return [
        c.coordinator_id == coordinator_id,
        c.state == _QUEUED,
        c.held.is_(False),
        or_(c.not_before.is_(None), c.not_before <= now),
    ]


class LanesItemsSql(SqlTxBase):
    # -------------------------------------------------------------- lanes

    async def get_lane(self, lane_id: str) -> Lane | None:
        # Held-back item and attempt updates cannot change a lane row: no need to write them.
        row = (await self.raw.execute(select(t.lanes).where(t.lanes.c.lane_id == lane_id))).first()
        return LANES.load(row) if row is not None else None

    async def list_lanes(
        self,
        coordinator_id: str,
        state: LaneState | None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Lane]:
        c = t.lanes.c
        stmt = select(t.lanes).where(c.coordinator_id == coordinator_id)
        if state is not None:
            stmt = stmt.where(c.state == state.value)
        if after is not None:
            # Newest first: continue strictly below the last (create_time, lane_id) seen.
            stmt = stmt.where(
                or_(c.create_time < after[0], and_(c.create_time == after[0], c.lane_id < after[1]))
            )
        stmt = stmt.order_by(c.create_time.desc(), c.lane_id.desc()).limit(limit)
        return await self._list(LANES, stmt)

    async def insert_lane(self, lane: Lane) -> None:
        await self._insert(LANES, [lane])

    async def update_lane(self, lane: Lane) -> None:
        """Write the lane and move its version (on the caller's record too)."""
        lane.version += 1
        await self._update_each(LANES, "lane_id", [lane])

    async def lane_blockers(self, lane_ids: Sequence[str]) -> list[Blocker]:
        c = t.blockers.c
        return await self._list(
            BLOCKERS,
            select(t.blockers)
            .where(c.lane_id.in_(list(lane_ids)))
            .order_by(c.create_time, c.blocker_id),
        )

    async def insert_blocker(self, coordinator_id: str, blocker: Blocker) -> None:
        await self._insert(BLOCKERS, [blocker], coordinator_id=coordinator_id)

    async def update_blocker(self, blocker: Blocker) -> None:
        await self.conn.execute(
            update(t.blockers)
            .where(t.blockers.c.blocker_id == blocker.blocker_id)
            .values(open=blocker.open, resolve_time=blocker.resolve_time)
        )

    async def lane_tickets(self, lane_ids: Sequence[str]) -> list[Ticket]:
        c = t.tickets.c
        return await self._list(
            TICKETS,
            select(t.tickets)
            .where(c.lane_id.in_(list(lane_ids)))
            .order_by(c.key, c.tracker, c.lane_id),
        )

    async def insert_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        await self._insert(TICKETS, [ticket], coordinator_id=coordinator_id)

    # -------------------------------------------------------------- items

    async def get_item(self, item_id: str) -> Item | None:
        pending = self._pending_items.get(item_id)
        if pending is not None:
            return copy.copy(pending)
        stmt = select(t.items).where(t.items.c.item_id == item_id)
        row = (await self.raw.execute(stmt)).first()
        return ITEMS.load(row) if row is not None else None

    async def items_by_ids(self, item_ids: Sequence[str]) -> list[Item]:
        if not item_ids:
            return []
        c = t.items.c
        return await self._list(
            ITEMS, select(t.items).where(c.item_id.in_(list(item_ids))).order_by(c.item_id)
        )

    async def lane_items(self, lane_ids: Sequence[str]) -> list[Item]:
        if not lane_ids:
            return []
        c = t.items.c
        return await self._list(
            ITEMS, select(t.items).where(c.lane_id.in_(list(lane_ids))).order_by(c.seq)
        )

    async def lane_item_states(self, lane_id: str) -> dict[str, ItemState]:
        c = t.items.c
        # Held-back updates stand in for their rows (no need to write them first).
        stmt = select(c.item_id, c.key, c.state).where(c.lane_id == lane_id)
        states: dict[str, ItemState] = {}
        for r in (await self.raw.execute(stmt)).all():
            pending = self._pending_items.get(r.item_id)
            states[r.key] = pending.state if pending is not None else ItemState(r.state)
        return states

    async def lane_with_item_states(self, lane_id: str) -> tuple[Lane | None, dict[str, ItemState]]:
        """One row: the lane and its items' states aggregated into a JSON object (item id ->
        "STATE|key"; a state never holds a "|")."""
        c = t.items.c
        aggregate = func.json_object_agg if self.dialect == "postgresql" else func.json_group_object
        states = (
            select(aggregate(c.item_id, c.state.concat("|").concat(c.key)))
            .where(c.lane_id == lane_id)
            .scalar_subquery()
        ).label("item_states")
        stmt = select(t.lanes, states).where(t.lanes.c.lane_id == lane_id)
        row = (await self.raw.execute(stmt)).first()
        if row is None:
            return None, {}
        found = row._mapping["item_states"]
        if isinstance(found, str):  # SQLite hands back the JSON text
            found = json.loads(found)
        by_id: dict[str, tuple[str, ItemState]] = {}
        for item_id, packed in (found or {}).items():
            state, _bar, key = str(packed).partition("|")
            by_id[item_id] = (key, ItemState(state))
        for item_id, item in self._pending_items.items():  # held-back updates stand in
            if item_id in by_id:
                by_id[item_id] = (item.key, item.state)
        item_states = dict(by_id.values())
        return LANES.load(row), item_states

    async def waiting_items(self, lane_id: str) -> list[Item]:
        c = t.items.c
        return await self._list(
            ITEMS,
            select(t.items)
            .where(c.lane_id == lane_id, c.state == ItemState.WAITING.value)
            .order_by(c.seq),
        )

    async def queued_items(self, coordinator_id: str) -> list[Item]:
        c = t.items.c
        return await self._list(
            ITEMS,
            select(t.items)
            .where(c.coordinator_id == coordinator_id, c.state == ItemState.QUEUED.value)
            .order_by(c.seq, c.item_id),
        )

    async def insert_items(self, items: Sequence[Item]) -> None:
        await self._insert(ITEMS, items)

    async def update_items(self, items: Sequence[Item]) -> None:
        for item in items:
            # A copy: the record as it is now is what gets written (see write_pending).
            self._pending_items[item.item_id] = copy.copy(item)

    async def claim_candidates(
        self,
        coordinator_id: str,
        worker_class: str,
        now: datetime,
        after: tuple[int, int] | None,
        limit: int,
    ) -> list[Item]:
        """Ready items of one class, highest priority first then FIFO, after the (priority,
        seq) ``after``. On PostgreSQL they are locked, skipping rows another claim holds."""
        c = t.items.c
        stmt = select(t.items).where(
            *ready_filter(coordinator_id, now), c.worker_class == worker_class
        )
        if after is not None:
            stmt = stmt.where(
                or_(c.priority < after[0], and_(c.priority == after[0], c.seq > after[1]))
            )
        stmt = stmt.order_by(c.priority.desc(), c.seq).limit(limit)
        return await self._list(ITEMS, self._for_update(stmt, skip_locked=True))

    async def has_ready(self, coordinator_id: str, worker_class: str, now: datetime) -> bool:
        stmt = (
            select(t.items.c.item_id)
            .where(*ready_filter(coordinator_id, now), t.items.c.worker_class == worker_class)
            .limit(1)
        )
        return (await self._one(stmt)) is not None

    async def count_ready(self, coordinator_id: str) -> dict[str, int]:
        """Queued items per class (held or backing off included)."""
        c = t.items.c
        rows = await self._rows(
            select(c.worker_class, func.count().label("n"))
            .where(c.coordinator_id == coordinator_id, c.state == _QUEUED)
            .group_by(c.worker_class)
        )
        return {str(r.worker_class): int(r.n) for r in rows}

    async def next_not_before(
        self, coordinator_id: str, worker_class: str, now: datetime
    ) -> datetime | None:
        """When the next queued item of the class stops backing off (None: none is)."""
        c = t.items.c
        row = await self._one(
            select(func.min(c.not_before)).where(
                c.coordinator_id == coordinator_id,
                c.worker_class == worker_class,
                c.state == _QUEUED,
                c.not_before > now,
            )
        )
        return row[0] if row is not None else None
