"""Alembic environment: runs the coordinator's migrations on PostgreSQL or SQLite (async)."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from workcoord.coordinator.storage.schema import metadata
from workcoord.coordinator.storage.sql import make_engine

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
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
