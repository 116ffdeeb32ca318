"""Lanes with their blockers and tickets, and the items of lanes: what is ready, in which
order it is claimed."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import (
    Integer,
    and_,
    bindparam,
    case,
    func,
    literal_column,
    null,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.elements import BindParameter

from workcoord.coordinator.domain.model import (
    Blocker,
    Item,
    ItemState,
    Lane,
    LaneState,
    Ticket,
)
from workcoord.coordinator.domain.ports import ClaimScan, LaneCursor

from .. import schema as t
from ._base import SqlTxBase
from .keyset import newest_first
from .rows import BLOCKERS, ITEMS, LANES, TICKETS

_QUEUED = ItemState.QUEUED.value


def ready_filter(
    coordinator_id: str | BindParameter[str], now: datetime | BindParameter[datetime]
) -> list[ColumnElement[bool]]:
    """Items a worker could claim at ``now``: queued, not held, not backing off (values, or
    parameters of a statement built once)."""
    c = t.items.c
    return [
        c.coordinator_id == coordinator_id,
        c.state == _QUEUED,
        c.held.is_(False),
        or_(c.not_before.is_(None), c.not_before <= now),
    ]


_L, _I = t.lanes, t.items
_LANE_ID: BindParameter[str] = bindparam("lane_id")
_HELD_BACK = _I.c.item_id.in_(bindparam("pending", expanding=True))
# Per state, how many of the lane's items are in it; the items with held-back updates each
# in a group of their own (state NULL, their id), so only those that exist are counted.
_STATE_COUNTS = (
    select(
        case((_HELD_BACK, null()), else_=_I.c.state).label("state"),
        case((_HELD_BACK, _I.c.item_id), else_=null()).label("pending_id"),
        func.count().label("n"),
    )
    .where(_I.c.lane_id == _LANE_ID)
    .group_by(literal_column("1"), literal_column("2"))
    .subquery("counts")
)
# Built once (see RowMap.insert_statement).
_LANE_WITH_COUNTS = (
    select(_L, _STATE_COUNTS.c.state, _STATE_COUNTS.c.pending_id, _STATE_COUNTS.c.n)
    .select_from(_L.outerjoin(_STATE_COUNTS, true()))
    .where(_L.c.lane_id == _LANE_ID)
)
_GET_LANE = select(_L).where(_L.c.lane_id == _LANE_ID)
GET_ITEM = select(_I).where(_I.c.item_id == bindparam("id"))
_READY = [
    *ready_filter(bindparam("coordinator_id"), bindparam("now")),
    _I.c.worker_class == bindparam("worker_class"),
]
_HAS_READY = select(_I.c.item_id).where(*_READY).limit(1)
_CANDIDATE_ORDER = (_I.c.priority.desc(), _I.c.seq)
_AFTER = or_(
    _I.c.priority < bindparam("after_priority"),
    and_(_I.c.priority == bindparam("after_priority"), _I.c.seq > bindparam("after_seq")),
)
# A row lock skipping rows another claim holds on PostgreSQL; SQLite renders no FOR UPDATE
# (a write transaction holds the whole database there).
_CANDIDATES = (
    select(_I)
    .where(*_READY)
    .order_by(*_CANDIDATE_ORDER)
    .limit(bindparam("limit", type_=Integer, literal_execute=True))
    .with_for_update(skip_locked=True)
)
_CANDIDATES_AFTER = (
    select(_I)
    .where(*_READY, _AFTER)
    .order_by(*_CANDIDATE_ORDER)
    .limit(bindparam("limit", type_=Integer, literal_execute=True))
    .with_for_update(skip_locked=True)
)


class LanesItemsSql(SqlTxBase):
    # -------------------------------------------------------------- lanes

    async def get_lane(self, lane_id: str) -> Lane | None:
        # Held-back item and attempt updates cannot change a lane row: no need to write them.
        row = (await self.conn.execute(_GET_LANE, {"lane_id": lane_id})).first()
        return LANES.load(row) if row is not None else None

    async def list_lanes(
        self, coordinator_id: str, state: LaneState | None, after: LaneCursor | None, limit: int
    ) -> list[Lane]:
        c = t.lanes.c
        stmt = select(t.lanes).where(c.coordinator_id == coordinator_id)
        if state is not None:
            stmt = stmt.where(c.state == state.value)
        stmt = newest_first(stmt, c.create_time, c.lane_id, after, limit)
        return await self._list(LANES, stmt)

    async def insert_lane(self, lane: Lane) -> None:
        await self._insert(LANES, [lane])

    async def update_lane(self, lane: Lane) -> None:
        """Write the lane and move its version (on the caller's record too)."""
        lane.version += 1
        self._lane_counts.pop(lane.lane_id, None)
        await self._update_each(LANES, "lane_id", [lane])

    async def lane_blockers(self, lane_ids: Sequence[str]) -> list[Blocker]:
        return await self._list_in(BLOCKERS, "lane_id", lane_ids, "create_time", "blocker_id")

    async def insert_blocker(self, coordinator_id: str, blocker: Blocker) -> None:
        await self._insert(BLOCKERS, [blocker], coordinator_id=coordinator_id)

    async def update_blocker(self, blocker: Blocker) -> None:
        await self.conn.execute(
            update(t.blockers)
            .where(t.blockers.c.blocker_id == blocker.blocker_id)
            .values(open=blocker.open, resolve_time=blocker.resolve_time)
        )

    async def lane_tickets(self, lane_ids: Sequence[str]) -> list[Ticket]:
        return await self._list_in(TICKETS, "lane_id", lane_ids, "key", "tracker", "lane_id")

    async def insert_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        await self._insert(TICKETS, [ticket], coordinator_id=coordinator_id)

    # -------------------------------------------------------------- items

    async def get_item(self, item_id: str) -> Item | None:
        return await self._held_back_or_stored(self._pending_items, ITEMS, GET_ITEM, item_id)

    async def items_by_ids(self, item_ids: Sequence[str]) -> list[Item]:
        if item_ids:
            await self.write_held_back()
        return await self._list_in(ITEMS, "item_id", item_ids, "item_id")

    async def lane_items(self, lane_ids: Sequence[str]) -> list[Item]:
        if lane_ids:
            await self.write_held_back()
        return await self._list_in(ITEMS, "lane_id", lane_ids, "seq")

    async def lane_item_states(self, lane_id: str) -> dict[str, ItemState]:
        c = t.items.c
        # Held-back updates stand in for their rows (no need to write them first).
        stmt = select(c.item_id, c.key, c.state).where(c.lane_id == lane_id)
        states: dict[str, ItemState] = {}
        for r in (await self.conn.execute(stmt)).all():
            pending = self._pending_items.get(r.item_id)
            states[r.key] = pending.state if pending is not None else ItemState(r.state)
        return states

    async def lane_with_state_counts(
        self, lane_id: str
    ) -> tuple[Lane | None, dict[ItemState, int]]:
        """One round trip: the lane's row once per state its items are in, with the count
        (one row with no state if it has no items). Held-back item updates stand in for their
        rows: each such row comes back on its own, counted in the state of its update."""
        pending = {i.item_id: i for i in self._pending_items.values() if i.lane_id == lane_id}
        read = self._lane_counts.pop(lane_id, None)
        if read is not None and set(pending) == {read[2]}:
            # Read with the attempt (attempt_with_item), and only that item changed since.
            lane, others, item_id = read
            state = pending[item_id].state
            return copy.copy(lane), {**others, state: others.get(state, 0) + 1}
        rows = (
            await self.conn.execute(
                _LANE_WITH_COUNTS, {"lane_id": lane_id, "pending": list(pending)}
            )
        ).fetchall()
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
        return await self._items_in_state(t.items.c.lane_id == lane_id, ItemState.WAITING)

    async def queued_items(self, coordinator_id: str) -> list[Item]:
        mine = t.items.c.coordinator_id == coordinator_id
        return await self._items_in_state(mine, ItemState.QUEUED)

    async def _items_in_state(self, of: ColumnElement[bool], state: ItemState) -> list[Item]:
        """The items ``of`` selects (a lane's, a work coordinator's) that are in ``state``, in
        the order they were created in."""
        await self.write_held_back()
        c = t.items.c
        stmt = select(t.items).where(of, c.state == state.value).order_by(c.seq, c.item_id)
        return await self._list(ITEMS, stmt)

    async def insert_items(self, items: Sequence[Item]) -> None:
        for item in items:
            self._lane_counts.pop(item.lane_id, None)
        await self._insert(ITEMS, items)

    async def update_items(self, items: Sequence[Item]) -> None:
        for item in items:
            # A copy: the record as it is now is what gets written (see write_held_back).
            self._pending_items[item.item_id] = copy.copy(item)
            read = self._lane_counts.get(item.lane_id)
            if read is not None and read[2] != item.item_id:
                del self._lane_counts[item.lane_id]  # another item of the lane changed

    async def claim_candidates(self, scan: ClaimScan) -> list[Item]:
        """Ready items of one class, highest priority first then FIFO, after the (priority,
        seq) ``scan.after``. On PostgreSQL they are locked, skipping rows another claim holds."""
        await self.write_held_back()
        params = {
            "coordinator_id": scan.coordinator_id,
            "worker_class": scan.worker_class,
            "now": scan.now,
            "limit": scan.limit,
        }
        if scan.after is None:
            stmt = _CANDIDATES
        else:
            stmt = _CANDIDATES_AFTER
            params.update(after_priority=scan.after[0], after_seq=scan.after[1])
        rows = await self.conn.execute(stmt, params)
        return [ITEMS.load(r) for r in rows.fetchall()]

    async def has_ready(self, coordinator_id: str, worker_class: str, now: datetime) -> bool:
        await self.write_held_back()
        params = {"coordinator_id": coordinator_id, "worker_class": worker_class, "now": now}
        return (await self.conn.execute(_HAS_READY, params)).first() is not None

    async def count_ready(self, coordinator_id: str) -> dict[str, int]:
        """Queued items per class (held or backing off included)."""
        await self.write_held_back()
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
        await self.write_held_back()
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
