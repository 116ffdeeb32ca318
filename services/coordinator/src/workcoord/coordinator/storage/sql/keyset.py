"""Keyset paging: one page of a table, after the last key the previous page showed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, Table, and_, or_, select
from sqlalchemy.sql import ColumnElement


def page_after(
    table: Table, key: str, after: str, limit: int, *where: ColumnElement[bool]
) -> Select[Any]:
    """The first ``limit`` rows of ``table`` matching ``where`` whose ``key`` column sorts after
    ``after``, in ``key`` order."""
    column = table.c[key]
    return select(table).where(*where, column > after).order_by(column).limit(limit)


def newest_first(
    stmt: Select[Any],
    time: ColumnElement[datetime],
    key: ColumnElement[str],
    after: tuple[datetime, str] | None,
    limit: int,
) -> Select[Any]:
    """The first ``limit`` rows of ``stmt`` newest first, by (``time``, ``key``) descending,
    strictly below ``after`` (the (time, key) the previous page ended on)."""
    if after is not None:
        stmt = stmt.where(or_(time < after[0], and_(time == after[0], key < after[1])))
    return stmt.order_by(time.desc(), key.desc()).limit(limit)
