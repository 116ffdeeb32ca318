"""Schema migrations (Alembic): upgrade, current, and the start-up schema check.

``workcoord db upgrade`` and ``workcoord db current`` call these; the coordinator refuses to
start against a schema it does not know (a newer one, written by a later release).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from .sql import make_engine, normalize_url

MIGRATIONS = Path(__file__).with_name("migrations")


class SchemaMismatch(RuntimeError):
    """The database's schema is not the one this code expects."""


def _config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser interpolation would choke on a '%' in a password.
    config.set_main_option("sqlalchemy.url", normalize_url(database_url).replace("%", "%%"))
    return config


def head() -> str:
    """The newest revision this code knows."""
    script = ScriptDirectory.from_config(_config("sqlite://"))
    revision = script.get_current_head()
    assert revision is not None
    return revision


def known_revisions() -> set[str]:
    script = ScriptDirectory.from_config(_config("sqlite://"))
    return {rev.revision for rev in script.walk_revisions()}


def upgrade(database_url: str, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` (synchronous; runs its own event loop)."""
    command.upgrade(_config(database_url), revision)


async def upgrade_async(database_url: str, revision: str = "head") -> None:
    """:func:`upgrade` from async code: Alembic runs its own event loop, so it gets a thread."""
    await asyncio.to_thread(upgrade, database_url, revision)


def current(database_url: str) -> str | None:
    """The database's schema revision, or None when it has none."""
    return asyncio.run(current_async(database_url))


async def current_async(database_url: str) -> str | None:
    engine = make_engine(database_url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_current_revision)
    finally:
        await engine.dispose()


def _current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def check_schema(database_url: str) -> str:
    """Refuse a database whose schema is missing, behind, or newer than this code."""
    revision = await current_async(database_url)
    if revision is None:
        raise SchemaMismatch("the database has no workcoord schema: run `workcoord db upgrade`")
    if revision not in known_revisions():
        raise SchemaMismatch(
            f"the database schema {revision} is newer than this release knows (head {head()}); "
            "upgrade workcoord instead of running an older release against it"
        )
    if revision != head():
        raise SchemaMismatch(
            f"the database schema {revision} is behind this release (head {head()}): "
            "run `workcoord db upgrade`"
        )
    return revision
