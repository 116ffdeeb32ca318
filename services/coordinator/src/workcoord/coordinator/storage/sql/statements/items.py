"""Items: by id, by lane, by state, and the ready ones a claim takes (highest priority first;
within one priority, the lane served longest ago first; within a lane, FIFO)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Integer, and_, bindparam, func, or_, select
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


#: How a statement over ready items reaches them: through the ready queue (one row per QUEUED
#: item, kept by triggers, see ``schema_queue``), joined back on every column it copies, so
#: the planner takes the queue's coordinator, class, priority and sequence as the item's and
#: reads ``ix_ready_items_claim`` in claim order. ``items.state`` stays in :func:`ready_filter`:
#: a claim that waited for a row lock re-checks it on the row's new version.
QUEUE_JOIN = and_(
    _R.c.item_id == _I.c.item_id,
    _R.c.coordinator_id == _I.c.coordinator_id,
    _R.c.worker_class == _I.c.worker_class,
    _R.c.priority == _I.c.priority,
    _R.c.seq == _I.c.seq,
)
_QUEUED_ITEMS_FROM = _R.join(_I, QUEUE_JOIN)

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
_READY_OF_CLASS = [*ready_filter(bindparam("coordinator_id"), bindparam("now")), _OF_CLASSES]
_TURN = _L.c.served_turn
_CANDIDATE_ORDER = (_I.c.priority.desc(), _TURN, _I.c.seq)
_P = bindparam("after_priority", type_=Integer)
_T = bindparam("after_turn", type_=BigInteger)
_S = bindparam("after_seq", type_=BigInteger)
_AFTER = or_(
    _I.c.priority < _P,
    and_(_I.c.priority == _P, or_(_TURN > _T, and_(_TURN == _T, _I.c.seq > _S))),
)
_CANDIDATES = select(_I, _TURN).select_from(
    _QUEUED_ITEMS_FROM.join(_L, _L.c.lane_id == _I.c.lane_id)
)

#: THE CLAIM: up to ``:limit`` items of any of ``:worker_classes`` ready at ``:now``, with their
#: lane's turn, in claim order (the classes ranked together): highest priority first; within
#: one priority the lane served longest ago first (its ``served_turn``), then FIFO. Locked
#: with ``FOR UPDATE OF items SKIP LOCKED`` on PostgreSQL (rows another claim holds are
#: skipped; the lanes are not locked); SQLite renders no lock: its write transaction holds the
#: whole database.
CLAIM_CANDIDATES = (
    _CANDIDATES.where(*_READY_OF_CLASS)
    .order_by(*_CANDIDATE_ORDER)
    .limit(_LIMIT)
    .with_for_update(skip_locked=True, of=_I)
)

#: The claim's next page: as :data:`CLAIM_CANDIDATES`, after ``(:after_priority,
#: :after_turn, :after_seq)``.
CLAIM_CANDIDATES_AFTER = (
    _CANDIDATES.where(*_READY_OF_CLASS, _AFTER)
    .order_by(*_CANDIDATE_ORDER)
    .limit(_LIMIT)
    .with_for_update(skip_locked=True, of=_I)
)

#: One ready item of any of ``:worker_classes`` at ``:now``, if any (the look before a claim).
HAS_READY = select(_I.c.item_id).select_from(_QUEUED_ITEMS_FROM).where(*_READY_OF_CLASS).limit(1)

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
NEXT_NOT_BEFORE = (
    select(func.min(_I.c.not_before))
    .select_from(_QUEUED_ITEMS_FROM)
    .where(
        _I.c.coordinator_id == bindparam("coordinator_id"),
        _OF_CLASSES,
        _I.c.state == _QUEUED,
        _I.c.not_before > bindparam("now"),
    )
)
