"""The coordinator's PostgreSQL pool: connections are kept, never opened and closed per
transaction under a load above the pool's size, and its sessions run without JIT."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from workcoord.coordinator.storage.sql import make_engine

pytestmark = [pytest.mark.pg]


async def test_a_load_above_the_pool_size_reuses_the_same_connections(pg_url: str) -> None:
    engine = make_engine(pg_url, pool_size=3)
    backends: set[int] = set()
    started = asyncio.Event()

    async def transaction() -> None:
        async with engine.begin() as connection:
            pid = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            backends.add(int(pid))
            started.set()
            await connection.execute(text("SELECT pg_sleep(0.01)"))

    try:
        for _ in range(5):  # rounds of ten transactions at once: more than the pool holds
            await asyncio.gather(*(transaction() for _ in range(10)))
        # An overflow connection would be closed on return and another opened next round.
        assert started.is_set() and 1 <= len(backends) <= 3, backends
        async with engine.connect() as connection:
            assert (await connection.execute(text("SHOW jit"))).scalar() == "off"
    finally:
        await engine.dispose()
