"""Schema migrations (Alembic): upgrade, current, and the start-up compatibility check.

Migrations follow expand → migrate → contract, so that a release and the one before it can run
on the same schema while a rollout (or a rollback) is in progress:

- an **expand** revision only adds (tables, nullable columns, indexes): the previous release
  runs on it unchanged;
- a **migrate** revision moves data while both shapes are still there;
- a **contract** revision removes what no supported release reads any more, one release after
  the code stopped reading it.

Every revision module declares ``compatible_from``: the oldest revision whose code can run on
the schema it leaves (an expand keeps the previous floor, a contract raises it). When a
revision is applied, ``migrations/env.py`` writes that floor into the
``workcoord_schema_compatibility`` table, because an older release does not have the newer
revision's file and must learn from the database whether it may run on it. At start-up
:func:`check_schema` accepts the code's own head, and a newer schema whose floor is a revision
this code knows; it refuses a missing schema, one behind the code, and a newer one that does
not admit this release — each with one line naming what to run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext, MigrationInfo
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from workcoord.kit.startup import StartupError

from .sql import make_engine, normalize_url

__all__ = [
    "COMPATIBILITY_TABLE",
    "MIGRATIONS",
    "SchemaMismatch",
    "SchemaState",
    "check_compatibility",
    "check_schema",
    "current",
    "current_async",
    "head",
    "known_revisions",
    "read_schema_state",
    "record_compatibility",
    "upgrade",
    "upgrade_async",
]

_log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).with_name("migrations")
COMPATIBILITY_TABLE = "workcoord_schema_compatibility"

_metadata = sa.MetaData()
compatibility = sa.Table(
    COMPATIBILITY_TABLE,
    _metadata,
    sa.Column("revision", sa.String(32), primary_key=True),
    sa.Column("compatible_from", sa.String(32), nullable=False),
)
"""One row per applied revision: the oldest code revision that can run on that schema."""


class SchemaMismatch(StartupError):
    """The database's schema is not one this release can run on (the message says what to do)."""


@dataclass(frozen=True)
class SchemaState:
    """What the database says about its schema."""

    revision: str | None
    """The applied Alembic revision, None when there is no workcoord schema."""
    compatible_from: str | None
    """The oldest code revision that can run on it, None when the database does not say."""


def compatible_from(module: object, revision: str) -> str:
    """The ``compatible_from`` a revision module declares (a migration without one is a bug)."""
    floor = getattr(module, "compatible_from", None)
    if not isinstance(floor, str) or not floor:
        raise RuntimeError(
            f"migration {revision} declares no compatible_from: say which revision's code can "
            "run on the schema it leaves (the previous floor for an expand, higher for a contract)"
        )
    return floor


def record_compatibility(
    ctx: MigrationContext,
    step: MigrationInfo,
    heads: Collection[Any],
    run_args: Mapping[str, Any],
) -> None:
    """Alembic ``on_version_apply`` hook: record (or, going down, forget) a revision's floor.

    Runs in the migration's transaction. Revisions older than the table (0001, 0002) are
    recorded by the revision that creates it.
    """
    del heads, run_args
    connection = ctx.connection
    if step.is_stamp or connection is None or step.up_revision_id is None:
        return
    if not sa.inspect(connection).has_table(COMPATIBILITY_TABLE):
        return
    revision = step.up_revision_id
    connection.execute(sa.delete(compatibility).where(compatibility.c.revision == revision))
    if step.is_upgrade:
        script = step.up_revision
        floor = compatible_from(getattr(script, "module", None), revision)
        connection.execute(
            sa.insert(compatibility).values(revision=revision, compatible_from=floor)
        )


def _config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser interpolation would choke on a '%' in a password.
    config.set_main_option("sqlalchemy.url", normalize_url(database_url).replace("%", "%%"))
    return config


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config("sqlite://"))


def head() -> str:
    """The newest revision this code knows."""
    revision = _script().get_current_head()
    assert revision is not None
    return revision


def known_revisions() -> list[str]:
    """Every revision this code knows, oldest first (the head last)."""
    return [script.revision for script in reversed(list(_script().walk_revisions()))]


def upgrade(database_url: str, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` (synchronous; runs its own event loop).

    A schema newer than this code knows is left as it is: when it admits this release (see
    :func:`check_compatibility`) there is nothing to do, and one line says so; when it does not,
    :class:`SchemaMismatch` says which release to deploy (Alembic would only fail to find the
    revision).
    """
    known = known_revisions()
    state = asyncio.run(read_schema_state(database_url))
    if state.revision is not None and state.revision not in known:
        check_compatibility(state, known)
        _log.warning(
            "the database schema %s is newer than this release (head %s) and admits it: "
            "nothing to upgrade",
            state.revision,
            known[-1],
        )
        return
    command.upgrade(_config(database_url), revision)


async def upgrade_async(database_url: str, revision: str = "head") -> None:
    """:func:`upgrade` from async code: Alembic runs its own event loop, so it gets a thread."""
    await asyncio.to_thread(upgrade, database_url, revision)


def current(database_url: str) -> str | None:
    """The database's schema revision, or None when it has none."""
    return asyncio.run(current_async(database_url))


async def current_async(database_url: str) -> str | None:
    """:func:`current` from async code."""
    return (await read_schema_state(database_url)).revision


async def read_schema_state(database_url: str) -> SchemaState:
    """The applied revision and its compatibility floor, read in one connection."""
    engine = make_engine(database_url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_schema_state)
    except (OSError, sa.exc.DBAPIError) as exc:
        # Unreachable, refused, wrong password: one line (the driver's own, no URL in it).
        reason = getattr(exc, "orig", None) or exc
        first_line = (str(reason).strip().splitlines() or [type(reason).__name__])[0]
        raise StartupError(f"cannot read the database schema: {first_line}") from None
    finally:
        await engine.dispose()


def _schema_state(connection: Connection) -> SchemaState:
    revision = MigrationContext.configure(connection).get_current_revision()
    if revision is None or not sa.inspect(connection).has_table(COMPATIBILITY_TABLE):
        return SchemaState(revision, None)
    floor = connection.execute(
        sa.select(compatibility.c.compatible_from).where(compatibility.c.revision == revision)
    ).scalar_one_or_none()
    return SchemaState(revision, floor)


def check_compatibility(state: SchemaState, known: Sequence[str]) -> str:
    """Whether code knowing ``known`` (oldest first, its head last) may run on ``state``.

    Returns the schema revision, or raises :class:`SchemaMismatch` with one line that names
    the command to run. Pure: the start-up check and the rollback drill both use it.
    """
    code_head = known[-1]
    revision = state.revision
    if revision is None:
        raise SchemaMismatch("the database has no workcoord schema: run `workcoord db upgrade`")
    if revision == code_head:
        return revision
    if revision in known:
        raise SchemaMismatch(
            f"the database schema {revision} is behind this release (head {code_head}): "
            "run `workcoord db upgrade`"
        )
    floor = state.compatible_from
    if floor is None:
        raise SchemaMismatch(
            f"the database schema {revision} is newer than this release knows (head "
            f"{code_head}) and does not say which releases can run on it: deploy the release "
            "that migrated it"
        )
    if floor not in known:
        raise SchemaMismatch(
            f"the database schema {revision} is newer than this release (head {code_head}) "
            f"and needs code from revision {floor} on: deploy that release or a newer one"
        )
    return revision


async def check_schema(database_url: str, known: Sequence[str] | None = None) -> str:
    """Refuse a database whose schema this code cannot run on (see :func:`check_compatibility`).

    ``known`` defaults to this code's revisions; a rollback drill passes an older release's.
    """
    revisions = list(known) if known is not None else known_revisions()
    state = await read_schema_state(database_url)
    revision = check_compatibility(state, revisions)
    if revision != revisions[-1]:
        _log.info(
            "database schema %s is newer than this release (head %s); it admits code from %s on",
            revision,
            revisions[-1],
            state.compatible_from,
        )
    return revision
