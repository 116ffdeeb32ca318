"""Waiting for PostgreSQL to show a lock wait: how the contract cases prove that a second
transaction waits for the first before the first commits."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import text

# Generous: only ends a hang (a loaded machine makes the wait longer, never failing).
WAIT_SECONDS = 60.0


async def waits_for_a_lock(store: Any) -> None:
    """Return once a session of this PostgreSQL database (``store.inner``'s) waits for a lock
    (a row lock, an advisory lock)."""
    async with store.inner.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        statement = text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        async with asyncio.timeout(WAIT_SECONDS):
            while not (await conn.execute(statement)).scalar_one():  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # polling an event PostgreSQL does not announce
