"""Work coordinators: the row lock every write takes first, admin changes, item sequence
numbers."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ARRAY, Select, String, and_, bindparam, func, literal_column, select, update

from ... import schema as t
from ._dialects import ByDialect

_WC, _SETTINGS = t.work_coordinators, t.platform_settings
_SWITCH = (
    select(_SETTINGS.c.work_coordinator_enabled)
    .where(_SETTINGS.c.id == 1)
    .scalar_subquery()
    .label("platform_switch")
)
_EPOCH = (
    select(_SETTINGS.c.credentials_epoch)
    .where(_SETTINGS.c.id == 1)
    .scalar_subquery()
    .label("credentials_epoch")
)

#: The work coordinator ``:coordinator_id`` with the platform switch and the credentials
#: epoch (one round trip).
COORDINATOR_WITH_SWITCH = select(_WC, _SWITCH, _EPOCH).where(
    _WC.c.coordinator_id == bindparam("coordinator_id")
)

_A, _I = t.attempts, t.items
#: A HEARTBEAT ROUND'S READ (PostgreSQL, no lock): each work coordinator ``:coordinator_ids``
#: as :data:`COORDINATOR_WITH_SWITCH`, joined to those of the attempts ``:lease_ids`` that are
#: its own, each with its item and its row's version last (``xmin``, as text): one row per
#: attempt found, or one with no attempt. Both lists are array parameters (``= ANY``), so the
#: statement is prepared once per connection whatever the round's size.
COORDINATORS_AND_ATTEMPTS = (
    select(_WC, _SWITCH, _EPOCH, _A, _I, literal_column("attempts.xmin::text").label("version"))
    .select_from(
        _WC.outerjoin(
            _A.outerjoin(_I, _I.c.item_id == _A.c.item_id),
            and_(
                _A.c.coordinator_id == _WC.c.coordinator_id,
                _A.c.lease_id == func.any(bindparam("lease_ids", type_=ARRAY(String))),
            ),
        )
    )
    .where(_WC.c.coordinator_id == func.any(bindparam("coordinator_ids", type_=ARRAY(String))))
)

# The time of the event at the coordinator's revision (its last; a primary-key lookup). NULL
# when there is none, and also when the row lock was waited for: the lookup then runs on the
# statement's snapshot, taken before the writer that moved the revision committed.
_E = t.events
_LAST_EVENT_TIME = (
    select(_E.c.time)
    .where(_E.c.coordinator_id == _WC.c.coordinator_id, _E.c.revision == _WC.c.revision)
    .scalar_subquery()
    .label("last_event_time")
)

#: The first key of the advisory lock a group of worker writes holds (PostgreSQL's
#: ``pg_advisory_xact_lock(int4, int4)``; the second is ``hashtext`` of the coordinator id —
#: two coordinators whose ids hash alike only wait for each other's groups).
WORKER_WRITES_KEY = 0x77630057

_WORKER_WRITES_LOCK = func.pg_advisory_xact_lock(
    WORKER_WRITES_KEY, func.hashtext(bindparam("coordinator_id"))
)

#: THE ROW LOCK: as :data:`COORDINATOR_WITH_SWITCH` and the time of its last event, ``FOR
#: UPDATE OF work_coordinators`` on PostgreSQL (SQLite renders no lock: ``BEGIN IMMEDIATE``
#: already holds the database). A claim takes it first (``WriteLock.CLAIM``); a group of
#: worker writes at its flush, or before anything off its hot path.
LOCK_COORDINATOR_ROW = (
    select(_WC, _SWITCH, _EPOCH, _LAST_EVENT_TIME)
    .where(_WC.c.coordinator_id == bindparam("coordinator_id"))
    .with_for_update(of=_WC)
)

#: THE LOCK every other write of one work coordinator takes first (``WriteLock.ALL``): on
#: PostgreSQL the worker writes' advisory lock (the sub-select, run once as the row is
#: found), then the row lock, in one statement; SQLite as the row lock.
LOCK_COORDINATOR = ByDialect(
    LOCK_COORDINATOR_ROW.where(select(_WORKER_WRITES_LOCK).scalar_subquery().is_not(None)),
    LOCK_COORDINATOR_ROW,
)

#: A group of worker writes' first statement (``WriteLock.WORKER_WRITES``, PostgreSQL): the
#: advisory lock of ``:coordinator_id``'s worker writes, held to the end of the transaction.
LOCK_WORKER_WRITES = select(_WORKER_WRITES_LOCK)


def list_coordinators(after_id: str, limit: int, org_slugs: list[str] | None) -> Select[Any]:
    """A page of work coordinators (of ``org_slugs``, or all) by id, after ``after_id``."""
    stmt = select(_WC).where(_WC.c.coordinator_id > after_id)
    if org_slugs is not None:
        stmt = stmt.where(_WC.c.org_slug.in_(org_slugs))
    return stmt.order_by(_WC.c.coordinator_id).limit(limit)


# What an admin (or the mailer's marks) changes: never the revision, the request id or the
# item counter.
ADMIN_COLUMNS = (
    "display_name",
    "enabled",
    "config",
    "config_version",
    "update_time",
    "mail_marks",
    "webhook_filters",
    "budget",
    "lane_budgets",
)

#: Write what an admin changes (:data:`ADMIN_COLUMNS`) of ``:b_coordinator_id``.
UPDATE_COORDINATOR = (
    update(_WC)
    .where(_WC.c.coordinator_id == bindparam("b_coordinator_id"))
    .values({name: bindparam(name) for name in ADMIN_COLUMNS})
)

#: The last item sequence number ``:coordinator_id`` gave out.
ITEM_SEQ = select(_WC.c.item_seq).where(_WC.c.coordinator_id == bindparam("coordinator_id"))

#: Move the last item sequence number of ``:b_coordinator_id`` to ``:item_seq``.
SET_ITEM_SEQ = (
    update(_WC)
    .where(_WC.c.coordinator_id == bindparam("b_coordinator_id"))
    .values(item_seq=bindparam("item_seq"))
)

#: Move the revision of ``:b_coordinator_id`` to ``:revision`` (a flush on SQLite, or with
#: several work coordinators to move).
SET_REVISION = (
    update(_WC)
    .where(_WC.c.coordinator_id == bindparam("b_coordinator_id"))
    .values(revision=bindparam("revision"))
)
