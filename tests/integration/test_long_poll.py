"""Long-poll ``Lease``: woken by new work at once, on one instance and across instances.

The engine also re-checks the database every ``BACKSTOP_POLL_SECONDS`` in case a notification
is lost. These tests stretch that backstop beyond the longest wait a Lease may ask for, so a
waiter that returns with the item at all was woken by the notification (in process, or through
Redis): no elapsed time is asserted, and a slow, busy machine only makes them slower.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.databases import delete_redis_keys
from tests.support.harness import Stack, TestClock, start_coordinator_for, task
from workcoord.client import WorkcoordClient
from workcoord.coordinator.domain.engine import leasing

WAIT = 60  # the longest a Lease may wait: without the notification it would end empty


@pytest.fixture(autouse=True)
def slow_backstop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leasing, "BACKSTOP_POLL_SECONDS", 3600.0)


async def test_wait_returns_as_soon_as_an_item_is_created(stack: Stack) -> None:
    waiting = asyncio.create_task(stack.lease(wait_seconds=WAIT, worker_id="poller"))
    # A head start for the waiter (were it late, it would find the item at once: still right).
    await asyncio.sleep(0.3)
    assert not waiting.done()
    await stack.create_lane(task("a"))
    leases = await asyncio.wait_for(waiting, 2 * WAIT)
    assert [lease.item.key for lease in leases] == ["a"]


async def test_wait_ends_empty_after_wait_seconds(stack: Stack) -> None:
    began = time.monotonic()
    assert await stack.lease(wait_seconds=1) == []
    assert time.monotonic() - began >= 0.9  # it waited (how much longer is the machine's load)


async def test_one_commit_wakes_several_waiters_each_item_goes_to_one(stack: Stack) -> None:
    """The first waiter woken claims at once, the others look first; nobody gets an item
    twice and the one left over waits on to its deadline."""
    waiters = [
        asyncio.create_task(stack.lease(wait_seconds=3, worker_id=f"poller-{n}")) for n in range(3)
    ]
    await asyncio.sleep(0.3)  # a head start, as above
    await stack.create_lane(task("a"), task("b"))
    results = await asyncio.wait_for(asyncio.gather(*waiters), 2 * WAIT)
    assert sorted(lease.item.key for leases in results for lease in leases) == ["a", "b"]
    assert sorted(len(leases) for leases in results) == [0, 1, 1]


async def test_a_waiter_of_another_class_is_not_handed_the_item(stack: Stack) -> None:
    waiting = asyncio.create_task(stack.lease("codex", wait_seconds=2))
    await asyncio.sleep(0.2)  # a head start, as above
    await stack.create_lane(task("m", "machine"))
    assert await asyncio.wait_for(waiting, 2 * WAIT) == []
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
            await asyncio.sleep(0.3)  # a head start, as above
            assert not waiting.done()
            await stack.create_lane(task("a"), client=on_b)
            leases = await asyncio.wait_for(waiting, 2 * WAIT)
    finally:
        await other.stop(0)
    # Through Redis: the backstop poll would only have found it after an hour.
    assert [lease.item.key for lease in leases] == ["a"]
    await delete_redis_keys([stack.cid], stack.redis_url)
