"""The SQL implementation of the storage port, on PostgreSQL (asyncpg) and SQLite (aiosqlite).

One transaction class serves both dialects, assembled from one part per concern (work
coordinators and events, accounts, tenancy, lanes and items, attempts, workers, follow-ups).
Every statement is named in :mod:`.statements` (one module per concern; the few dialect
differences, upserts and aggregates, as ``ByDialect`` pairs there, and how a write transaction
starts in :mod:`.engine`). Rows are mapped to records in :mod:`.rows` only, and driver errors
become workcoord errors in :mod:`.errors`. Item and attempt updates are held back and written
at named points only (see :class:`._base.SqlTxBase`).
"""

from __future__ import annotations

from .engine import make_engine, normalize_url
from .errors import StorageUnavailable
from .store import SqlStore, SqlTx

__all__ = ["SqlStore", "SqlTx", "StorageUnavailable", "make_engine", "normalize_url"]
