"""What the view cache reads to bring its lanes up to date: light rows, no JSON bodies."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, bindparam, select

from workcoord.coordinator.domain.ports import LaneCursor

from ... import schema as t
from .keyset import newest_first

_L, _TK = t.lanes, t.tickets


def lane_stamps(coordinator_id: str, after: LaneCursor | None, limit: int) -> Select[Any]:
    """``list_lanes`` (all states) as (lane id, create time, version): the same order and
    cursor, from the index of the lanes by coordinator and creation, plus the version."""
    c = _L.c
    stmt = select(c.lane_id, c.create_time, c.version).where(c.coordinator_id == coordinator_id)
    return newest_first(stmt, c.create_time, c.lane_id, after, limit)


#: Every ticket of ``:coordinator_id``'s lanes, by key, tracker and lane: found through the
#: lanes (``ix_lanes_coordinator_created``, then the tickets' primary key), as no index leads
#: from ``tickets.coordinator_id``.
COORDINATOR_TICKETS = (
    select(_TK)
    .join(_L, _L.c.lane_id == _TK.c.lane_id)
    .where(_L.c.coordinator_id == bindparam("coordinator_id"))
    .order_by(_TK.c.key, _TK.c.tracker, _TK.c.lane_id)
)
