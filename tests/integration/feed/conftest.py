"""Fixtures of the feed's integration tests: a coordinator with a fast ping and backstop poll,
on real PostgreSQL + Redis and on the embedded SQLite + in-process bus."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.integration.conftest import require_redis
from tests.support.databases import delete_redis_keys
from tests.support.harness import Stack, start_stack

from .watching import PING_SECONDS, POLL_SECONDS


@pytest.fixture
async def feed_stack(backend: str, database_url: str) -> AsyncIterator[Stack]:
    """A started coordinator whose feed pings every 0.2 s and polls the log every 0.2 s."""
    bus_url = await require_redis() if backend == "postgres" else None
    started = await start_stack(
        backend,
        database_url,
        bus_url,
        feed_ping_seconds=PING_SECONDS,
        feed_poll_seconds=POLL_SECONDS,
    )
    yield started
    await started.close()
    if bus_url is not None:
        await delete_redis_keys([started.coordinator_id], bus_url)
