"""The coordinator state machine of the unit suite, on the SQL store: SQLite and PostgreSQL.

The same :class:`CoordinatorMachine` (random worker calls, clock jumps, recovery passes, human
decisions; the invariant checker after every step) runs here against real databases, with
fewer examples. Each example gets its own org and work coordinator in one migrated database
per backend (from the integration fixtures).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from hypothesis.stateful import run_state_machine_as_test

from tests.support.databases import SqliteDatabases
from tests.unit.coordinator.engine_machine import StoreFactory, machine_settings
from tests.unit.coordinator.machine import CoordinatorMachine
from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.storage.sql import SqlStore, make_engine
from workcoord.kit.clock import Clock

SQL_SETTINGS = machine_settings(10, 25)


def _factory(url: str) -> StoreFactory:
    @asynccontextmanager
    async def sql_store(clock: Clock) -> AsyncIterator[Store]:
        # Made inside the machine's own event loop: pooled connections belong to one loop.
        store = SqlStore(make_engine(url, pool_size=4), clock)
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
async def sqlite_url(sqlite_databases: SqliteDatabases) -> str:
    return await sqlite_databases.create("properties")


def test_engine_invariants_hold_on_sqlite(sqlite_url: str) -> None:
    _check(_factory(sqlite_url))


@pytest.mark.pg
def test_engine_invariants_hold_on_postgres(pg_url: str) -> None:
    _check(_factory(pg_url))
