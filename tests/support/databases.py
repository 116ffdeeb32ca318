"""Real databases for the integration and end-to-end tests.

PostgreSQL: one template database per test session and xdist worker is migrated once
(``workcoord_<worker>_<session>_tpl``); every test that needs a database gets a fresh copy with
``CREATE DATABASE … TEMPLATE …`` (tens of milliseconds). The random session part keeps two test
runs sharing one server (a developer and CI, two agents) apart.

A session drops only the databases it created itself (each test's when the test ends, the rest
and the template at session end), never one it did not: no sweep of other sessions' databases,
whatever their name, and a name that is already taken is an error, not something to replace. A
run that is killed leaves its databases behind, for whoever knows no run is using them to drop
by hand (docs/operations.md shows how).

SQLite: one migrated template file per session, copied per test.

Redis: ``WORKCOORD_TEST_REDIS_URL`` (db 15 by default). Work coordinator ids are random, so
streams of different tests never collide; :func:`delete_redis_keys` removes a test's streams.
"""

from __future__ import annotations

import asyncio
import os
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
    "ForeignDatabase",
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


class ForeignDatabase(RuntimeError):
    """A database this session meant to create already exists: another's, left alone."""


@dataclass
class PostgresDatabases:
    """Creates migrated PostgreSQL databases from one template; drops those it made on close,
    and never any other."""

    admin_url: str = field(default_factory=admin_database_url)
    prefix: str = field(
        default_factory=lambda: f"workcoord_{xdist_worker()}_{secrets.token_hex(4)}"
    )
    created: list[str] = field(default_factory=list)
    _template: str | None = None
    _shared: str | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _counter: int = 0

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

    async def _create(self, name: str, template: str | None = None) -> None:
        """``CREATE DATABASE name`` (from ``template``), recorded as this session's. A name
        already taken raises :class:`ForeignDatabase`: that database is not ours to drop."""
        copy = f' TEMPLATE "{template}"' if template else ""
        try:
            await self._execute(f'CREATE DATABASE "{name}"{copy}')
        except asyncpg.DuplicateDatabaseError:
            raise ForeignDatabase(
                f"database {name} already exists and was not made by this test session: "
                "left as it is"
            ) from None
        self.created.append(name)

    async def template(self) -> str:
        """The migrated template's name (created and migrated on first use)."""
        async with self._lock:
            if self._template is None:
                name = self.template_name
                await self._create(name)
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
            # The template must have no open connection while it is copied; only we use it.
            name = self._next_name(label)
            await self._create(name, template)
        return with_database(self.admin_url, name)

    async def create_empty(self, label: str = "empty") -> str:
        """A fresh database with no schema at all."""
        async with self._lock:
            name = self._next_name(label)
            await self._create(name)
        return with_database(self.admin_url, name)

    def _next_name(self, label: str) -> str:
        self._counter += 1
        counter = f"_{self._counter}"
        # At most 63 bytes, the counter kept (it alone tells this session's names apart).
        return f"{self.prefix}_{label}"[: 63 - len(counter)] + counter

    async def drop(self, url: str) -> None:
        """Drop one database made here (its connections are terminated); any other is left."""
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
