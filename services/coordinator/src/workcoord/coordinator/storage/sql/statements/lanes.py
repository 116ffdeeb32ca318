"""Lanes, their blockers and tickets, and a lane with the count of its items per state."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, bindparam, case, func, literal_column, null, select, true, update

from workcoord.coordinator.domain.model import LaneState
from workcoord.coordinator.domain.ports import LaneCursor

from ... import schema as t
from .keyset import newest_first

_L, _I, _B, _T = t.lanes, t.items, t.blockers, t.tickets

#: The lane with id ``:lane_id``.
GET_LANE = select(_L).where(_L.c.lane_id == bindparam("lane_id"))

#: Set ``served_turn`` of the lanes ``:lane_ids`` to ``:turn`` (their version stays).
MARK_LANES_SERVED = (
    update(_L)
    .where(_L.c.lane_id.in_(bindparam("lane_ids", expanding=True)))
    .values(served_turn=bindparam("turn"))
)

#: The lanes whose ids are in ``:lane_ids``, by id.
LANES_BY_IDS = (
    select(_L).where(_L.c.lane_id.in_(bindparam("lane_ids", expanding=True))).order_by(_L.c.lane_id)
)


def list_lanes(
    coordinator_id: str, state: LaneState | None, after: LaneCursor | None, limit: int
) -> Select[Any]:
    """A page of the work coordinator's lanes (of ``state``, or all), newest first, after
    the cursor ``after``."""
    stmt = select(_L).where(_L.c.coordinator_id == coordinator_id)
    if state is not None:
        stmt = stmt.where(_L.c.state == state.value)
    return newest_first(stmt, _L.c.create_time, _L.c.lane_id, after, limit)


_HELD_BACK = _I.c.item_id.in_(bindparam("pending", expanding=True))
# Per state, how many of the lane's items are in it; the items in ``:pending`` (held-back
# updates) each in a group of their own (state NULL, their id), so the caller counts them in
# their new state and only those that exist are counted.
_STATE_COUNTS = (
    select(
        case((_HELD_BACK, null()), else_=_I.c.state).label("state"),
        case((_HELD_BACK, _I.c.item_id), else_=null()).label("pending_id"),
        func.count().label("n"),
    )
    .where(_I.c.lane_id == bindparam("lane_id"))
    .group_by(literal_column("1"), literal_column("2"))
    .subquery("counts")
)

#: The lane ``:lane_id`` once per state of its items with the count (one row with no state
#: if it has none), the items in ``:pending`` each on a row of their own.
LANE_WITH_STATE_COUNTS = (
    select(_L, _STATE_COUNTS.c.state, _STATE_COUNTS.c.pending_id, _STATE_COUNTS.c.n)
    .select_from(_L.outerjoin(_STATE_COUNTS, true()))
    .where(_L.c.lane_id == bindparam("lane_id"))
)

#: The blockers of the lanes ``:lane_ids``, oldest first.
LANE_BLOCKERS = (
    select(_B)
    .where(_B.c.lane_id.in_(bindparam("lane_ids", expanding=True)))
    .order_by(_B.c.create_time, _B.c.blocker_id)
)

#: Open or resolve the blocker ``:b_blocker_id`` (``:open``, ``:resolve_time``).
UPDATE_BLOCKER = (
    update(_B)
    .where(_B.c.blocker_id == bindparam("b_blocker_id"))
    .values(open=bindparam("open"), resolve_time=bindparam("resolve_time"))
)

#: The tickets of the lanes ``:lane_ids``, by key, tracker and lane.
LANE_TICKETS = (
    select(_T)
    .where(_T.c.lane_id.in_(bindparam("lane_ids", expanding=True)))
    .order_by(_T.c.key, _T.c.tracker, _T.c.lane_id)
)
