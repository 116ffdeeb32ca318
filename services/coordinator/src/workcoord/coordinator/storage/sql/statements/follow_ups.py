"""What follows work up: the digest, pending actions (ticket closures), ticket syncs and
escalations of items left waiting too long."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, Select, bindparam, or_, select, update

from workcoord.coordinator.domain.model import LaneState, PendingActionState

from ... import schema as t
from .items import QUEUE_JOIN, queue_ready_filter, ready_filter

_D, _P, _TK, _ESC, _I = (
    t.digest_entries,
    t.pending_actions,
    t.tickets,
    t.escalations,
    t.items,
)
_LIMIT = bindparam("limit", type_=Integer)

#: The digest lines of ``:coordinator_id`` on ``:day``, in time order.
DIGEST_ENTRIES = (
    select(_D)
    .where(_D.c.coordinator_id == bindparam("coordinator_id"), _D.c.day == bindparam("day"))
    .order_by(_D.c.time, _D.c.entry_id)
)

#: The pending action ``:action_id``.
GET_PENDING_ACTION = select(_P).where(_P.c.action_id == bindparam("action_id"))


def list_pending_actions(
    coordinator_id: str, state: PendingActionState | None, after_id: str, limit: int
) -> Select[Any]:
    """A page of the work coordinator's pending actions (in ``state``, or all) by id."""
    stmt = select(_P).where(_P.c.coordinator_id == coordinator_id, _P.c.action_id > after_id)
    if state is not None:
        stmt = stmt.where(_P.c.state == state.value)
    return stmt.order_by(_P.c.action_id).limit(limit)


#: Up to ``:limit`` OPEN actions due at ``:now`` (never tried first, then the earliest).
DUE_PENDING_ACTIONS = (
    select(_P)
    .where(
        _P.c.coordinator_id == bindparam("coordinator_id"),
        _P.c.state == PendingActionState.OPEN.value,
        or_(_P.c.next_attempt_time.is_(None), _P.c.next_attempt_time <= bindparam("now")),
    )
    # Spelled out: SQLite would put actions without a time first, PostgreSQL last.
    .order_by(_P.c.next_attempt_time.asc().nulls_last(), _P.c.action_id)
    .limit(_LIMIT)
)

#: Record what the tracker said of the ticket (``:state``, ``:observe_time``).
UPDATE_TICKET = (
    update(_TK)
    .where(
        _TK.c.lane_id == bindparam("b_lane_id"),
        _TK.c.tracker == bindparam("b_tracker"),
        _TK.c.key == bindparam("b_key"),
    )
    .values(state=bindparam("state"), observe_time=bindparam("observe_time"))
)

#: Up to ``:limit`` tickets of open lanes: never-synced first, then the longest unsynced.
TICKETS_TO_SYNC = (
    select(_TK)
    .join(t.lanes, t.lanes.c.lane_id == _TK.c.lane_id)
    .where(
        _TK.c.coordinator_id == bindparam("coordinator_id"),
        t.lanes.c.state.in_((LaneState.ACTIVE.value, LaneState.LIVE.value)),
    )
    .order_by(_TK.c.observe_time.is_not(None), _TK.c.observe_time, _TK.c.key)
    .limit(_LIMIT)
)

#: The open escalations of ``:coordinator_id``, oldest first.
OPEN_ESCALATIONS = (
    select(_ESC)
    .where(_ESC.c.coordinator_id == bindparam("coordinator_id"), _ESC.c.open.is_(True))
    .order_by(_ESC.c.create_time, _ESC.c.escalation_id)
)

#: Resolve (at ``:when``) the open escalations of ``:b_coordinator_id``'s items ``:item_ids``.
RESOLVE_ESCALATIONS = (
    update(_ESC)
    .where(
        _ESC.c.coordinator_id == bindparam("b_coordinator_id"),
        _ESC.c.open.is_(True),
        _ESC.c.item_id.in_(bindparam("item_ids", expanding=True)),
    )
    .values(open=False, resolve_time=bindparam("when"))
)

_ESCALATED = select(_ESC.c.item_id).where(
    _ESC.c.coordinator_id == bindparam("coordinator_id"), _ESC.c.open.is_(True)
)

#: Up to ``:limit`` items ready at ``:now`` since ``:ready_before`` or earlier, not escalated.
ESCALATION_CANDIDATES = (
    select(_I)
    .select_from(t.ready_items.join(_I, QUEUE_JOIN))
    .where(
        *queue_ready_filter(bindparam("coordinator_id"), bindparam("now")),
        *ready_filter(bindparam("coordinator_id"), bindparam("now")),
        _I.c.ready_time <= bindparam("ready_before"),
        _I.c.item_id.not_in(_ESCALATED),
    )
    .order_by(_I.c.ready_time, _I.c.item_id)
    .limit(_LIMIT)
)
