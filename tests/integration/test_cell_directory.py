"""The cell directory's table on real PostgreSQL (gateway/cells.py ``PostgresDirectory``): made on
first use in an empty database, a row recorded once (the first cell wins, later records answer
it), concurrent records of one key agree, counts by cell, and forget removes only its own row."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.databases import PostgresDatabases, asyncpg_dsn
from workcoord.gateway.cells import COORDINATOR, ORG, PostgresDirectory

from .conftest import require_postgres

pytestmark = [pytest.mark.pg]


@pytest.fixture
async def directory(pg_databases: PostgresDatabases) -> AsyncIterator[PostgresDirectory]:
    await require_postgres()
    url = await pg_databases.create_empty("cells")
    made = PostgresDirectory(asyncpg_dsn(url))
    try:
        yield made
    finally:
        await made.close()
        await pg_databases.drop(url)


async def test_records_once_and_counts(directory: PostgresDirectory) -> None:
    assert await directory.lookup(COORDINATOR, "wc_1") is None
    assert await directory.record(COORDINATOR, "wc_1", "b") == "b"
    # Recorded already: the first cell stays and is answered.
    assert await directory.record(COORDINATOR, "wc_1", "a") == "b"
    assert await directory.lookup(COORDINATOR, "wc_1") == "b"
    for slug, cell in (("one", "a"), ("two", "b"), ("three", "b")):
        await directory.record(ORG, slug, cell)
    assert await directory.counts(ORG) == {"a": 1, "b": 2}
    assert await directory.counts(COORDINATOR) == {"b": 1}


async def test_concurrent_records_agree(directory: PostgresDirectory) -> None:
    await directory.lookup(ORG, "warm-up")  # the table exists before the race
    cells = ["a", "b"] * 8
    answers = await asyncio.gather(*(directory.record(ORG, "contested", c) for c in cells))
    assert len(set(answers)) == 1
    assert await directory.lookup(ORG, "contested") == answers[0]


async def test_forget_removes_only_its_own_row(directory: PostgresDirectory) -> None:
    await directory.record(ORG, "kept", "a")
    await directory.forget(ORG, "kept", "b")
    assert await directory.lookup(ORG, "kept") == "a"
    await directory.forget(ORG, "kept", "a")
    assert await directory.lookup(ORG, "kept") is None
