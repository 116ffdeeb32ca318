"""Items: by id, by lane, by state, and the ready ones a claim takes (highest priority first;
within one priority, the lane served longest ago first; within a lane, FIFO)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Integer,
    Select,
    String,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    union_all,
)
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.elements import BindParameter

from workcoord.coordinator.domain.model import ItemState

from ... import schema as t

_I = t.items
_L = t.lanes
_R = t.ready_items
_QUEUED = ItemState.QUEUED.value


def ready_filter(
    coordinator_id: str | BindParameter[str], now: datetime | BindParameter[datetime]
) -> list[ColumnElement[bool]]:
    """Items a worker could claim at ``now`` as far as a store knows (values, or parameters of
    a statement built once): those no gate of
    :data:`~workcoord.coordinator.domain.leasability.STORE_GATES` holds: queued (not waiting,
    stopped or awaiting approval), not held (the item's mirror of its lane's pause and open
    blockers), not backing off. The memory twin is ``leasability.ready_in_store``; a property
    test checks both select what the domain says."""
    c = _I.c
    return [
        c.coordinator_id == coordinator_id,
        c.state == _QUEUED,
        c.held.is_(False),
        or_(c.not_before.is_(None), c.not_before <= now),
    ]


#: How a statement over ready items reaches the items: from the ready queue (one row per QUEUED
#: item, kept by triggers, see ``schema_queue``), by id.
QUEUE_JOIN = _R.c.item_id == _I.c.item_id
_QUEUED_ITEMS_FROM = _R.join(_I, QUEUE_JOIN)


def queue_ready_filter(
    coordinator_id: BindParameter[str], now: BindParameter[datetime]
) -> list[ColumnElement[bool]]:
    """:func:`ready_filter` on the queue's own columns (a row there is a QUEUED item)."""
    c = _R.c
    return [
        c.coordinator_id == coordinator_id,
        c.held.is_(False),
        or_(c.not_before.is_(None), c.not_before <= now),
    ]


_LIMIT = bindparam("limit", type_=Integer, literal_execute=True)

#: The item with id ``:id``.
GET_ITEM = select(_I).where(_I.c.item_id == bindparam("id"))

#: The items whose ids are in ``:item_ids``, by id.
ITEMS_BY_IDS = (
    select(_I).where(_I.c.item_id.in_(bindparam("item_ids", expanding=True))).order_by(_I.c.item_id)
)

#: The items of the lanes ``:lane_ids``, in sequence.
LANE_ITEMS = (
    select(_I).where(_I.c.lane_id.in_(bindparam("lane_ids", expanding=True))).order_by(_I.c.seq)
)

#: Id, key and state of each item of the lane ``:lane_id``.
LANE_ITEM_STATES = select(_I.c.item_id, _I.c.key, _I.c.state).where(
    _I.c.lane_id == bindparam("lane_id")
)

#: The WAITING items of the lane ``:lane_id``, in the order they were created in.
WAITING_ITEMS = (
    select(_I)
    .where(_I.c.lane_id == bindparam("lane_id"), _I.c.state == ItemState.WAITING.value)
    .order_by(_I.c.seq, _I.c.item_id)
)

#: The QUEUED items of the work coordinator ``:coordinator_id``, in the order they were
#: created in.
QUEUED_ITEMS = (
    select(_I)
    .select_from(_QUEUED_ITEMS_FROM)
    .where(_I.c.coordinator_id == bindparam("coordinator_id"), _I.c.state == _QUEUED)
    .order_by(_I.c.seq, _I.c.item_id)
)

# The classes a worker asked for (one or several): ``:worker_classes``.
_OF_CLASSES = _R.c.worker_class.in_(bindparam("worker_classes", expanding=True))
_COORDINATOR: BindParameter[str] = bindparam("coordinator_id")
_NOW: BindParameter[datetime] = bindparam("now")
_QUEUE_READY_OF_CLASS = [*queue_ready_filter(_COORDINATOR, _NOW), _OF_CLASSES]
_TURN = _R.c.served_turn
_P = bindparam("after_priority", type_=Integer)
_T = bindparam("after_turn", type_=BigInteger)
_S = bindparam("after_seq", type_=BigInteger)
# After the cursor in claim order. The first term is implied by the rest; it is there so the
# index walk of a further page starts at the cursor's priority.
_AFTER = and_(
    _R.c.priority <= _P,
    or_(
        _R.c.priority < _P,
        and_(_R.c.priority == _P, or_(_TURN > _T, and_(_TURN == _T, _R.c.seq > _S))),
    ),
)


def _ranked_of_class(index: int, after: bool) -> Select[Any]:
    """The first ``:limit`` queue rows of the class ``:worker_class_<index>`` in claim order."""
    return (
        select(_R.c.item_id, _R.c.priority, _TURN, _R.c.seq)
        .where(
            *queue_ready_filter(_COORDINATOR, _NOW),
            _R.c.worker_class == bindparam(f"worker_class_{index}"),
            *((_AFTER,) if after else ()),
        )
        .order_by(_R.c.priority.desc(), _TURN, _R.c.seq)
        .limit(_LIMIT)
    )


def claim_candidates(classes: int, *, after: bool) -> Select[Any]:
    """THE CLAIM: up to ``:limit`` items of any of the ``classes`` classes
    ``:worker_class_0``, ``:worker_class_1``, … ready at ``:now``, with their lane's turn, in
    claim order (the classes ranked together): highest priority first; within one priority the
    lane served longest ago first (its ``served_turn``, copied to the queue rows), then FIFO;
    with ``after``, only those after ``(:after_priority, :after_turn, :after_seq)`` (the next
    page).

    First the queue's narrow rows: the queue row holds the lane's turn (0017), so
    ``ix_ready_items_claim`` gives the whole order of one class, and the planner walks it and
    stops at the ``LIMIT``, however deep the queue. Several classes are ranked each on its own
    and the pages merged (a ``worker_class IN (…)`` would lose the index order and sort every
    queued row of the classes). Only then are those items read and locked, with ``FOR UPDATE
    OF items SKIP LOCKED`` on PostgreSQL (rows another transaction holds are skipped, so a page
    may come short; the lanes are not locked); SQLite renders no lock: its write transaction
    holds the whole database. The items' own state is checked again (a row the queue still
    lists is QUEUED in the same snapshot; the check guards a row changed since). Built once per
    shape."""
    key = (classes, after)
    if key not in _CLAIMS:
        _CLAIMS[key] = _claim(classes, after)
    return _CLAIMS[key]


_CLAIMS: dict[tuple[int, bool], Select[Any]] = {}


def _claim(classes: int, after: bool) -> Select[Any]:
    if classes == 1:
        ranked = _ranked_of_class(0, after).subquery("ranked")
    else:
        pages = [select(_ranked_of_class(i, after).subquery(f"class_{i}")) for i in range(classes)]
        merged = union_all(*pages).subquery("merged")
        ranked = (
            select(merged)
            .order_by(merged.c.priority.desc(), merged.c.served_turn, merged.c.seq)
            .limit(_LIMIT)
            .subquery("ranked")
        )
    return (
        select(_I, ranked.c.served_turn)
        .join_from(ranked, _I, _I.c.item_id == ranked.c.item_id)
        .where(*ready_filter(_COORDINATOR, _NOW))
        .order_by(ranked.c.priority.desc(), ranked.c.served_turn, ranked.c.seq)
        .with_for_update(skip_locked=True, of=_I)
    )


#: One ready item of any of ``:worker_classes`` at ``:now``, if any (the look before a claim):
#: the queue alone.
HAS_READY = select(_R.c.item_id).where(*_QUEUE_READY_OF_CLASS).limit(1)

#: How many items of each class are QUEUED (held or backing off included): the queue's rows.
COUNT_READY = (
    select(_R.c.worker_class, func.count().label("n"))
    .where(_R.c.coordinator_id == bindparam("coordinator_id"))
    .group_by(_R.c.worker_class)
)

#: How many items are AWAITING_APPROVAL or STOPPED (waiting on a person), by state, with the
#: earliest ``update_time`` of each.
COUNT_AWAITING_HUMAN = (
    select(_I.c.state, func.count().label("n"), func.min(_I.c.update_time).label("since"))
    .where(
        _I.c.coordinator_id == bindparam("coordinator_id"),
        _I.c.state.in_([ItemState.AWAITING_APPROVAL.value, ItemState.STOPPED.value]),
    )
    .group_by(_I.c.state)
)

#: When the first QUEUED item of any of ``:worker_classes`` backing off after ``:now`` may run.
NEXT_NOT_BEFORE = select(func.min(_R.c.not_before)).where(
    _R.c.coordinator_id == _COORDINATOR, _OF_CLASSES, _R.c.not_before > _NOW
)

_IDS = func.any(bindparam("item_ids", type_=ARRAY(String)))

#: PostgreSQL: turn the transaction setting under which the ready queue's update trigger stands
#: aside (``schema_queue.WRITER_KEEPS_QUEUE``) ``:on`` ('on') or off ('off').
SET_WRITER_KEEPS_QUEUE = select(
    func.set_config(t.WRITER_KEEPS_QUEUE, bindparam("on", type_=String), True)
)

#: PostgreSQL: drop the queue rows of the items ``:item_ids`` (before they are listed again).
SYNC_QUEUE_DELETE = delete(_R).where(_R.c.item_id == _IDS)

#: PostgreSQL: the queue rows of those of the items ``:item_ids`` that are QUEUED, copied from
#: the items, with their lanes' turns (read here in the one statement, not by the queue's
#: trigger row by row).
SYNC_QUEUE_INSERT = insert(_R).from_select(
    [c.name for c in _R.c],
    select(*(_L.c.served_turn if c.name == "served_turn" else _I.c[c.name] for c in _R.c))
    .join_from(_I, _L, _L.c.lane_id == _I.c.lane_id)
    .where(_I.c.item_id == _IDS, _I.c.state == _QUEUED),
)
