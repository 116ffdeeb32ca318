"""Engines for both dialects: the async driver of a plain URL, and SQLite set up to behave like
the PostgreSQL deployment (WAL, foreign keys, a write lock taken when a write begins)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

__all__ = ["DEFAULT_POOL_SIZE", "make_engine", "normalize_url", "read_json"]


def normalize_url(url: str) -> str:
    """Pick the async driver for a plain ``postgresql://`` or ``sqlite://`` URL."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    if url.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + url.split("://", 1)[1]
    return url


DEFAULT_POOL_SIZE = 20
"""PostgreSQL connections one engine holds at most."""


def make_engine(url: str, *, pool_size: int = DEFAULT_POOL_SIZE) -> AsyncEngine:
    """An async engine for ``url``; SQLite gets WAL, foreign keys and immediate write locks.

    Statement parameters are kept out of driver error messages: a row may hold secret hashes.

    On PostgreSQL the pool holds at most ``pool_size`` connections, opened as needed and then
    KEPT (no overflow): an overflow connection is closed when it is returned, so a steady load
    above the pool's size opened and closed a connection per transaction — a server process
    forked, and asyncpg's statement cache and type introspection started again, sometimes
    inside a transaction holding row locks other transactions then queued behind (B8, 2,000
    heartbeating agents: heartbeats took seconds while every process was nearly idle).
    Past ``pool_size`` a transaction waits for a connection to be returned. JIT is off for the
    coordinator's sessions: its statements are short, and asyncpg's type introspection query
    (run on a fresh connection's first use of a type) is planned as expensive enough to be
    compiled, which costs tens of milliseconds each time.
    """
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_async_engine(
            url, poolclass=NullPool if ":memory:" not in url else None, hide_parameters=True
        )
        _configure_sqlite(engine)
        return engine
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=0,
        hide_parameters=True,
        json_deserializer=read_json,
        connect_args={
            "server_settings": {"application_name": "workcoord-coordinator", "jit": "off"}
        },
    )
    _ping_when_idle(engine)
    return engine


# What most JSON columns of the hot rows hold (an item's depends_on, inputs, action classes,
# a policy with nothing set): made without the JSON parser, a new object each time (the
# records may change them).
_EMPTY_DOCUMENTS: dict[str, Callable[[], Any]] = {"{}": dict, "[]": list, "null": lambda: None}


def read_json(text: str) -> Any:
    """A JSON column's value from its text, as ``json.loads`` gives it (PostgreSQL's engine
    reads every ``jsonb`` value with it: several per item or attempt row of the hot paths)."""
    make = _EMPTY_DOCUMENTS.get(text)
    return make() if make is not None else json.loads(text)


# A pooled connection idle longer than this is pinged before use. SQLAlchemy's pool_pre_ping
# pings on every checkout, which on asyncpg costs three round trips (BEGIN, a no-op, ROLLBACK)
# per transaction: more than the hot path's own statements. A connection in steady use is
# known good; one that broke mid-use (a database restart) fails its statement, which
# invalidates the pool's older connections, and the call answers UNAVAILABLE (retryable).
IDLE_PING_SECONDS = 2.0


def _ping_when_idle(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["workcoord_checkin"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("workcoord_checkin")
        if since is None or time.monotonic() - since < IDLE_PING_SECONDS:
            return
        try:
            dbapi_connection.ping()
        except Exception as error:
            # The pool then discards this connection and checks out (or opens) another.
            raise exc.DisconnectionError() from error


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's begin event (below) emit BEGIN, so writes can take the lock up front.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A write transaction takes SQLite's write lock at BEGIN: the whole database is then
        # serialised, which is what the per-coordinator row lock gives on PostgreSQL.
        immediate = conn.get_execution_options().get("workcoord_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
