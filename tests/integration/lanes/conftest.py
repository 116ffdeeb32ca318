"""Fixtures of the lane scenarios: a fake GitHub and a whole system on PostgreSQL + Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.support.databases import delete_redis_keys

from .fake_github import FakeGitHub, running_fake_github
from .system import GITHUB_TOKEN, LaneSystem, start_lane_system


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with running_fake_github(GITHUB_TOKEN) as fake:
        fake.add_issue("o/r#12")
        fake.add_issue("o/r#13")
        yield fake


@pytest.fixture
async def system(pg_url: str, redis: str, github: FakeGitHub) -> AsyncIterator[LaneSystem]:
    started = await start_lane_system(pg_url, redis, github)
    try:
        yield started
    finally:
        await started.close()
        await delete_redis_keys([started.cid], redis)
