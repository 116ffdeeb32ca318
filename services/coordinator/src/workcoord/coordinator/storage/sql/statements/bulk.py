"""Statements over many rows of one table: a multi-row ``INSERT``, an ``UPDATE`` by key, and
PostgreSQL's ``unnest`` forms, which write any number of rows in one statement (each column
one array parameter), and chain into one ``WITH`` (one round trip for several writes).

The ``unnest`` statements are SQL text: column names and types come from the table
definitions, every value is a parameter. Each is built once per table, set of columns and
first parameter number.
"""

from __future__ import annotations

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


# An unnest statement and the bind processor of each of its array parameters, in order.
Processors = list[tuple[str, Any]]
Unnest = tuple[str, Processors]
_UNNESTS: dict[tuple[str, str, tuple[str, ...], int], Unnest] = {}


def _arrays(
    table: Table, names: tuple[str, ...], columns: tuple[str, ...], dialect: Dialect, start: int
) -> Unnest:
    """``unnest($start::type[], …) AS u(names…)`` over the types of ``columns``, and the bind
    processor of each array's values (what SQLAlchemy would apply to them one by one)."""
    types = [table.c[column].type for column in columns]
    return _typed_arrays(list(zip(names, types, strict=True)), dialect, start)


def _typed_arrays(named: list[tuple[str, Any]], dialect: Dialect, start: int) -> Unnest:
    """``unnest($start::type[], …) AS u(names…)`` over (name, column type) pairs, and the bind
    processor of each array's values."""
    casts = ", ".join(
        f"${n}::{kind.compile(dialect=dialect)}[]" for n, (_, kind) in enumerate(named, start)
    )
    aliases = ", ".join(f'"{name}"' for name, _ in named)
    processors = [(name, kind.bind_processor(dialect)) for name, kind in named]
    return f"unnest({casts}) AS u({aliases})", processors


def unnest_update(
    table: Table, key: str, columns: tuple[str, ...], dialect: Dialect, start: int
) -> Unnest:
    """``UPDATE … FROM unnest(…)``: write ``columns`` of the rows whose ``key`` is in the
    array ``b_<key>``, one array element per row."""
    memo = ("update", f"{table.name}.{key}", columns, start)
    found = _UNNESTS.get(memo)
    if found is None:
        source, processors = _arrays(table, (f"b_{key}", *columns), (key, *columns), dialect, start)
        sets = ", ".join(f'"{name}" = u."{name}"' for name in columns)
        where = f't."{key}" = u."b_{key}"'
        sql = f"UPDATE {table.name} AS t SET {sets} FROM {source} WHERE {where}"  # noqa: S608
        found = _UNNESTS[memo] = (sql, processors)
    return found


def unnest_insert(table: Table, columns: tuple[str, ...], dialect: Dialect, start: int) -> Unnest:
    """``INSERT … SELECT … FROM unnest(…)``: a row per array element."""
    memo = ("insert", table.name, columns, start)
    found = _UNNESTS.get(memo)
    if found is None:
        source, processors = _arrays(table, columns, columns, dialect, start)
        names = ", ".join(f'"{name}"' for name in columns)
        sql = f"INSERT INTO {table.name} ({names}) SELECT {names} FROM {source}"  # noqa: S608
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
        source, processors = _arrays(table, names, columns, dialect, start)
        sql = (
            f'UPDATE {table.name} AS t SET "open" = false, "resolve_time" = u."resolve_time" '  # noqa: S608
            f'FROM {source} WHERE t."coordinator_id" = u."b_coordinator_id" '
            'AND t."item_id" = u."b_item_id" AND t."open" IS true'
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
        source, processors = _arrays(table, columns, columns, dialect, start)
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


def _values(
    processors: Sequence[tuple[str, Any]], params: Sequence[dict[str, Any]]
) -> list[list[Any]]:
    """The array arguments of an ``unnest``: per (name, bind processor), every row's value."""
    return [
        [p[name] for p in params] if process is None else [process(p[name]) for p in params]
        for name, process in processors
    ]
