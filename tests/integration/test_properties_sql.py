"""The coordinator state machine of the unit suite, on the SQL store: SQLite and PostgreSQL.

The same :class:`CoordinatorMachine` (random worker calls, clock jumps, recovery passes, human
decisions; the invariant checker after every step) runs here against real databases, with
fewer examples. Each example gets its own org and work coordinator in one migrated database
per backend; this module creates and drops its own databases.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from sqlalchemy.engine import make_url

from tests.unit.coordinator.machine import CoordinatorMachine, StoreFactory
from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.storage.migrate import upgrade_async
from workcoord.coordinator.storage.sql import SqlStore, make_engine
from workcoord.kit.clock import Clock

_T = TypeVar("_T")

DEFAULT_ADMIN_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"

SQL_SETTINGS = settings(
    max_examples=10,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)


def _run(coro_factory: Callable[[], Any]) -> Any:
    # A private loop: never disturbs pytest-asyncio's session loop.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro_factory())
    finally:
        loop.close()


def _factory(url: str) -> StoreFactory:
    @asynccontextmanager
    async def sql_store(clock: Clock) -> AsyncIterator[Store]:
        # Made inside the machine's own event loop: pooled connections belong to one loop.
        store = SqlStore(make_engine(url, pool_size=2), clock)
        try:
            yield store
        finally:
            await store.close()

    return sql_store


def _check(factory: StoreFactory) -> None:
    # Hypothesis accepts any factory of machines; its stub says "type".
    run_state_machine_as_test(
        lambda: CoordinatorMachine(factory),  # type: ignore[arg-type]
        settings=SQL_SETTINGS,
    )


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'properties.db'}"
    _run(lambda: upgrade_async(url))
    return url


def _plain_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    admin = os.environ.get("WORKCOORD_TEST_DATABASE_URL") or DEFAULT_ADMIN_URL
    name = f"workcoord_props_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        conn = await asyncpg.connect(_plain_dsn(admin), timeout=10)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    async def drop() -> None:
        conn = await asyncpg.connect(_plain_dsn(admin), timeout=10)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    try:
        _run(create)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        pytest.fail(f"PostgreSQL is not reachable at {admin}: {exc}")
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    try:
        _run(lambda: upgrade_async(url))
        yield url
    finally:
        _run(drop)


def test_engine_invariants_hold_on_sqlite(sqlite_url: str) -> None:
    _check(_factory(sqlite_url))


@pytest.mark.pg
def test_engine_invariants_hold_on_postgres(postgres_url: str) -> None:
    _check(_factory(postgres_url))
