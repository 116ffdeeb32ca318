"""The SQL implementation of the storage port, on PostgreSQL (asyncpg) and SQLite (aiosqlite).

One transaction class serves both dialects, assembled from one part per concern (work
coordinators and events, accounts, tenancy, lanes and items, attempts, workers, follow-ups);
the few dialect differences (row locks, upserts, how a write transaction starts) live in
:mod:`._base` and :mod:`.engine`. Rows are mapped to records in :mod:`.rows` only, and driver
errors become workcoord errors in :mod:`.errors`.
"""

from __future__ import annotations

from .engine import make_engine, normalize_url
from .errors import StorageUnavailable
from .store import SqlStore, SqlTx

__all__ = ["SqlStore", "SqlTx", "StorageUnavailable", "make_engine", "normalize_url"]
