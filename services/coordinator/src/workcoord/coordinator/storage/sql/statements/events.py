"""The event log of each work coordinator (rows are inserted by a flush: see
:mod:`.bulk`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, Select, bindparam, select

from ... import schema as t

_E = t.events

#: The time of the event at ``:revision`` of ``:coordinator_id`` (one primary-key lookup).
LAST_EVENT_TIME = select(_E.c.time).where(
    _E.c.coordinator_id == bindparam("coordinator_id"), _E.c.revision == bindparam("revision")
)


def list_events(
    coordinator_id: str, since_revision: int, limit: int, lane_id: str, item_id: str
) -> Select[Any]:
    """Up to ``limit`` events after ``since_revision`` (of one lane or item, when given), in
    revision order."""
    stmt = select(_E).where(_E.c.coordinator_id == coordinator_id, _E.c.revision > since_revision)
    if lane_id:
        stmt = stmt.where(_E.c.lane_id == lane_id)
    if item_id:
        stmt = stmt.where(_E.c.item_id == item_id)
    return stmt.order_by(_E.c.revision).limit(limit)


#: The lane id of each event after ``:after_revision`` in revision order, at most ``:limit``
#: (one range of the primary key, no event bodies).
EVENT_LANE_IDS = (
    select(_E.c.lane_id)
    .where(
        _E.c.coordinator_id == bindparam("coordinator_id"),
        _E.c.revision > bindparam("after_revision"),
    )
    .order_by(_E.c.revision)
    .limit(bindparam("limit", type_=Integer))
)
