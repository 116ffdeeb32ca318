"""The test suite's own database handling (tests/support/databases.py) on the real PostgreSQL:
a session drops the databases it made and never one it did not, however it is named."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import asyncpg
import pytest

from tests.support.databases import (
    ForeignDatabase,
    PostgresDatabases,
    admin_database_url,
    asyncpg_dsn,
    xdist_worker,
)

pytestmark = [pytest.mark.pg]


async def _existing(names: list[str]) -> set[str]:
    conn = await asyncpg.connect(asyncpg_dsn(admin_database_url()), timeout=10)
    try:
        rows = await conn.fetch("SELECT datname FROM pg_database WHERE datname = ANY($1)", names)
    finally:
        await conn.close()
    return {str(r["datname"]) for r in rows}


async def _admin(*statements: str) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(admin_database_url()), timeout=10)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture
async def foreign() -> AsyncIterator[list[str]]:
    """Databases of "another session": named as a test session names its own (one of them a
    template, one an ordinary copy), made outside this one, held by no connection at all (as a
    killed run's, or a live run's between two tests). Six hex digits, as sessions were named
    while they swept "abandoned" databases of that shape."""
    prefix = f"workcoord_{xdist_worker()}_{secrets.token_hex(3)}"
    names = [f"{prefix}_tpl", f"{prefix}_db_1"]
    await _admin(*(f'CREATE DATABASE "{name}"' for name in names))
    try:
        yield names
    finally:
        await _admin(*(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' for name in names))


async def test_a_session_drops_what_it_made_and_nothing_else(foreign: list[str]) -> None:
    session = PostgresDatabases()
    made = [await session.create(), await session.create_empty(), await session.shared()]
    names = [url.rsplit("/", 1)[1] for url in made]
    assert await _existing([*names, session.template_name]) == {*names, session.template_name}
    await session.drop(made[0])
    assert names[0] not in await _existing(names)
    await session.close()
    assert await _existing([*names, session.template_name]) == set()
    # Another session's databases, held by no connection, are still there.
    assert await _existing(foreign) == set(foreign)


async def test_a_taken_name_is_an_error_never_a_drop(foreign: list[str]) -> None:
    clashing = PostgresDatabases(prefix=foreign[0].removesuffix("_tpl"))
    with pytest.raises(ForeignDatabase, match="left as it is"):
        await clashing.create()
    with pytest.raises(ForeignDatabase):
        await clashing.create_empty("db")  # the very name of the foreign copy
    await clashing.close()
    assert clashing.created == []
    assert await _existing(foreign) == set(foreign)
    # Dropping by URL only ever drops this session's own.
    await clashing.drop(f"postgresql+asyncpg://postgres@127.0.0.1/{foreign[1]}")
    assert await _existing(foreign) == set(foreign)
