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

from sqlalchemy import Table, bindparam, update
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
Unnest = tuple[str, list[tuple[str, Any]]]
_UNNESTS: dict[tuple[str, str, tuple[str, ...], int], Unnest] = {}


def _arrays(
    table: Table, names: tuple[str, ...], columns: tuple[str, ...], dialect: Dialect, start: int
) -> Unnest:
    """``unnest($start::type[], …) AS u(names…)`` over the types of ``columns``, and the bind
    processor of each array's values (what SQLAlchemy would apply to them one by one)."""
    types = [table.c[column].type for column in columns]
    casts = ", ".join(
        f"${n}::{kind.compile(dialect=dialect)}[]" for n, kind in enumerate(types, start)
    )
    aliases = ", ".join(f'"{name}"' for name in names)
    processors = [(n, kind.bind_processor(dialect)) for n, kind in zip(names, types, strict=True)]
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
        arguments.extend(
            [p[name] for p in params] if process is None else [process(p[name]) for p in params]
            for name, process in processors
        )
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
