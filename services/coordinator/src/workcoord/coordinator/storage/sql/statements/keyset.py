"""Keyset paging newest first: one page of a select, after the (time, key) the previous page
ended on."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, or_
from sqlalchemy.sql import ColumnElement


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
