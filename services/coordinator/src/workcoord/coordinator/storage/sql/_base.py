"""What every part of a SQL transaction shares: its connection and dialect, the item and
attempt updates it holds back, and the helpers that run the named statements of
:mod:`.statements` and map their rows with :mod:`.rows`."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Table
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

from workcoord.coordinator.domain.model import (
    Attempt,
    Coordinator,
    Event,
    Item,
    ItemState,
    Lane,
    NewEvent,
    UsageTotal,
)
from workcoord.coordinator.domain.usage import merged

from .. import schema as t
from .rows import ATTEMPTS, COORDINATORS, EVENTS, ITEMS, USAGE_TOTALS, RowMap
from .statements import attempts as attempt_sql
from .statements import bulk
from .statements import follow_ups as follow_up_sql
from .statements import lanes as lane_sql
from .statements import usage as usage_sql

_R = TypeVar("_R")
_Params = Mapping[str, Any] | None
# One ``unnest`` of a statement written together, with its rows' parameters; parts, and the
# number of the next parameter.
Part = tuple[bulk.Unnest, list[dict[str, Any]]]
Parts = tuple[list[Part], int]

# Per record class, how to copy one: its constructor over all its fields, read at once.
_COPIERS: dict[type, Callable[[Any], Any]] = {}


def copied(record: _R) -> _R:
    """A shallow copy of ``record``, as ``copy.copy`` makes it (several times faster for a
    dataclass whose fields all go through ``__init__``, which the held-back item and attempt
    updates copy once per row)."""
    cls = type(record)
    copier = _COPIERS.get(cls)
    if copier is None:
        fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
        plain = len(fields) > 1 and all(f.init for f in fields)
        copier = copy.copy
        if plain and not hasattr(cls, "__post_init__"):
            read = operator.attrgetter(*(f.name for f in fields))

            def by_fields(r: Any, cls: Any = cls, read: Any = read) -> Any:
                return cls(*read(r))

            copier = by_fields
        _COPIERS[cls] = copier
    return copier(record)  # type: ignore[no-any-return]


class SqlTxBase:
    """One transaction's connection and the helpers its parts build on.

    Item and attempt updates (``update_items``, ``update_attempts``) are held back and
    written together, one statement per table: a group of worker writes sharing the
    transaction (group commit) then updates all its items and attempts at once, not once per
    member. So are two writes of every claim that nothing in the transaction reads back: the
    lanes' turns (``mark_lanes_served``) and the escalations a claim resolves
    (``resolve_escalations``), and on PostgreSQL the claim's new attempts themselves
    (``insert_attempts``; their exclusive holds are inserted at once). On PostgreSQL all
    held-back writes go in one statement at either point. Held-back writes happen at two
    named points only, never behind a statement's back:

    * :meth:`write_held_back`, which the parts call first wherever a statement must see them:
      every read that scans item or attempt rows (anything but a lookup by id; the claim's
      scan also orders by the lanes' turns), recovery's set statements over them,
      ``insert_attempts`` (an item has one live attempt at most, and a held-back update may end
      it), and every read or insert of escalations;
    * :meth:`~.coordinators.CoordinatorsSql.flush`, at the end of the transaction, with the
      events and the revision.

    On PostgreSQL the roll-ups ``add_usage`` adds to are held back too, and written only with
    the flush (they are the last rows a transaction locks, see Lock order in
    docs/architecture.md) or by :meth:`write_held_back_usage` before a read of roll-ups.

    Reads by id (``get_item``, ``get_attempt``, ``attempt_with_item``) and the lane's item
    states answer from the held-back updates without writing them. Every other statement runs
    where its port method is called.
    """

    def __init__(
        self, conn: AsyncConnection, dialect: str, now: datetime, coordinator: Coordinator | None
    ) -> None:
        self.conn = conn
        self.dialect = dialect
        self.now = now
        self.coordinator = coordinator
        # A write transaction reads attempts ``FOR UPDATE`` (see statements.attempts
        # GET_ATTEMPT_FOR_UPDATE): Heartbeats extend leases without the coordinator's lock.
        self.lock_attempts = False
        # In SqlStore.extend on PostgreSQL: statements commit alone, and the attempts read
        # keep their row's version (lease id -> ``xmin``) for extend_attempts.
        self.in_place = False
        self._versions: dict[str, str] = {}
        # A large claim or a group of worker writes on PostgreSQL (LARGE_CLAIM,
        # WORKER_WRITES): the coordinator's row is not locked yet (lock_row), and the events
        # appended meanwhile wait for it, unnumbered: (coordinator, events, actor).
        self.lock_deferred = False
        self._deferred_events: list[tuple[Coordinator, list[NewEvent], str]] = []
        # Appended events and the revisions they move, written together at the end.
        self._events: list[Event] = []
        self._revisions: dict[str, int] = {}
        # The webhook filters of each coordinator that appended events (see flush).
        self._webhook_filters: dict[str, dict[str, list[str]]] = {}
        # Per coordinator, (revision, time) of the last event: what the store knows of those
        # committed before (see SqlStore.write), and what this transaction appended.
        self.known_event_times: Mapping[str, tuple[int, datetime]] = {}
        self.appended_event_times: dict[str, tuple[int, datetime]] = {}
        # ... and what the coordinator's lock read of it (LOCK_COORDINATOR), whoever wrote it.
        self.locked_event_times: dict[str, tuple[int, datetime]] = {}
        # Held-back updates by id (the latest record of each), written by write_held_back.
        self._pending_items: dict[str, Item] = {}
        self._pending_attempts: dict[str, Attempt] = {}
        # The stored column values of the items and attempts the hot paths read (the claim's
        # candidates, a worker write's fence read), by id: a held-back update of one of them
        # writes only the columns that differ (see ``changed_params``).
        self._stored_items: dict[str, tuple[Any, ...]] = {}
        self._stored_attempts: dict[str, tuple[Any, ...]] = {}
        # The held-back attempts not in the table yet (PostgreSQL: a claim's new attempts are
        # inserted with the flush, see insert_attempts): written as an insert, not an update.
        self._attempts_to_insert: set[str] = set()
        # Held-back lane turns (lane id -> turn) and escalation resolutions ((coordinator id,
        # item id) -> when), written by write_held_back or with the flush.
        self._pending_turns: dict[str, int] = {}
        self._pending_resolutions: dict[tuple[str, str], datetime] = {}
        # PostgreSQL: the roll-ups added so far (``add_usage``), written with the flush or
        # before a read of roll-ups (write_held_back_usage), never at write_held_back: they
        # are the last rows a transaction locks (Lock order).
        self._pending_usage: list[UsageTotal] = []
        # The platform switch as read with the coordinator's lock (None: not read yet).
        self._platform_switch: bool | None = None
        self.locked_credentials_epoch: int | None = None
        self.seen_credentials_epoch: int | None = None
        # Lane id -> (the lane, how many of its other items are in each state, the item): read
        # with a Complete's attempt so its lane's counts need no second round trip; dropped
        # when anything else of the lane changes (see LanesItemsSql.lane_with_state_counts).
        self._lane_counts: dict[str, tuple[Lane, dict[ItemState, int], str]] = {}

    async def lock_row(self, *, claims_out: bool = False) -> None:
        """Take the coordinator's row now, if this transaction takes it late
        (``CoordinatorsSql.lock_row``)."""
        raise NotImplementedError

    async def write_held_back(self, before: Parts | None = None) -> None:
        """Write the held-back item and attempt updates, lane turns and escalation resolutions
        now: on PostgreSQL in ONE statement (``_write_together``, as the flush writes them,
        after the parts ``before`` built earlier, if any), else one statement per table; none
        when nothing is held back. See the class docstring for who calls it."""
        if self.dialect == "postgresql":
            await self._write_together((), None, before=before)
            return
        if self._pending_items:
            items, self._pending_items = list(self._pending_items.values()), {}
            await self._update_each(ITEMS, "item_id", items)
        if self._pending_attempts:
            attempts, self._pending_attempts = list(self._pending_attempts.values()), {}
            await self._update_each(ATTEMPTS, "lease_id", attempts)
        if self._pending_turns:
            turns, self._pending_turns = self._pending_turns, {}
            by_turn: dict[int, list[str]] = {}
            for lane_id, turn in sorted(turns.items()):
                by_turn.setdefault(turn, []).append(lane_id)
            for turn, lane_ids in by_turn.items():
                params = {"lane_ids": lane_ids, "turn": turn}
                await self.conn.execute(lane_sql.MARK_LANES_SERVED, params)
        if self._pending_resolutions:
            resolutions, self._pending_resolutions = self._pending_resolutions, {}
            by_when: dict[tuple[str, datetime], list[str]] = {}
            for (coordinator_id, item_id), when in sorted(resolutions.items()):
                by_when.setdefault((coordinator_id, when), []).append(item_id)
            for (coordinator_id, when), item_ids in by_when.items():
                params = {"b_coordinator_id": coordinator_id, "item_ids": item_ids, "when": when}
                await self.conn.execute(follow_up_sql.RESOLVE_ESCALATIONS, params)

    async def write_held_back_usage(self) -> None:
        """Add the held-back roll-ups now (``usage:ADD_USAGE``; none when none are held)."""
        if self._pending_usage:
            totals, self._pending_usage = merged(self._pending_usage), []
            params = [USAGE_TOTALS.values(total) for total in totals]
            await self.conn.execute(usage_sql.ADD_USAGE.of(self.dialect), params)

    async def _rows(self, stmt: Executable, params: _Params = None) -> Sequence[Row[Any]]:
        """The rows ``stmt`` returns with ``params``."""
        return (await self.conn.execute(stmt, params)).fetchall()

    async def _one(self, stmt: Executable, params: _Params = None) -> Row[Any] | None:
        """The first row ``stmt`` returns with ``params``, or None."""
        return (await self.conn.execute(stmt, params)).first()

    async def _rowcount(self, stmt: Executable, params: _Params) -> int:
        """How many rows ``stmt`` (an UPDATE or DELETE) matched."""
        return int((await self.conn.execute(stmt, params)).rowcount)

    async def _get(self, rows: RowMap[_R], stmt: Executable, params: _Params) -> _R | None:
        """The record ``stmt`` (a select of ``rows``'s table) finds, or None."""
        row = await self._one(stmt, params)
        return rows.load(row) if row is not None else None

    async def _list(self, rows: RowMap[_R], stmt: Executable, params: _Params = None) -> list[_R]:
        """The records ``stmt`` (a select of ``rows``'s table) finds, in its order."""
        return [rows.load(r) for r in await self._rows(stmt, params)]

    async def _held_back_or_stored(
        self, held_back: Mapping[str, _R], rows: RowMap[_R], by_id: Executable, record_id: str
    ) -> _R | None:
        """The record with id ``record_id``: a copy of its held-back update if there is one,
        else the row ``by_id`` (a select of ``rows``'s table by the parameter ``id``) finds;
        the held-back changes are not written first."""
        pending = held_back.get(record_id)
        if pending is not None:
            return copied(pending)
        return await self._get(rows, by_id, {"id": record_id})

    async def _release_holds(self, ended: Sequence[Attempt]) -> None:
        """Free the exclusive keys the ``ended`` attempts held (one statement; none if none
        held a key)."""
        keyed = [a.lease_id for a in ended if a.exclusive_key]
        if keyed:
            await self.conn.execute(attempt_sql.RELEASE_HOLDS, {"lease_ids": keyed})

    async def _insert(self, rows: RowMap[_R], records: Sequence[_R], **store: Any) -> None:
        """Insert ``records`` (one statement; nothing for none): ``bulk.unnest_insert`` for
        several rows on PostgreSQL, else ``bulk.insert_rows``."""
        if not records:
            return
        params = [rows.values(r, **store) for r in records]
        if self.dialect == "postgresql" and len(params) > 1:
            part = bulk.unnest_insert(rows.table, tuple(params[0]), self.conn.dialect, 1)
            await self._run_together([(part, params)], None)
            return
        await self.conn.execute(bulk.insert_rows(rows.table), params)

    def _kept(self, rows: RowMap[Any]) -> dict[str, tuple[Any, ...]] | None:
        """The stored values the hot reads kept of ``rows``'s table (items, attempts), by id;
        None for another table."""
        if rows is ITEMS:
            return self._stored_items
        if rows is ATTEMPTS:
            return self._stored_attempts
        return None

    def _load_item(self, row: Row[Any], offset: int = 0) -> Item:
        """The item a row holds (from ``offset``), its stored values kept (``_kept``)."""
        item = ITEMS.load(row, offset)
        self._stored_items[item.item_id] = ITEMS.stored(row, offset)
        return item

    def _load_attempt(self, row: Row[Any], offset: int = 0) -> Attempt:
        """The attempt a row holds (from ``offset``), its stored values kept (``_kept``)."""
        attempt = ATTEMPTS.load(row, offset)
        self._stored_attempts[attempt.lease_id] = ATTEMPTS.stored(row, offset)
        return attempt

    def _load_coordinator(self, row: Row[Any]) -> Coordinator:
        """The work coordinator a row of ``COORDINATOR_WITH_SWITCH``'s columns holds (first),
        the platform switch and the credentials epoch read with it noted (``platform_enabled``
        answers from them; ``seen_credentials_epoch``)."""
        switch_value = row._mapping["platform_switch"]
        self._platform_switch = True if switch_value is None else bool(switch_value)
        epoch = row._mapping["credentials_epoch"]
        self.seen_credentials_epoch = None if epoch is None else int(epoch)
        return COORDINATORS.load(row)

    async def _update_each(
        self,
        rows: RowMap[_R],
        key: str,
        records: Sequence[_R],
        columns: Sequence[str] | None = None,
    ) -> None:
        """Write every column (or only ``columns``) of each record to the row with the same
        ``key`` (one statement): ``bulk.unnest_update`` for several rows on PostgreSQL, else
        ``bulk.update_by_key``. Of an item or attempt whose stored values were kept, only the
        columns that changed (``changed_params``); ``columns`` named make those kept values
        stale, so they are forgotten."""
        if not records:
            return
        kept = self._kept(rows)
        if kept is not None and columns is None:
            changed = changed_params(rows, key, records, kept)
            if changed is None:
                return
            params = changed
        else:
            params = _keyed_params(rows, key, records, columns)
            if kept is not None:
                for record in records:
                    kept.pop(getattr(record, key), None)
        written = tuple(name for name in params[0] if name != f"b_{key}")
        if self.dialect == "postgresql" and len(params) > 1:
            part = bulk.unnest_update(rows.table, key, written, self.conn.dialect, 1)
            await self._run_together([(part, params)], None)
            return
        await self.conn.execute(bulk.update_by_key(rows.table, key, written), params)

    def held_back_parts(self, before: Parts | None = None) -> Parts:
        """PostgreSQL: the held-back attempt inserts, item and attempt updates, lane turns and
        escalation resolutions as ``unnest`` parts of one statement (after those ``before``,
        if given), taken: nothing is held back after. A group of worker writes builds them
        before it waits for the coordinator's row (``CoordinatorsSql.flush``)."""
        dialect = self.conn.dialect
        parts, start = ([], 1) if before is None else (list(before[0]), before[1])
        items, self._pending_items = list(self._pending_items.values()), {}
        held, self._pending_attempts = list(self._pending_attempts.values()), {}
        new_ids, self._attempts_to_insert = self._attempts_to_insert, set()
        attempts = [a for a in held if a.lease_id not in new_ids]
        inserted = [ATTEMPTS.values(a) for a in held if a.lease_id in new_ids]
        if inserted:
            part = bulk.unnest_insert(ATTEMPTS.table, tuple(inserted[0]), dialect, start)
            parts.append((part, inserted))
            start += len(part[1])
        updates: list[tuple[Table, str, list[dict[str, Any]]]] = []
        if items:
            changed = changed_params(ITEMS, "item_id", items, self._stored_items)
            if changed is not None:
                updates.append((ITEMS.table, "item_id", changed))
        if attempts:
            changed = changed_params(ATTEMPTS, "lease_id", attempts, self._stored_attempts)
            if changed is not None:
                updates.append((ATTEMPTS.table, "lease_id", changed))
        turns, self._pending_turns = self._pending_turns, {}
        if turns:
            served = [{"b_lane_id": i, "served_turn": n} for i, n in sorted(turns.items())]
            updates.append((t.lanes, "lane_id", served))
        for table, key, params in updates:
            columns = tuple(name for name in params[0] if name != f"b_{key}")
            part = bulk.unnest_update(table, key, columns, dialect, start)
            parts.append((part, params))
            start += len(part[1])
        resolutions, self._pending_resolutions = self._pending_resolutions, {}
        if resolutions:
            resolved = [
                {"b_coordinator_id": c, "b_item_id": i, "resolve_time": when}
                for (c, i), when in sorted(resolutions.items())
            ]
            part = bulk.unnest_resolve_escalations(t.escalations, dialect, start)
            parts.append((part, resolved))
            start += len(part[1])
        return parts, start

    async def _write_together(
        self,
        events: Sequence[Event],
        revision: tuple[str, int] | None,
        usage: Sequence[UsageTotal] = (),
        before: Parts | None = None,
    ) -> None:
        """PostgreSQL: the held-back writes (``held_back_parts``, after those ``before``), the
        roll-ups ``usage`` adds to, ``events`` and the coordinator's new ``revision`` in ONE
        statement (one round trip): each an ``unnest`` in a ``WITH`` of the revision's
        ``UPDATE`` (``bulk.with_all``). Parts with nothing to write are left out."""
        dialect = self.conn.dialect
        parts, start = self.held_back_parts(before)
        if usage:
            added = [USAGE_TOTALS.values(total) for total in merged(usage)]
            part = bulk.unnest_add(t.usage_totals, usage_sql.KEY, usage_sql.TOTALS, dialect, start)
            parts.append((part, added))
            start += len(part[1])
        if events:
            params = [EVENTS.values(e) for e in events]
            part = bulk.unnest_insert(EVENTS.table, tuple(params[0]), dialect, start)
            parts.append((part, params))
            start += len(part[1])
        final = None
        if revision is not None:
            final = (bulk.set_revision(start), [revision[1], revision[0]])
        await self._run_together(parts, final)

    async def _run_together(
        self,
        parts: list[Part],
        final: tuple[str, list[Any]] | None,
    ) -> None:
        """Run ``unnest`` parts and a ``final`` statement as one (``bulk.with_all``)."""
        statement = bulk.with_all(parts, final)
        if statement is not None:
            await self.conn.exec_driver_sql(*statement)


def changed_params(
    rows: RowMap[_R], key: str, records: Sequence[_R], stored: dict[str, tuple[Any, ...]]
) -> list[dict[str, Any]] | None:
    """What ``_keyed_params`` gives, but only for the columns in which at least one record
    differs from its ``stored`` values (all columns if a record's are not known); None when
    no record changed at all. ``stored`` is brought up to date: the written records are what
    the rows hold now.

    A claim changes six of an item's 35 columns, a Complete a handful of an attempt's: the
    rest (JSON documents among them) are neither encoded again nor rewritten."""
    values = [rows.values(r) for r in records]
    names = rows.column_names
    in_order = _in_order(names)
    changed: set[str] | None = set()
    for record, now in zip(records, values, strict=True):
        record_id = getattr(record, key)
        before = stored.get(record_id)
        after = in_order(now)
        if changed is not None:
            if before is None:
                changed = None
            elif after != before:
                # The names of the columns whose values differ (compared in C, not per name).
                changed.update(itertools.compress(names, map(operator.ne, after, before)))
        stored[record_id] = after
    bound = f"b_{key}"
    if changed is None:
        written = [n for n in names if n != key]
    elif not changed:
        return None
    else:
        written = [n for n in names if n in changed and n != key]
    return [{bound: now[key], **{n: now[n] for n in written}} for now in values]


# Per column order, what takes a row's values from its dict in that order, as a tuple.
_IN_ORDER: dict[tuple[str, ...], Callable[[Mapping[str, Any]], tuple[Any, ...]]] = {}


def _in_order(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    found = _IN_ORDER.get(names)
    if found is None:
        found = _IN_ORDER[names] = operator.itemgetter(*names)  # tables have several columns
    return found


def _keyed_params(
    rows: RowMap[_R], key: str, records: Sequence[_R], columns: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The column values (all, or ``columns`` only) of each record, its ``key`` renamed
    ``b_<key>`` (the row to write)."""
    bound = f"b_{key}"
    if columns is None:
        params = [rows.values(r) for r in records]
    else:
        params = [rows.some_values(r, (key, *columns)) for r in records]
    for values in params:
        values[bound] = values.pop(key)
    return params
