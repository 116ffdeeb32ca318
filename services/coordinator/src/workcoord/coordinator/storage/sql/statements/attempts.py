"""Attempts (leases), the exclusive keys their live ones hold, and recovery's set statements
over expired leases."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, Text, bindparam, cast, delete, func, null, select, union_all, update

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

#: As :data:`GET_ATTEMPT`, in a write transaction: ``FOR UPDATE`` of the attempt's row on
#: PostgreSQL (SQLite renders no lock: ``BEGIN IMMEDIATE`` holds the database). Heartbeats
#: extend leases without the coordinator's lock, so every write that reads an attempt to
#: write it back holds its row (no lost update either way).
GET_ATTEMPT_FOR_UPDATE = GET_ATTEMPT.with_for_update(of=_A)


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

#: As :data:`ATTEMPT_WITH_LANE`, in a write transaction: ``FOR UPDATE OF attempts``.
ATTEMPT_WITH_LANE_FOR_UPDATE = ByDialect(
    _with_lane(func.string_agg).with_for_update(of=_A),
    _with_lane(func.group_concat).with_for_update(of=_A),
)

#: THE BATCHED FENCE'S READ: the attempts ``:lease_ids``, each with its item.
ATTEMPTS_WITH_ITEMS = (
    select(_A, _I)
    .select_from(_A.outerjoin(_I, _I.c.item_id == _A.c.item_id))
    .where(_A.c.lease_id.in_(bindparam("lease_ids", expanding=True)))
)

#: As :data:`ATTEMPTS_WITH_ITEMS`, in a write transaction: ``FOR UPDATE OF attempts``, the
#: rows taken in lease id order (two batches over the same leases cannot deadlock).
ATTEMPTS_WITH_ITEMS_FOR_UPDATE = ATTEMPTS_WITH_ITEMS.order_by(_A.c.lease_id).with_for_update(of=_A)

#: As :data:`ATTEMPTS_WITH_ITEMS_FOR_UPDATE`, never waiting: ``FOR UPDATE OF attempts SKIP
#: LOCKED`` (rows another transaction holds are not returned). A heartbeat round's read in a
#: write transaction (``read_in_turn``); on PostgreSQL a round runs outside one and reads with
#: ``coordinators:COORDINATORS_AND_ATTEMPTS`` instead (docs/architecture.md, "Lock order").
ATTEMPTS_WITH_ITEMS_SKIP_LOCKED = ATTEMPTS_WITH_ITEMS.order_by(_A.c.lease_id).with_for_update(
    of=_A, skip_locked=True
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

_W = t.workers

_IN_CLASSES = _A.c.worker_class.in_(bindparam("worker_classes", expanding=True))
_NO_WORKER = [cast(null(), c.type) for c in _W.c]
_NO_ATTEMPT = [cast(null(), c.type) for c in _A.c]

#: The worker ``:worker_id`` of ``:coordinator_id`` and the loads of the classes
#: ``:worker_classes`` in one round trip (a claim needs both, after the coordinator's lock): rows
#: of the worker's columns, then the attempt's, then a class and a count. The worker's row (if
#: it is registered) has only the worker's columns set; each of ITS live attempts of those
#: classes only the attempt's; each class with live attempts only its name and their number
#: (every worker's: the capacity in use). Unordered.
WORKER_AND_LOADS = union_all(
    select(_W, *_NO_ATTEMPT, cast(null(), Text), cast(null(), Integer)).where(
        _W.c.coordinator_id == bindparam("coordinator_id"),
        _W.c.worker_id == bindparam("worker_id"),
    ),
    select(*_NO_WORKER, _A, cast(null(), Text), cast(null(), Integer)).where(
        *_LIVE_WHERE, _IN_CLASSES, _A.c.worker_id == bindparam("worker_id")
    ),
    select(*_NO_WORKER, *_NO_ATTEMPT, _A.c.worker_class, func.count())
    .where(*_LIVE_WHERE, _IN_CLASSES)
    .group_by(_A.c.worker_class),
)

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

#: As :data:`LEASE_REQUEST_ATTEMPTS`, in a write transaction: ``FOR UPDATE``.
LEASE_REQUEST_ATTEMPTS_FOR_UPDATE = LEASE_REQUEST_ATTEMPTS.with_for_update(of=_A)

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
#: The due rows are checked again on the row itself (not only by the subquery's snapshot):
#: a Heartbeat takes no coordinator lock, so a lease it extended and committed while this
#: statement waited for the row is skipped (PostgreSQL re-evaluates these conditions on the
#: row's new version), never ended on a stale read.
END_EXPIRED_LEASES = (
    update(_A)
    .where(
        _A.c.lease_id.in_(_DUE.scalar_subquery()),
        _A.c.status.in_(LIVE),
        _A.c.lease_expire_time <= bindparam("now"),
    )
    .values(status=AttemptStatus.DEAD.value, end_time=bindparam("now"))
    .returning(*_A.c)
)

#: The columns of ``EXPIRED_ITEM_FIELDS`` but the retry policy, read as they are.
EXPIRED_ITEM_COLUMNS = tuple(name for name in EXPIRED_ITEM_FIELDS if name != "retry_policy")

#: The items ``:item_ids`` of expired leases: the columns of :data:`EXPIRED_ITEM_COLUMNS`,
#: then the retry policy as text (items of a lane mostly share one: the reader decodes each
#: distinct text once, not a JSON document per row).
EXPIRED_ITEMS = select(
    *(_I.c[name] for name in EXPIRED_ITEM_COLUMNS), cast(_I.c.retry_policy, Text)
).where(_I.c.item_id.in_(bindparam("item_ids", expanding=True)))
