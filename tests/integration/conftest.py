"""Fixtures of the integration tests: real PostgreSQL + Redis, and the embedded SQLite path.

``stack`` is parametrized over both backends, so each contract test runs against PostgreSQL
(with the Redis bus) and against SQLite (with the in-process bus).

Isolation: on PostgreSQL the tests of one xdist worker share one database and are kept apart by
their random org, work coordinator and key ids (copying a database per test costs about a
second on a busy machine); a test that touches installation-wide state (the platform switch,
the schema) asks for ``isolated_stack`` or ``pg_url`` and gets a fresh copy of the template.
SQLite files are cheap to copy, so every SQLite test gets its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from tests.support.databases import (
    PostgresDatabases,
    SqliteDatabases,
    delete_redis_keys,
    postgres_reachable,
    redis_reachable,
    redis_url,
)
from tests.support.harness import Stack, start_stack

BACKENDS = [
    pytest.param("postgres", marks=[pytest.mark.pg, pytest.mark.redis], id="postgres"),
    pytest.param("sqlite", id="sqlite"),
]


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[PostgresDatabases]:
    """Migrated PostgreSQL databases for this worker, made on first use; all dropped at the end.

    Synchronous on purpose: no I/O happens until a test asks for a database, so SQLite-only
    runs need no PostgreSQL; teardown runs its own short event loop.
    """
    databases = PostgresDatabases()
    yield databases
    asyncio.run(databases.close())


@pytest.fixture(scope="session")
def sqlite_databases(tmp_path_factory: pytest.TempPathFactory) -> SqliteDatabases:
    return SqliteDatabases(tmp_path_factory.mktemp("sqlite"))


async def require_postgres() -> None:
    if not await postgres_reachable():
        pytest.fail(
            "PostgreSQL is not reachable at WORKCOORD_TEST_DATABASE_URL; "
            "start it (scripts/ensure-services) or run only the SQLite tests: -m 'not pg'"
        )


async def require_redis() -> str:
    url = redis_url()
    if not await redis_reachable(url):
        pytest.fail("Redis is not reachable at WORKCOORD_TEST_REDIS_URL")
    return url


@pytest.fixture
async def pg_url(pg_databases: PostgresDatabases) -> AsyncIterator[str]:
    """A fresh migrated PostgreSQL database (for PostgreSQL-only tests)."""
    await require_postgres()
    url = await pg_databases.create()
    yield url
    await pg_databases.drop(url)


@pytest.fixture(scope="session")
async def redis() -> str:
    """The Redis URL, after checking (once per session) that Redis answers."""
    return await require_redis()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def _database(
    backend: str, pg: PostgresDatabases, sqlite: SqliteDatabases, *, fresh: bool
) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield await sqlite.create()
        return
    await require_postgres()
    if not fresh:
        yield await pg.shared()
        return
    url = await pg.create()
    try:
        yield url
    finally:
        await pg.drop(url)


@asynccontextmanager
async def _stack(backend: str, database_url: str) -> AsyncIterator[Stack]:
    bus_url = await require_redis() if backend == "postgres" else None
    started = await start_stack(backend, database_url, bus_url)
    try:
        yield started
    finally:
        await started.close()
        if bus_url is not None:
            await delete_redis_keys(started.coordinator_ids, bus_url)


@pytest.fixture
async def database_url(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> AsyncIterator[str]:
    """A migrated database of ``backend`` (PostgreSQL: this worker's shared one)."""
    async with _database(backend, pg_databases, sqlite_databases, fresh=False) as url:
        yield url


@pytest.fixture
async def stack(backend: str, database_url: str) -> AsyncIterator[Stack]:
    """A started coordinator on ``backend`` with an org, a work coordinator and a work key."""
    async with _stack(backend, database_url) as started:
        yield started


@pytest.fixture
async def isolated_stack(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> AsyncIterator[Stack]:
    """Like ``stack``, on a database of its own (for installation-wide changes)."""
    async with (
        _database(backend, pg_databases, sqlite_databases, fresh=True) as url,
        _stack(backend, url) as started,
    ):
        yield started
