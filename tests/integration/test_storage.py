"""Storage: migrations on both dialects and the start-up schema check."""

from __future__ import annotations

import secrets

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.databases import PostgresDatabases, SqliteDatabases
from tests.support.harness import TestClock, start_coordinator_for
from workcoord.coordinator.storage.migrate import (
    SchemaMismatch,
    check_schema,
    current_async,
    head,
    upgrade_async,
)


async def execute(url: str, statement: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


@pytest.fixture
async def empty_url(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> str:
    if backend == "postgres":
        return await pg_databases.create_empty()
    return f"sqlite+aiosqlite:///{sqlite_databases.directory}/empty-{secrets.token_hex(6)}.sqlite3"


async def test_migrations_run_and_are_idempotent(empty_url: str) -> None:
    with pytest.raises(SchemaMismatch, match="no workcoord schema"):
        await check_schema(empty_url)
    await upgrade_async(empty_url)
    assert await current_async(empty_url) == head()
    assert await check_schema(empty_url) == head()
    await upgrade_async(empty_url)  # a second upgrade is a no-op
    assert await current_async(empty_url) == head()


async def test_a_newer_schema_is_refused(empty_url: str) -> None:
    await upgrade_async(empty_url)
    await execute(empty_url, "UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(SchemaMismatch, match="newer than this release"):
        await check_schema(empty_url)
    # And the coordinator refuses to start on it, with one line saying what to do.
    with pytest.raises(SchemaMismatch, match=r"9999.*deploy the release that migrated it"):
        await start_coordinator_for(empty_url, None, TestClock(), "wcadm_x", "wcsvc_x")


async def test_an_unstamped_schema_is_refused(empty_url: str) -> None:
    await upgrade_async(empty_url)
    await execute(empty_url, "DELETE FROM alembic_version")
    with pytest.raises(SchemaMismatch, match="no workcoord schema"):
        await check_schema(empty_url)


async def test_a_schema_behind_head_is_refused_until_upgraded(empty_url: str) -> None:
    await upgrade_async(empty_url, "0001")
    with pytest.raises(SchemaMismatch, match="behind this release"):
        await check_schema(empty_url)
    await upgrade_async(empty_url)  # upgrading in place from the older schema works
    assert await check_schema(empty_url) == head()
