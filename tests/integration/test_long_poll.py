"""Long-poll ``Lease``: woken by new work at once, on one instance and across instances.

The engine also re-checks the database every ``BACKSTOP_POLL_SECONDS`` in case a notification
is lost. These tests stretch that backstop far beyond ``WAKE_LIMIT``, so a waiter that returns
in time can only have been woken by the notification (in process, or through Redis) and the
bound holds even on a slow, busy machine.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.databases import delete_redis_keys
from tests.support.harness import Stack, TestClock, start_coordinator_for, task
from workcoord.client import WorkcoordClient
from workcoord.coordinator.domain.engine import leasing

WAIT = 20
WAKE_LIMIT = 5.0


@pytest.fixture(autouse=True)
def slow_backstop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leasing, "BACKSTOP_POLL_SECONDS", 60.0)


async def test_wait_returns_as_soon_as_an_item_is_created(stack: Stack) -> None:
    waiting = asyncio.create_task(stack.lease(wait_seconds=WAIT, worker_id="poller"))
    await asyncio.sleep(0.3)  # let the long-poll start waiting
    assert not waiting.done()
    began = time.monotonic()
    await stack.create_lane(task("a"))
    leases = await asyncio.wait_for(waiting, WAIT)
    elapsed = time.monotonic() - began
    assert [lease.item.key for lease in leases] == ["a"]
    assert elapsed < WAKE_LIMIT, f"woken after {elapsed:.2f}s"


async def test_wait_ends_empty_after_wait_seconds(stack: Stack) -> None:
    began = time.monotonic()
    assert await stack.lease(wait_seconds=1) == []
    assert 0.9 <= time.monotonic() - began < 5


async def test_a_waiter_of_another_class_is_not_handed_the_item(stack: Stack) -> None:
    waiting = asyncio.create_task(stack.lease("codex", wait_seconds=2))
    await asyncio.sleep(0.2)
    await stack.create_lane(task("m", "machine"))
    assert await asyncio.wait_for(waiting, 5) == []
    assert [lease.item.key for lease in await stack.lease("machine")] == ["m"]


@pytest.mark.pg
@pytest.mark.redis
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_commit_on_instance_b_wakes_a_waiter_on_instance_a(stack: Stack) -> None:
    assert stack.redis_url is not None
    other = await start_coordinator_for(
        stack.database_url, stack.redis_url, TestClock(), stack.admin_token, stack.service_key
    )
    try:
        async with WorkcoordClient(other.address, stack.key_secret) as on_b:
            waiting = asyncio.create_task(stack.lease(wait_seconds=WAIT, worker_id="poller"))
            await asyncio.sleep(0.3)
            assert not waiting.done()
            began = time.monotonic()
            await stack.create_lane(task("a"), client=on_b)
            leases = await asyncio.wait_for(waiting, WAIT)
            elapsed = time.monotonic() - began
    finally:
        await other.stop(0)
    assert [lease.item.key for lease in leases] == ["a"]
    # Through Redis: the backstop poll would only have found it after a minute.
    assert elapsed < WAKE_LIMIT, f"woken after {elapsed:.2f}s"
    await delete_redis_keys([stack.cid], stack.redis_url)
