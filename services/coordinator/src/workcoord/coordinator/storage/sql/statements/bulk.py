"""Statements over many rows of one table: a multi-row ``INSERT``, an ``UPDATE`` by key, and
PostgreSQL's ``unnest`` forms, which write any number of rows in one statement (each column
one array parameter), and chain into one ``WITH`` (one round trip for several writes).

The ``unnest`` statements are SQL text: column names and types come from the table
definitions, every value is a parameter. Each is built once per table, set of columns and
first parameter number.

A value many rows share goes once. In the inserts and updates one column always goes whole,
an array of one element per row, and sets the number of rows (an update's key, an insert's
last primary-key column); any other column's array may instead hold ONE element, which then is
every row's value (``unnest`` pads the shorter arrays with nulls; the statement reads the one
element where its array has one). ``_values`` sends one element wherever every row has the same
value: a claim's hundred attempts share their worker, times and run identity, its events their
coordinator and time, a recovery pass's rows their new state. The statement's text does not
depend on it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, Text, bindparam, update
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import Insert, Update

# Built once per table (and columns): a statement object memoizes its cache key, so SQLAlchemy
# finds its compiled form without walking the statement on every call.
_INSERTS: dict[str, Insert] = {}
_UPDATES: dict[tuple[str, str, tuple[str, ...]], Update] = {}


def insert_rows(table: Table) -> Insert:
    """``INSERT INTO table``, its values the parameters (one set per row: ``executemany``)."""
    found = _INSERTS.get(table.name)
    if found is None:
        found = _INSERTS[table.name] = table.insert()
    return found


def update_by_key(table: Table, key: str, columns: Sequence[str]) -> Update:
    """``UPDATE table SET columns … WHERE key = :b_<key>`` (one set of parameters per row)."""
    memo = (table.name, key, tuple(columns))
    found = _UPDATES.get(memo)
    if found is None:
        found = _UPDATES[memo] = (
            update(table)
            .where(table.c[key] == bindparam(f"b_{key}"))
            .values({name: bindparam(name) for name in columns})
        )
    return found


# An unnest statement and, per array parameter in order: its name, the bind processor of its
# values, and whether it may hold one element for all rows (see the module docstring).
Processors = list[tuple[str, Any, bool]]
Unnest = tuple[str, Processors]
_UNNESTS: dict[tuple[str, str, tuple[str, ...], int], Unnest] = {}


def _arrays(
    table: Table,
    names: tuple[str, ...],
    columns: tuple[str, ...],
    dialect: Dialect,
    start: int,
    keys: tuple[str, ...] | None = None,
) -> tuple[str, Processors, list[str]]:
    """``unnest($start::type[], …) AS u(names…)`` over the types of ``columns``, the bind
    processor of each array's values, and the SQL of each name's value in a row: ``u."name"``
    for the ``keys`` (every name if None), for the others that or the array's one element
    (``_shared``)."""
    types = [table.c[column].type for column in columns]
    named = list(zip(names, types, strict=True))
    source, processors = _typed_arrays(named, dialect, start, keys)
    values = [
        f'u."{name}"' if keys is None or name in keys else _shared(n, name)
        for n, (name, _) in enumerate(named, start)
    ]
    return source, processors, values


def _shared(number: int, name: str) -> str:
    """A column's value in a row: the one element of its array, if it holds one; else the
    row's own. The parameter is typed by its cast in the ``unnest``; casting it here again
    would convert the whole array for every row (a typed ``VARCHAR(n)[]`` checks each
    element), which made a pass over 10,000 rows take seconds."""
    return f'(CASE WHEN cardinality(${number}) = 1 THEN (${number})[1] ELSE u."{name}" END)'


def _typed_arrays(
    named: list[tuple[str, Any]],
    dialect: Dialect,
    start: int,
    keys: tuple[str, ...] | None = None,
) -> Unnest:
    """``unnest($start::type[], …) AS u(names…)`` over (name, column type) pairs, and the bind
    processor of each array's values. ``keys``: the names always sent whole, one element per
    row; any other may go as one element (None: every name is sent whole)."""
    casts = ", ".join(
        f"${n}::{kind.compile(dialect=dialect)}[]" for n, (_, kind) in enumerate(named, start)
    )
    aliases = ", ".join(f'"{name}"' for name, _ in named)
    processors = [
        (name, kind.bind_processor(dialect), keys is not None and name not in keys)
        for name, kind in named
    ]
    return f"unnest({casts}) AS u({aliases})", processors


def unnest_update(
    table: Table, key: str, columns: tuple[str, ...], dialect: Dialect, start: int
) -> Unnest:
    """``UPDATE … FROM unnest(…)``: write ``columns`` of the rows whose ``key`` is in the
    array ``b_<key>``, one array element per row."""
    memo = ("update", f"{table.name}.{key}", columns, start)
    found = _UNNESTS.get(memo)
    if found is None:
        names = (f"b_{key}", *columns)
        source, processors, values = _arrays(
            table, names, (key, *columns), dialect, start, keys=names[:1]
        )
        pairs = zip(columns, values[1:], strict=True)
        sets = ", ".join(f'"{name}" = {value}' for name, value in pairs)
        where = f't."{key}" = u."b_{key}"'
        sql = f"UPDATE {table.name} AS t SET {sets} FROM {source} WHERE {where}"  # noqa: S608
        found = _UNNESTS[memo] = (sql, processors)
    return found


def unnest_insert(table: Table, columns: tuple[str, ...], dialect: Dialect, start: int) -> Unnest:
    """``INSERT … SELECT … FROM unnest(…)``: a row per array element."""
    memo = ("insert", table.name, columns, start)
    found = _UNNESTS.get(memo)
    if found is None:
        whole = list(table.primary_key.columns)[-1].name
        source, processors, values = _arrays(table, columns, columns, dialect, start, (whole,))
        names = ", ".join(f'"{name}"' for name in columns)
        selected = ", ".join(values)
        sql = f"INSERT INTO {table.name} ({names}) SELECT {selected} FROM {source}"  # noqa: S608
        found = _UNNESTS[memo] = (sql, processors)
    return found


def unnest_resolve_escalations(table: Table, dialect: Dialect, start: int) -> Unnest:
    """``UPDATE escalations … FROM unnest(…)``: close the open escalations of the (coordinator,
    item) pairs in the arrays ``b_coordinator_id`` and ``b_item_id``, each at its
    ``resolve_time`` (what ``follow_ups:RESOLVE_ESCALATIONS`` does for one coordinator)."""
    memo = ("resolve", table.name, (), start)
    found = _UNNESTS.get(memo)
    if found is None:
        names = ("b_coordinator_id", "b_item_id", "resolve_time")
        columns = ("coordinator_id", "item_id", "resolve_time")
        source, processors, values = _arrays(table, names, columns, dialect, start, names[1:2])
        coordinator_id, item_id, resolve_time = values
        sql = (
            f'UPDATE {table.name} AS t SET "open" = false, "resolve_time" = {resolve_time} '  # noqa: S608
            f'FROM {source} WHERE t."coordinator_id" = {coordinator_id} '
            f'AND t."item_id" = {item_id} AND t."open" IS true'
        )
        found = _UNNESTS[memo] = (sql, processors)
    return found


def unnest_add(
    table: Table, key: tuple[str, ...], totals: tuple[str, ...], dialect: Dialect, start: int
) -> Unnest:
    """``INSERT … SELECT … FROM unnest(…) ON CONFLICT (key) DO UPDATE``: each array element
    adds its ``totals`` to the row with its ``key``, or is that row (the roll-ups' upsert,
    ``usage:ADD_USAGE``, for many rows; no two elements may share a key)."""
    memo = ("add", table.name, (*key, *totals), start)
    found = _UNNESTS.get(memo)
    if found is None:
        columns = (*key, *totals)
        source, processors, _ = _arrays(table, columns, columns, dialect, start)
        names = ", ".join(f'"{name}"' for name in columns)
        conflict = ", ".join(f'"{name}"' for name in key)
        added = ", ".join(f'"{n}" = t."{n}" + excluded."{n}"' for n in totals)
        sql = (
            f"INSERT INTO {table.name} AS t ({names}) SELECT {names} FROM {source} "  # noqa: S608
            f"ON CONFLICT ({conflict}) DO UPDATE SET {added}"
        )
        found = _UNNESTS[memo] = (sql, processors)
    return found


def extend_unchanged(
    attempts: Table,
    rows: Sequence[dict[str, Any]],
    usage: Table,
    key: tuple[str, ...],
    totals: tuple[str, ...],
    added: Sequence[dict[str, Any]],
    dialect: Dialect,
) -> tuple[str, tuple[Any, ...]]:
    """THE HEARTBEAT'S COMPARE-AND-SET (PostgreSQL, a statement committing on its own), with its
    arguments: of each attempt in ``rows`` (``b_lease_id``, ``b_version``: its row's ``xmin``
    as read, as text; and the columns to write) whose row is still that version and free,
    write the columns; the rows are taken in lease id order with ``FOR UPDATE SKIP LOCKED``, so
    it never waits for an attempt. Then add the totals in ``added`` (``b_lease_id``, the
    roll-up's ``key`` and ``totals``) of those attempts only, summed per roll-up and in key
    order: the roll-ups are the rows it waits for, last (Lock order). Returns the lease ids
    taken (with no column to write: confirmed unchanged)."""
    columns = tuple(name for name in rows[0] if not name.startswith("b_"))
    used = usage if added else None
    sql, processors, adders = _extend_sql(attempts, columns, used, key, totals, dialect)
    return sql, (*_values(processors, rows), *_values(adders, added))


def _extend_sql(
    attempts: Table,
    columns: tuple[str, ...],
    usage: Table | None,
    key: tuple[str, ...],
    totals: tuple[str, ...],
    dialect: Dialect,
) -> tuple[str, Processors, Processors]:
    memo = (attempts.name, columns, usage is not None)
    found = _EXTENDS.get(memo)
    if found is not None:
        return found
    lease_id = attempts.c["lease_id"].type
    named = [("b_lease_id", lease_id), ("b_version", Text()), *_typed(attempts, columns)]
    source, processors = _typed_arrays(named, dialect, 1)
    sets = ", ".join(f'"{name}" = v."{name}"' for name in columns)
    parts = [
        f"v AS (SELECT * FROM {source})",  # noqa: S608
        f"l AS (SELECT t.lease_id FROM {attempts.name} AS t "  # noqa: S608
        "JOIN v ON t.lease_id = v.b_lease_id "
        "WHERE t.xmin::text = v.b_version ORDER BY t.lease_id FOR UPDATE OF t SKIP LOCKED)",
    ]
    if columns:  # else the rows are only confirmed (and locked until the statement ends)
        parts.append(
            f"w AS (UPDATE {attempts.name} AS t SET {sets} "  # noqa: S608
            "FROM v WHERE t.lease_id = v.b_lease_id "
            "AND t.lease_id IN (SELECT lease_id FROM l))"
        )
    added: Processors = []
    if usage is not None:
        named = [("b_lease_id", lease_id), *_typed(usage, (*key, *totals))]
        rows, added = _typed_arrays(named, dialect, 1 + len(processors))
        names = ", ".join(f'"{name}"' for name in (*key, *totals))
        keys = ", ".join(f'"{name}"' for name in key)
        sums = ", ".join(f'sum("{name}")' for name in totals)
        adds = ", ".join(f'"{n}" = t."{n}" + excluded."{n}"' for n in totals)
        parts.append(
            f"r AS (INSERT INTO {usage.name} AS t ({names}) "  # noqa: S608
            f"SELECT {keys}, {sums} FROM {rows} "
            f"WHERE u.b_lease_id IN (SELECT lease_id FROM l) GROUP BY {keys} ORDER BY {keys} "
            f"ON CONFLICT ({keys}) DO UPDATE SET {adds})"
        )
    sql = f"WITH {', '.join(parts)} SELECT lease_id FROM l"  # noqa: S608
    found = _EXTENDS[memo] = (sql, processors, added)
    return found


# Per (table, columns written, with roll-ups): the statement and its two sets of processors.
_EXTENDS: dict[tuple[str, tuple[str, ...], bool], tuple[str, Processors, Processors]] = {}


def _typed(table: Table, columns: tuple[str, ...]) -> list[tuple[str, Any]]:
    return [(column, table.c[column].type) for column in columns]


def set_revision(start: int) -> str:
    """``UPDATE work_coordinators SET revision``, its two parameters numbered from ``start``
    (the new revision, the coordinator id): the last part of a flush's ``WITH``."""
    return (
        f"UPDATE work_coordinators SET revision = ${start}::BIGINT "  # noqa: S608
        f"WHERE coordinator_id = ${start + 1}::VARCHAR"
    )


def with_all(
    parts: Sequence[tuple[Unnest, Sequence[dict[str, Any]]]],
    final: tuple[str, Sequence[Any]] | None,
) -> tuple[str, tuple[Any, ...]] | None:
    """``unnest`` parts (numbered one after the other) and a ``final`` statement as ONE
    statement, all but the last in a data-modifying ``WITH``; with its arguments. None: nothing
    to write."""
    statements: list[str] = []
    arguments: list[Any] = []
    for (sql, processors), params in parts:
        statements.append(sql)
        arguments.extend(_values(processors, params))
    if final is not None:
        statements.append(final[0])
        arguments.extend(final[1])
    if not statements:
        return None
    sql = statements[-1]
    if len(statements) > 1:
        ctes = ", ".join(f"w{n} AS ({s})" for n, s in enumerate(statements[:-1]))
        sql = f"WITH {ctes} {sql}"
    return sql, tuple(arguments)


def _values(processors: Processors, params: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """The array arguments of an ``unnest``: per (name, bind processor, shared), every row's
    value, or one element when the array may hold one and every row has the same value."""
    arrays: list[list[Any]] = []
    for name, process, shared in processors:
        column = [p[name] for p in params]
        if shared and len(column) > 1:
            arrays.append(_one_if_all_alike(column, process))
        else:
            arrays.append(column if process is None else [process(v) for v in column])
    return arrays


def _one_if_all_alike(column: list[Any], process: Any) -> list[Any]:
    """``column``'s values processed, or the first alone if they are all the same. Processed
    values (JSON text) are compared as processed: ``{"a": True}`` equals ``{"a": 1}`` in Python,
    not in JSON. Unprocessed ones (text, integers, booleans, times) store alike when equal; no
    table has a float or decimal column. One object throughout is processed once."""
    first = column[0]
    if process is None:
        return [first] if column.count(first) == len(column) else column
    if all(map(operator.is_, column, itertools.repeat(first))):
        return [process(first)]
    processed = [process(v) for v in column]
    return processed[:1] if processed.count(processed[0]) == len(processed) else processed
