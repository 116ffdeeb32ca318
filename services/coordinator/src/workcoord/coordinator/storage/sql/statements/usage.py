"""Usage roll-ups: added to in the worker writes' transactions, read without a scan."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select

from ... import schema as t
from ._dialects import upsert

_U = t.usage_totals
#: A roll-up's key, and the totals an addition adds up.
KEY = ("coordinator_id", "scope", "day", "key")
TOTALS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micros",
)


def _add_usage(insert: Any) -> Any:
    stmt = insert(_U)
    added = {name: _U.c[name] + stmt.excluded[name] for name in TOTALS}
    return stmt.on_conflict_do_update(index_elements=list(KEY), set_=added)


#: Add each row's totals to its roll-up (one per coordinator, scope, day and key), or create it.
ADD_USAGE = upsert(_add_usage)

_OF_SCOPE = (
    _U.c.coordinator_id == bindparam("coordinator_id"),
    _U.c.scope == bindparam("scope"),
)

#: The roll-ups of ``:scope`` on ``:day`` ("" for all time), the costliest first.
USAGE_TOTALS = (
    select(_U)
    .where(*_OF_SCOPE, _U.c.day == bindparam("day"))
    .order_by(_U.c.cost_micros.desc(), _U.c.key)
)

#: The roll-ups of ``:scope`` on ``:day`` for the keys ``:keys``, by key.
USAGE_TOTALS_OF = (
    select(_U)
    .where(
        *_OF_SCOPE,
        _U.c.day == bindparam("day"),
        _U.c.key.in_(bindparam("keys", expanding=True)),
    )
    .order_by(_U.c.key)
)

#: The day roll-ups of ``:scope`` and ``:key`` from ``:since`` (a UTC day) on, by day.
USAGE_DAYS = (
    select(_U)
    .where(
        *_OF_SCOPE,
        _U.c.key == bindparam("key"),
        _U.c.day >= bindparam("since"),
        _U.c.day != "",
    )
    .order_by(_U.c.day)
)
