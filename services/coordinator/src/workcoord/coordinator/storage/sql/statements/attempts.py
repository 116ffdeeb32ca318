"""Attempts (leases), the exclusive keys their live ones hold, and recovery's set statements
over expired leases."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, bindparam, delete, func, select, update

from workcoord.coordinator.domain.model import AttemptStatus
from workcoord.coordinator.domain.ports import EXPIRED_ITEM_FIELDS

from ... import schema as t
from ._dialects import ByDialect

# Attempt statuses that hold a lease (LIVE_ATTEMPT_STATUSES of the model), as stored.
LIVE = ("LEASED", "RUNNING")

_A, _I, _L, _H = t.attempts, t.items, t.lanes, t.exclusive_holds
_OTHER = t.items.alias("other_items")

#: The attempt with lease id ``:id``.
GET_ATTEMPT = select(_A).where(_A.c.lease_id == bindparam("id"))


def _with_lane(states: Any) -> Any:
    others = (
        select(states(_OTHER.c.state, ","))
        .where(_OTHER.c.lane_id == _I.c.lane_id, _OTHER.c.item_id != _I.c.item_id)
        .scalar_subquery()
    )
    return (
        select(_A, _I, _L, others.label("other_states"))
        .select_from(
            _A.outerjoin(_I, _I.c.item_id == _A.c.item_id).outerjoin(
                _L, _L.c.lane_id == _I.c.lane_id
            )
        )
        .where(_A.c.lease_id == bindparam("lease_id"))
    )


#: THE FENCE'S READ: the attempt ``:lease_id``, its item, the item's lane and the states of
#: the lane's other items (one comma-separated text) in one row.
ATTEMPT_WITH_LANE = ByDialect(_with_lane(func.string_agg), _with_lane(func.group_concat))

#: THE BATCHED FENCE'S READ: the attempts ``:lease_ids``, each with its item.
ATTEMPTS_WITH_ITEMS = (
    select(_A, _I)
    .select_from(_A.outerjoin(_I, _I.c.item_id == _A.c.item_id))
    .where(_A.c.lease_id.in_(bindparam("lease_ids", expanding=True)))
)

#: The attempts of the items ``:item_ids``, by item then attempt number.
ITEM_ATTEMPTS = (
    select(_A)
    .where(_A.c.item_id.in_(bindparam("item_ids", expanding=True)))
    .order_by(_A.c.item_id, _A.c.attempt)
)

_LIVE_WHERE = (_A.c.coordinator_id == bindparam("coordinator_id"), _A.c.status.in_(LIVE))
_OF_CLASS = _A.c.worker_class == bindparam("worker_class")

#: The live attempts of the work coordinator, in lease order.
LIVE_ATTEMPTS = select(_A).where(*_LIVE_WHERE).order_by(_A.c.create_time, _A.c.lease_id)

#: The live attempts of ``:worker_class``, in lease order.
LIVE_ATTEMPTS_OF_CLASS = LIVE_ATTEMPTS.where(_OF_CLASS)

#: How many live attempts ``:worker_class`` has (capacity).
COUNT_LIVE_ATTEMPTS = select(func.count()).where(*_LIVE_WHERE, _OF_CLASS)

#: Which of the exclusive keys ``:keys`` a live lease holds, and which lease.
EXCLUSIVE_HOLDERS = select(_H.c.key, _H.c.lease_id).where(
    _H.c.coordinator_id == bindparam("coordinator_id"),
    _H.c.key.in_(bindparam("keys", expanding=True)),
)

#: The attempts one Lease call (``:lease_request``) granted, by lease id.
LEASE_REQUEST_ATTEMPTS = (
    select(_A)
    .where(
        _A.c.coordinator_id == bindparam("coordinator_id"),
        _A.c.lease_request == bindparam("lease_request"),
    )
    .order_by(_A.c.lease_id)
)

#: Hold an exclusive key (one row per key; its primary key allows one live holder).
INSERT_HOLDS = _H.insert()

#: Free the exclusive keys the leases ``:lease_ids`` held.
RELEASE_HOLDS = delete(_H).where(_H.c.lease_id.in_(bindparam("lease_ids", expanding=True)))

_DUE = (
    select(_A.c.lease_id)
    .where(
        _A.c.coordinator_id == bindparam("b_coordinator_id"),
        _A.c.status.in_(LIVE),
        _A.c.lease_expire_time <= bindparam("now"),
    )
    .order_by(_A.c.lease_expire_time, _A.c.lease_id)
    .limit(bindparam("limit", type_=Integer))
)

#: RECOVERY: end (DEAD at ``:now``) up to ``:limit`` live attempts of ``:b_coordinator_id``
#: expired by ``:now``, earliest expiry first, returning them.
END_EXPIRED_LEASES = (
    update(_A)
    .where(_A.c.lease_id.in_(_DUE.scalar_subquery()))
    .values(status=AttemptStatus.DEAD.value, end_time=bindparam("now"))
    .returning(*_A.c)
)

#: The items ``:item_ids`` of expired leases, only the columns of ``EXPIRED_ITEM_FIELDS``.
EXPIRED_ITEMS = select(*(_I.c[name] for name in EXPIRED_ITEM_FIELDS)).where(
    _I.c.item_id.in_(bindparam("item_ids", expanding=True))
)
