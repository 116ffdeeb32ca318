"""Tracker connections: a work coordinator's sealed credentials for its ticket trackers."""

from __future__ import annotations

from sqlalchemy import Integer, bindparam, delete, select

from ... import schema as t

_C = t.tracker_connections

#: The tracker connection ``:tracker_id``.
GET_TRACKER_CONNECTION = select(_C).where(_C.c.tracker_id == bindparam("tracker_id"))

#: Up to ``:limit`` connections of ``:coordinator_id`` after ``:after_id``, by id.
LIST_TRACKER_CONNECTIONS = (
    select(_C)
    .where(
        _C.c.coordinator_id == bindparam("coordinator_id"),
        _C.c.tracker_id > bindparam("after_id"),
    )
    .order_by(_C.c.tracker_id)
    .limit(bindparam("limit", type_=Integer))
)

#: Delete the tracker connection ``:tracker_id``.
DELETE_TRACKER_CONNECTION = delete(_C).where(_C.c.tracker_id == bindparam("tracker_id"))
