"""Alembic environment: runs the coordinator's migrations on PostgreSQL or SQLite (async).

After each applied revision, in the same transaction, :func:`record_compatibility` writes the
revision's ``compatible_from`` into the compatibility table (see ``storage/migrate.py``).
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from workcoord.coordinator.storage.migrate import COMPATIBILITY_TABLE, record_compatibility
from workcoord.coordinator.storage.schema import metadata
from workcoord.coordinator.storage.sql import make_engine

config = context.config


def _include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    # The compatibility table belongs to the migrations, not to the domain's metadata.
    return not (type_ == "table" and name == COMPATIBILITY_TABLE)


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=_include_object,
        on_version_apply=record_compatibility,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = make_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


url = config.get_main_option("sqlalchemy.url")
assert url, "sqlalchemy.url is required"
if context.is_offline_mode():
    context.configure(url=url, target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_async(url))
