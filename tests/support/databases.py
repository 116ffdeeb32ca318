"""Real databases for the integration and end-to-end tests.

PostgreSQL: one template database per test session and xdist worker is migrated once
(``workcoord_tpl_<worker>_<session>``); every test that needs a database gets a fresh copy with
``CREATE DATABASE … TEMPLATE …`` (tens of milliseconds), dropped at session end. The session
suffix keeps two test runs sharing one server (a developer and CI, two agents) apart.

SQLite: one migrated template file per session, copied per test.

Redis: ``WORKCOORD_TEST_REDIS_URL`` (db 15 by default). Work coordinator ids are random, so
streams of different tests never collide; :func:`delete_redis_keys` removes a test's streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import redis.asyncio as aioredis
from sqlalchemy.engine import make_url

from workcoord.coordinator.storage.migrate import upgrade_async

__all__ = [
    "DEFAULT_ADMIN_URL",
    "DEFAULT_REDIS_URL",
    "PostgresDatabases",
    "SqliteDatabases",
    "admin_database_url",
    "asyncpg_dsn",
    "delete_redis_keys",
    "postgres_reachable",
    "redis_reachable",
    "redis_url",
    "with_database",
    "xdist_worker",
]

DEFAULT_ADMIN_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
# Databases of one test session are named ``workcoord_<worker>_<6 hex>_…``; the session keeps a
# connection named ``workcoord-tests:<that prefix>`` open while it runs.
_SESSION_DATABASE = re.compile(r"^(workcoord_(?:gw[0-9]+|main)_[0-9a-f]{6})_")
_HOLDER = "workcoord-tests:"


def admin_database_url() -> str:
    """The URL of a database from which test databases are created (``CREATEDB`` needed)."""
    return os.environ.get("WORKCOORD_TEST_DATABASE_URL") or DEFAULT_ADMIN_URL


def redis_url() -> str:
    """The Redis the tests publish notifications through."""
    return os.environ.get("WORKCOORD_TEST_REDIS_URL") or DEFAULT_REDIS_URL


def xdist_worker() -> str:
    """``gw0``, ``gw1``, … under pytest-xdist; ``main`` otherwise."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def asyncpg_dsn(url: str) -> str:
    """A plain ``postgresql://`` DSN for asyncpg from a SQLAlchemy URL."""
    parsed = make_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name``."""
    return make_url(url).set(database=name).render_as_string(hide_password=False)


async def postgres_reachable(url: str | None = None) -> bool:
    """Whether the admin database answers within a few seconds."""
    try:
        conn = await asyncpg.connect(asyncpg_dsn(url or admin_database_url()), timeout=5)
    except (TimeoutError, OSError, asyncpg.PostgresError):
        return False
    await conn.close()
    return True


async def redis_reachable(url: str | None = None) -> bool:
    """Whether Redis answers PING."""
    client = aioredis.Redis.from_url(url or redis_url(), socket_connect_timeout=2)
    try:
        return bool(await client.ping())
    except (OSError, aioredis.RedisError):
        return False
    finally:
        await client.aclose()


async def delete_redis_keys(coordinator_ids: list[str], url: str | None = None) -> None:
    """Delete the notification streams of ``coordinator_ids`` (best effort)."""
    if not coordinator_ids:
        return
    client = aioredis.Redis.from_url(url or redis_url(), socket_connect_timeout=2)
    try:
        await client.delete(*(f"workcoord:notify:{cid}" for cid in coordinator_ids))
    except (OSError, aioredis.RedisError):
        pass
    finally:
        await client.aclose()


@dataclass
class PostgresDatabases:
    """Creates migrated PostgreSQL databases from one template; drops them all on close."""

    admin_url: str = field(default_factory=admin_database_url)
    prefix: str = field(
        default_factory=lambda: f"workcoord_{xdist_worker()}_{secrets.token_hex(3)}"
    )
    created: list[str] = field(default_factory=list)
    _template: str | None = None
    _shared: str | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _counter: int = 0
    _holder: asyncpg.Connection | None = None

    @property
    def template_name(self) -> str:
        return f"{self.prefix}_tpl"

    async def _execute(self, *statements: str) -> None:
        conn = await asyncpg.connect(asyncpg_dsn(self.admin_url), timeout=10)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    async def _mark_alive_and_sweep(self) -> None:
        """Hold a connection named after this session for its lifetime, and drop the databases
        of earlier sessions that hold none (killed runs), so a shared server does not fill up.
        Called (under the lock) before this session creates its first database of any kind:
        a database made before the holder exists would look abandoned to another session."""
        if self._holder is not None:
            return
        self._holder = await asyncpg.connect(
            asyncpg_dsn(self.admin_url),
            timeout=10,
            server_settings={"application_name": f"{_HOLDER}{self.prefix}"},
        )
        rows = await self._holder.fetch(
            "SELECT datname FROM pg_database WHERE datname ~ $1", _SESSION_DATABASE.pattern
        )
        alive = {
            str(r["application_name"]).removeprefix(_HOLDER)
            for r in await self._holder.fetch(
                "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE $1",
                f"{_HOLDER}%",
            )
        }
        for row in rows:
            match = _SESSION_DATABASE.match(row["datname"])
            if match and match.group(1) not in alive:
                await self._holder.execute(
                    f'DROP DATABASE IF EXISTS "{row["datname"]}" WITH (FORCE)'
                )

    async def template(self) -> str:
        """The migrated template's name (created and migrated on first use)."""
        async with self._lock:
            if self._template is None:
                await self._mark_alive_and_sweep()
                name = self.template_name
                await self._execute(
                    f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"'
                )
                self.created.append(name)
                await upgrade_async(with_database(self.admin_url, name))
                self._template = name
            return self._template

    async def shared(self) -> str:
        """This worker's shared migrated database (made once), for tests isolated by ids."""
        if self._shared is None:
            self._shared = await self.create("shared")
        return self._shared

    async def create(self, label: str = "db") -> str:
        """A fresh, migrated database; returns its SQLAlchemy URL."""
        template = await self.template()
        async with self._lock:
            self._counter += 1
            name = f"{self.prefix}_{label}_{self._counter}"[:63]
            # The template must have no open connection while it is copied; only we use it.
            await self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            self.created.append(name)
        return with_database(self.admin_url, name)

    async def create_empty(self, label: str = "empty") -> str:
        """A fresh database with no schema at all."""
        async with self._lock:
            await self._mark_alive_and_sweep()
            self._counter += 1
            name = f"{self.prefix}_{label}_{self._counter}"[:63]
            await self._execute(f'CREATE DATABASE "{name}"')
            self.created.append(name)
        return with_database(self.admin_url, name)

    async def drop(self, url: str) -> None:
        """Drop one database made here (its connections are terminated)."""
        name = make_url(url).database
        if name and name in self.created:
            self.created.remove(name)
            await self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    async def close(self) -> None:
        """Drop every database made here, the template last."""
        names = list(reversed(self.created))
        self.created.clear()
        if names:
            await self._execute(*(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)' for n in names))
        if self._holder is not None:
            # It was opened on the session's event loop, which is closed by now: the connection
            # ends with this process (an xdist worker exits right after its session).
            with contextlib.suppress(RuntimeError):
                self._holder.terminate()
            self._holder = None


@dataclass
class SqliteDatabases:
    """Migrated SQLite files: one template per session, copied per test."""

    directory: Path
    _template: Path | None = None
    _counter: int = 0

    async def create(self, label: str = "db") -> str:
        """A fresh, migrated SQLite database file; returns its URL."""
        if self._template is None:
            template = self.directory / "template.sqlite3"
            await upgrade_async(f"sqlite+aiosqlite:///{template}")
            self._template = template
        self._counter += 1
        path = self.directory / f"{label}-{self._counter}.sqlite3"
        # The backup API copies a consistent image, whatever the template's WAL still holds.
        source = sqlite3.connect(self._template)
        target = sqlite3.connect(path)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
        return f"sqlite+aiosqlite:///{path}"
