"""Work coordinators: the row lock every write takes first, admin changes, item sequence
numbers."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Select,
    String,
    and_,
    bindparam,
    func,
    literal_column,
    select,
    update,
)

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

#: The first key of the advisory lock a Lease's claim holds (the second as above): claims take
#: turns, each counting the capacity the ones before it committed.
CLAIMS_KEY = 0x77630043


def _advisory_lock(key: int) -> ColumnElement[bool]:
    """An advisory lock as a sub-select of a lock statement's WHERE: taken once, as the row is
    found and before the row is locked."""
    lock = func.pg_advisory_xact_lock(key, func.hashtext(bindparam("coordinator_id")))
    return select(lock).scalar_subquery().is_not(None)


_WORKER_WRITES_LOCK = _advisory_lock(WORKER_WRITES_KEY)
_CLAIMS_LOCK = _advisory_lock(CLAIMS_KEY)

# What every lock statement reads: as COORDINATOR_WITH_SWITCH, and the time of the last event.
_LOCKED = select(_WC, _SWITCH, _EPOCH, _LAST_EVENT_TIME).where(
    _WC.c.coordinator_id == bindparam("coordinator_id")
)

# THE LOCKS on one work coordinator (docs/architecture.md, "Who waits for whom"); SQLite
# renders none of them (``BEGIN IMMEDIATE`` already holds the database).

#: ``WriteLock.ALL`` (every writer but the two below): both advisory locks, then ``FOR UPDATE``
#: of the row, which conflicts with every other row lock.
LOCK_COORDINATOR = ByDialect(
    _LOCKED.where(_WORKER_WRITES_LOCK, _CLAIMS_LOCK).with_for_update(of=_WC), _LOCKED
)

#: ``WriteLock.CLAIM``, and a group's late row lock before anything off its hot path: the
#: claims' advisory lock (one claim at a time; a group waits for a claim in flight, and no
#: claim starts beside it), then ``FOR NO KEY UPDATE`` of the row, which waits for another
#: late row lock and ``ALL``, not for a group's ``FOR KEY SHARE``.
LOCK_FOR_CLAIM = ByDialect(
    _LOCKED.where(_CLAIMS_LOCK).with_for_update(of=_WC, key_share=True), _LOCKED
)

#: ``WriteLock.LARGE_CLAIM``: the claims' advisory lock, then ``FOR KEY SHARE`` of the row,
#: which keeps ``FOR UPDATE`` out and lets a group's flush in (the row comes at its own flush).
LOCK_FOR_LARGE_CLAIM = ByDialect(
    _LOCKED.where(_CLAIMS_LOCK).with_for_update(of=_WC, read=True, key_share=True), _LOCKED
)

#: ``WriteLock.WORKER_WRITES``: the worker writes' advisory lock (one group at a time), then
#: ``FOR KEY SHARE`` of the row, which keeps ``FOR UPDATE`` out (``ALL``, and every writer of
#: a release before these locks) and lets a claim in.
LOCK_FOR_WORKER_WRITES = ByDialect(
    _LOCKED.where(_WORKER_WRITES_LOCK).with_for_update(of=_WC, read=True, key_share=True),
    _LOCKED,
)

#: The late row lock of a large claim or a group at its flush (``lock_row``, PostgreSQL):
#: ``FOR NO KEY UPDATE``, which waits for another flush, a claim and ``ALL``, not for a
#: ``FOR KEY SHARE``.
LOCK_COORDINATOR_ROW = _LOCKED.with_for_update(of=_WC, key_share=True)


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
