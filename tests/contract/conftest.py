"""The stores in lockstep: every case of this suite runs on the in-memory store, on SQLite and
on PostgreSQL (test ids ``memory``, ``sqlite``, ``postgres``), through the storage port only.

Each case names the port methods it covers with ``@pytest.mark.port(...)``; the ``store``
fixture checks that the case really called each of them, and ``test_port_coverage`` that every
method of the port has a case. PostgreSQL cases share one migrated database per xdist worker,
emptied before each case; SQLite cases get a fresh copy of a migrated file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, cast

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.databases import PostgresDatabases, SqliteDatabases, postgres_reachable
from workcoord.coordinator.domain.ports import Reader, Store, Tx, WriteLock
from workcoord.coordinator.storage import schema
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.coordinator.storage.sql import SqlStore, make_engine
from workcoord.kit.clock import ManualClock

from .records import T0

PORT_MARK = "port"

STORES = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", marks=[pytest.mark.pg], id="postgres"),
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{PORT_MARK}(*methods): the storage port methods a contract case covers"
    )


class RecordingTx:
    """A transaction that notes which of its attributes the case used."""

    def __init__(self, inner: Any, used: set[str]) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_used", used)

    def __getattr__(self, name: str) -> Any:
        self._used.add(name)
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)


class RecordingStore:
    """A store whose transactions note which port methods the case used."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.used: set[str] = set()

    def read(self, *, snapshot: bool = True) -> AbstractAsyncContextManager[Reader]:
        self.used.add("read")
        return self._open(self.inner.read(snapshot=snapshot))

    def write(
        self, coordinator_id: str | None = None, lock: WriteLock = WriteLock.ALL
    ) -> AbstractAsyncContextManager[Tx]:
        self.used.add("write")
        opening = self.inner.write(coordinator_id, lock)
        return cast(AbstractAsyncContextManager[Tx], self._open(opening))

    def extend(self) -> AbstractAsyncContextManager[Tx]:
        self.used.add("extend")
        return cast(AbstractAsyncContextManager[Tx], self._open(self.inner.extend()))

    @asynccontextmanager
    async def _open(self, opening: AbstractAsyncContextManager[Any]) -> AsyncIterator[Any]:
        async with opening as tx:
            yield RecordingTx(tx, self.used)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[PostgresDatabases]:
    """Made on first use (SQLite-only runs need no PostgreSQL); all dropped at the end."""
    databases = PostgresDatabases()
    yield databases
    asyncio.run(databases.close())


@pytest.fixture(scope="session")
def sqlite_databases(tmp_path_factory: pytest.TempPathFactory) -> SqliteDatabases:
    return SqliteDatabases(tmp_path_factory.mktemp("contract"))


async def _postgres_url(databases: PostgresDatabases) -> str:
    """This worker's contract database (made on first use), emptied."""
    if not await postgres_reachable():
        pytest.fail(
            "PostgreSQL is not reachable at WORKCOORD_TEST_DATABASE_URL; start it "
            "(scripts/ensure-services) or deselect it: -m 'not pg'"
        )
    url = await databases.shared()
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            tables = ", ".join(f'"{name}"' for name in schema.metadata.tables)
            await conn.execute(text(f"TRUNCATE {tables}"))
    finally:
        await engine.dispose()
    return url


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(
    store_kind: str,
    clock: ManualClock,
    request: pytest.FixtureRequest,
    pg_databases: PostgresDatabases,
    sqlite_databases: SqliteDatabases,
) -> AsyncIterator[RecordingStore]:
    """An empty store of ``store_kind`` whose clock is ``clock``."""
    inner: MemoryStore | SqlStore
    if store_kind == "memory":
        inner = MemoryStore(clock)
    elif store_kind == "sqlite":
        inner = SqlStore(make_engine(await sqlite_databases.create()), clock)
    else:
        inner = SqlStore(make_engine(await _postgres_url(pg_databases), pool_size=8), clock)
    recording = RecordingStore(inner)
    try:
        yield recording
    finally:
        await inner.close()
    declared = {name for mark in request.node.iter_markers(PORT_MARK) for name in mark.args}
    unused = sorted(declared - recording.used)
    assert not unused, f"the case declares port methods it never called: {unused}"
