"""Keyset paging: one page of a table, after the last key the previous page showed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, Table, select
from sqlalchemy.sql import ColumnElement


def page_after(
    table: Table, key: str, after: str, limit: int, *where: ColumnElement[bool]
) -> Select[Any]:
    """The first ``limit`` rows of ``table`` matching ``where`` whose ``key`` column sorts after
    ``after``, in ``key`` order."""
    column = table.c[key]
    return select(table).where(*where, column > after).order_by(column).limit(limit)
