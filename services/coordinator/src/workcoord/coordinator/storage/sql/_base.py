"""What every part of a SQL transaction shares: its connection, its dialect and the few
statements that differ between PostgreSQL and SQLite (row locks and upserts)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Table, bindparam, delete, select
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Dialect, Row
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ColumnElement, Select
from sqlalchemy.sql.base import Executable

from workcoord.coordinator.domain.model import Attempt, Coordinator, Event, Item, ItemState, Lane

from .. import schema as t
from .rows import ATTEMPTS, EVENTS, ITEMS, RowMap

_R = TypeVar("_R")

# Attempt statuses that hold a lease (LIVE_ATTEMPT_STATUSES of the model), as stored.
LIVE = ("LEASED", "RUNNING")

_RELEASE_HOLDS = delete(t.exclusive_holds).where(
    t.exclusive_holds.c.lease_id.in_(bindparam("lease_ids", expanding=True))
)


class SqlTxBase:
    """One transaction's connection and the helpers its parts build on.

    Item and attempt updates (``update_items``, ``update_attempts``) are held back and
    written together, one statement per table: a group of worker writes sharing the
    transaction (group commit) then updates all its items and attempts at once, not once per
    member. They are written at two named points only, never behind a statement's back:

    * :meth:`write_held_back`, which every read that scans item or attempt rows (anything but
      a lookup by id) and every statement that writes them as a set (recovery) calls first,
      so no statement reads or overwrites rows past a pending update;
    * :meth:`~.coordinators.CoordinatorsSql.flush`, at the end of the transaction, with the
      events and the revision.

    Reads by id (``get_item``, ``get_attempt``, ``attempt_with_item``) and the lane's item
    states answer from the held-back updates without writing them. Every other statement runs
    as its code reads, in its order.
    """

    def __init__(
        self, conn: AsyncConnection, dialect: str, now: datetime, coordinator: Coordinator | None
    ) -> None:
        self.conn = conn
        self.dialect = dialect
        self.now = now
        self.coordinator = coordinator
        # Appended events and the revisions they move, written together at the end.
        self._events: list[Event] = []
        self._revisions: dict[str, int] = {}
        # Per coordinator, (revision, time) of the last event: what the store knows of those
        # committed before (see SqlStore.write), and what this transaction appended.
        self.known_event_times: Mapping[str, tuple[int, datetime]] = {}
        self.appended_event_times: dict[str, tuple[int, datetime]] = {}
        # Held-back updates by id (the latest record of each), written by write_held_back.
        self._pending_items: dict[str, Item] = {}
        self._pending_attempts: dict[str, Attempt] = {}
        # The platform switch as read with the coordinator's lock (None: not read yet).
        self._platform_switch: bool | None = None
        # Lane id -> (the lane, how many of its other items are in each state, the item): read
        # with a Complete's attempt so its lane's counts need no second round trip; dropped
        # when anything else of the lane changes (see LanesItemsSql.lane_with_state_counts).
        self._lane_counts: dict[str, tuple[Lane, dict[ItemState, int], str]] = {}

    async def write_held_back(self) -> None:
        """Write the held-back item and attempt updates now (one statement per table; none
        when nothing is held back). See the class docstring for who calls it."""
        if self._pending_items:
            items, self._pending_items = list(self._pending_items.values()), {}
            await self._update_each(ITEMS, "item_id", items)
        if self._pending_attempts:
            attempts, self._pending_attempts = list(self._pending_attempts.values()), {}
            await self._update_each(ATTEMPTS, "lease_id", attempts)

    async def _rows(self, stmt: Executable) -> Sequence[Row[Any]]:
        return (await self.conn.execute(stmt)).fetchall()

    async def _one(self, stmt: Executable) -> Row[Any] | None:
        return (await self.conn.execute(stmt)).first()

    async def _get(self, rows: RowMap[_R], *where: ColumnElement[bool]) -> _R | None:
        """The one record matching ``where``, or None."""
        row = await self._one(select(rows.table).where(*where))
        return rows.load(row) if row is not None else None

    async def _held_back_or_stored(
        self, held_back: Mapping[str, _R], rows: RowMap[_R], by_id: Executable, record_id: str
    ) -> _R | None:
        """The record with id ``record_id``: a copy of its held-back update if there is one,
        else the row ``by_id`` (a select of ``rows``'s table by the parameter ``id``) finds;
        the held-back changes are not written first."""
        pending = held_back.get(record_id)
        if pending is not None:
            return copy.copy(pending)
        row = (await self.conn.execute(by_id, {"id": record_id})).first()
        return rows.load(row) if row is not None else None

    async def _release_holds(self, ended: Sequence[Attempt]) -> None:
        """Free the exclusive keys the ``ended`` attempts held (one statement; none if none
        held a key)."""
        keyed = [a.lease_id for a in ended if a.exclusive_key]
        if keyed:
            await self.conn.execute(_RELEASE_HOLDS, {"lease_ids": keyed})

    async def _list(self, rows: RowMap[_R], stmt: Select[Any]) -> list[_R]:
        """The records ``stmt`` (a select of ``rows``'s table) finds, in its order."""
        return [rows.load(r) for r in await self._rows(stmt)]

    async def _list_in(
        self, rows: RowMap[_R], column: str, values: Sequence[str], *order_by: str
    ) -> list[_R]:
        """The records whose ``column`` is one of ``values``, ordered by the columns
        ``order_by`` (no statement for no values)."""
        if not values:
            return []
        c = rows.table.c
        stmt = select(rows.table).where(c[column].in_(list(values)))
        return await self._list(rows, stmt.order_by(*(c[name] for name in order_by)))

    async def _insert(self, rows: RowMap[_R], records: Sequence[_R], **store: Any) -> None:
        """Insert ``records`` (one statement; nothing for none)."""
        if not records:
            return
        params = [rows.values(r, **store) for r in records]
        if self.dialect == "postgresql" and len(params) > 1:
            part = _unnest_insert(rows.table, tuple(params[0]), self.conn.dialect, 1)
            await self._run_parts([(part, params)], None)
            return
        await self.conn.execute(rows.insert_statement, params)

    async def _update_each(
        self,
        rows: RowMap[_R],
        key: str,
        records: Sequence[_R],
        columns: Sequence[str] | None = None,
    ) -> None:
        """Write every column (or only ``columns``) of each record to the row with the same
        ``key`` (one statement)."""
        if not records:
            return
        params = _keyed_params(rows, key, records, columns)
        written = tuple(name for name in params[0] if name != f"b_{key}")
        if self.dialect == "postgresql" and len(params) > 1:
            # One statement whatever the number of rows: each column as one array parameter.
            part = _unnest_update(rows.table, key, written, self.conn.dialect, 1)
            await self._run_parts([(part, params)], None)
            return
        await self.conn.execute(rows.update_statement(key, written), params)

    async def _write_together(
        self, events: Sequence[Event], revision: tuple[str, int] | None
    ) -> None:
        """PostgreSQL: the held-back item and attempt updates, ``events`` and the coordinator's
        new ``revision`` in ONE statement (one round trip): each an ``unnest`` in a ``WITH``
        of the revision's ``UPDATE``. Parts with nothing to write are left out."""
        dialect = self.conn.dialect
        parts: list[tuple[_Unnest, list[dict[str, Any]]]] = []
        start = 1
        items, self._pending_items = list(self._pending_items.values()), {}
        attempts, self._pending_attempts = list(self._pending_attempts.values()), {}
        updates: list[tuple[Table, str, list[dict[str, Any]]]] = []
        if items:
            updates.append((ITEMS.table, "item_id", _keyed_params(ITEMS, "item_id", items)))
        if attempts:
            updates.append(
                (ATTEMPTS.table, "lease_id", _keyed_params(ATTEMPTS, "lease_id", attempts))
            )
        for table, key, params in updates:
            columns = tuple(name for name in params[0] if name != f"b_{key}")
            part = _unnest_update(table, key, columns, dialect, start)
            parts.append((part, params))
            start += len(part[1])
        if events:
            params = [EVENTS.values(e) for e in events]
            part = _unnest_insert(EVENTS.table, tuple(params[0]), dialect, start)
            parts.append((part, params))
            start += len(part[1])
        final = None
        if revision is not None:
            final = (
                f"UPDATE work_coordinators SET revision = ${start}::BIGINT "  # noqa: S608
                f"WHERE coordinator_id = ${start + 1}::VARCHAR",
                [revision[1], revision[0]],
            )
        await self._run_parts(parts, final)

    async def _run_parts(
        self,
        parts: list[tuple[_Unnest, list[dict[str, Any]]]],
        final: tuple[str, list[Any]] | None,
    ) -> None:
        """Run ``unnest`` parts (numbered one after the other) and a ``final`` statement as
        one: all but the last in a ``WITH``."""
        statements: list[str] = []
        arguments: list[Any] = []
        for (sql, processors), params in parts:
            statements.append(sql)
            arguments.extend(
                [p[name] for p in params] if process is None else [process(p[name]) for p in params]
                for name, process in processors
            )
        if final is not None:
            statements.append(final[0])
            arguments.extend(final[1])
        if not statements:
            return
        sql = statements[-1]
        if len(statements) > 1:
            ctes = ", ".join(f"w{n} AS ({s})" for n, s in enumerate(statements[:-1]))
            sql = f"WITH {ctes} {sql}"
        await self.conn.exec_driver_sql(sql, tuple(arguments))

    def _upsert(self, table: Table) -> Any:
        """``INSERT … ON CONFLICT`` of the dialect (the same API on both)."""
        insert = pg_dialect.insert if self.dialect == "postgresql" else sqlite_dialect.insert
        return insert(table)

    def _for_update(self, stmt: Select[Any], *, skip_locked: bool = False) -> Select[Any]:
        """A row lock on PostgreSQL. SQLite needs none: a write transaction holds the whole
        database from ``BEGIN IMMEDIATE``."""
        if self.dialect == "postgresql":
            return stmt.with_for_update(skip_locked=skip_locked)
        return stmt


# An unnest statement and the bind processor of each of its array parameters, in order.
_Unnest = tuple[str, list[tuple[str, Any]]]
_UNNESTS: dict[tuple[str, str, tuple[str, ...], int], _Unnest] = {}


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


def _arrays(
    table: Table, names: tuple[str, ...], columns: tuple[str, ...], dialect: Dialect, start: int
) -> _Unnest:
    """``unnest($start::type[], …) AS u(names…)`` over the types of ``columns``, and the bind
    processor of each array's values (what SQLAlchemy would apply to them one by one)."""
    types = [table.c[column].type for column in columns]
    casts = ", ".join(
        f"${n}::{kind.compile(dialect=dialect)}[]" for n, kind in enumerate(types, start)
    )
    aliases = ", ".join(f'"{name}"' for name in names)
    processors = [(n, kind.bind_processor(dialect)) for n, kind in zip(names, types, strict=True)]
    return f"unnest({casts}) AS u({aliases})", processors


def _unnest_update(
    table: Table, key: str, columns: tuple[str, ...], dialect: Dialect, start: int
) -> _Unnest:
    """PostgreSQL: ``UPDATE … FROM unnest($start::type[], …)`` writing ``columns`` of the rows
    whose ``key`` is in the array ``b_<key>``; built once per set of columns."""
    memo = ("update", f"{table.name}.{key}", columns, start)
    found = _UNNESTS.get(memo)
    if found is None:
        source, processors = _arrays(table, (f"b_{key}", *columns), (key, *columns), dialect, start)
        sets = ", ".join(f'"{name}" = u."{name}"' for name in columns)
        where = f't."{key}" = u."b_{key}"'
        # Names and types come from the table definitions; every value is a parameter.
        sql = f"UPDATE {table.name} AS t SET {sets} FROM {source} WHERE {where}"  # noqa: S608
        found = _UNNESTS[memo] = (sql, processors)
    return found


def _unnest_insert(table: Table, columns: tuple[str, ...], dialect: Dialect, start: int) -> _Unnest:
    """PostgreSQL: ``INSERT … SELECT … FROM unnest($start::type[], …)``, a row per element."""
    memo = ("insert", table.name, columns, start)
    found = _UNNESTS.get(memo)
    if found is None:
        source, processors = _arrays(table, columns, columns, dialect, start)
        names = ", ".join(f'"{name}"' for name in columns)
        sql = f"INSERT INTO {table.name} ({names}) SELECT {names} FROM {source}"  # noqa: S608
        found = _UNNESTS[memo] = (sql, processors)
    return found
