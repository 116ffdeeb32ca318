"""Every SQL statement of the SQL store, in one module per concern.

Each statement is a module-level object built once (its parameters bound by name, so
SQLAlchemy finds its compiled form from the object's memoized cache key) or, where its shape
depends on the call (an optional filter, a cursor), a function that builds it; each has a
one-line description (a ``#:`` comment or a docstring). The store's parts
(:mod:`..coordinators`, :mod:`..lanes_items`, …) run them by name and map rows with
:mod:`..rows`; they write no SQL of their own. ``docs/architecture.md`` indexes each port
method to the statements it runs.

Where the dialects differ (upserts, aggregates) a statement is a :class:`ByDialect` pair, and
the store picks its dialect's. Row locks need no pair: SQLite renders no ``FOR UPDATE`` (its
write transactions hold the whole database from ``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

from . import (
    accounts,
    attempts,
    bulk,
    coordinators,
    events,
    follow_ups,
    items,
    lanes,
    platform,
    tenancy,
    trackers,
    view_reads,
    workers,
)
from ._dialects import ByDialect

__all__ = [
    "ByDialect",
    "accounts",
    "attempts",
    "bulk",
    "coordinators",
    "events",
    "follow_ups",
    "items",
    "lanes",
    "platform",
    "tenancy",
    "trackers",
    "view_reads",
    "workers",
]
