from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from workcoord.kit.bus import (
    InProcessBus,
    Notification,
    RedisStreamBus,
    bus_from_url,
)

REDIS_URL = "redis://127.0.0.1:6379/15"


def _cid() -> str:
    return f"wc-{uuid.uuid4().hex[:12]}"


# --- in-process ------------------------------------------------------------------------------


async def test_in_process_delivers_in_order_after_enter() -> None:
    bus = InProcessBus()
    cid = _cid()
    await bus.publish(Notification(cid, 1))  # before anyone subscribed: not delivered
    async with bus.subscribe(cid) as sub, bus.subscribe(cid) as other:
        await bus.publish(Notification(cid, 2, frozenset({"codex"})))
        await bus.publish(Notification(cid, 3))
        await bus.publish(Notification(_cid(), 9))  # another coordinator
        assert await sub.next(0.1) == Notification(cid, 2, frozenset({"codex"}))
        assert await sub.next(0.1) == Notification(cid, 3)
        assert await sub.next(0.01) is None
        assert (await other.next(0.1), await other.next(0.1)) == (
            Notification(cid, 2, frozenset({"codex"})),
            Notification(cid, 3),
        )
    await bus.close()


async def test_in_process_wakes_a_waiting_subscriber() -> None:
    bus = InProcessBus()
    cid = _cid()
    async with bus.subscribe(cid) as sub:
        waiter = asyncio.create_task(sub.next(5))
        await asyncio.sleep(0)
        await bus.publish(Notification(cid, 7))
        assert await asyncio.wait_for(waiter, _PATIENCE_SECONDS) == Notification(cid, 7)


async def test_in_process_drops_oldest_when_full() -> None:
    bus = InProcessBus()
    cid = _cid()
    async with bus.subscribe(cid) as sub:
        for revision in range(1000):
            await bus.publish(Notification(cid, revision))
        first = await sub.next(0.1)
        assert first is not None and first.revision > 0
        last = first
        while (note := await sub.next(0)) is not None:
            last = note
        assert last.revision == 999


async def test_reading_outside_the_context_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        await InProcessBus().subscribe("x").next(0)


def test_bus_from_url() -> None:
    assert isinstance(bus_from_url(None), InProcessBus)
    assert isinstance(bus_from_url(""), InProcessBus)
    with pytest.raises(ValueError):
        bus_from_url("http://nope")


# --- Redis -----------------------------------------------------------------------------------


@pytest.fixture
async def redis_client() -> AsyncIterator[aioredis.Redis]:
    """A DB 15 client; the keys of this test (its own prefix) are deleted afterwards."""
    client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    yield client
    keys = [k async for k in client.scan_iter(match=f"{_ROOT}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


# Unique per test module run, so parallel runs (xdist) never touch each other's keys.
_ROOT = f"workcoord-test:{uuid.uuid4().hex[:8]}:"
PREFIX = f"{_ROOT}notify:"
CONTROL = f"{_ROOT}bus-control:"
# A hang guard: every wait returns as soon as its notification arrives.
_PATIENCE_SECONDS = 60.0


def _bus() -> RedisStreamBus:
    return RedisStreamBus(REDIS_URL, stream_prefix=PREFIX, control_prefix=CONTROL)


@pytest.mark.redis
async def test_redis_cross_instance_delivery_in_order(redis_client: aioredis.Redis) -> None:
    a, b = _bus(), _bus()
    cid = _cid()
    try:
        async with b.subscribe(cid) as sub:
            for revision in range(1, 6):
                await a.publish(Notification(cid, revision, frozenset({"machine", "codex"})))
            got = [await sub.next(2) for _ in range(5)]
            assert [n.revision for n in got if n] == [1, 2, 3, 4, 5]
            assert got[0] == Notification(cid, 1, frozenset({"machine", "codex"}))
            assert await sub.next(0.2) is None
        assert await redis_client.xlen(f"{PREFIX}{cid}") == 5
    finally:
        await a.close()
        await b.close()


@pytest.mark.redis
async def test_redis_local_delivery_is_not_duplicated(redis_client: aioredis.Redis) -> None:
    bus = _bus()
    cid = _cid()
    try:
        async with bus.subscribe(cid) as sub:
            await bus.publish(Notification(cid, 1))
            assert await sub.next(0.01) == Notification(cid, 1)  # no Redis round trip needed
            # The reader sees the entry too (tagged with our instance id) and must skip it.
            assert await sub.next(0.5) is None
    finally:
        await bus.close()


@pytest.mark.redis
async def test_redis_entries_before_subscribe_are_not_replayed(
    redis_client: aioredis.Redis,
) -> None:
    a, b = _bus(), _bus()
    cid = _cid()
    try:
        await a.publish(Notification(cid, 1))
        async with b.subscribe(cid) as sub:
            await a.publish(Notification(cid, 2))
            assert await sub.next(2) == Notification(cid, 2)
            assert await sub.next(0.2) is None
    finally:
        await a.close()
        await b.close()


@pytest.mark.redis
async def test_redis_publish_right_after_subscribe_is_seen(redis_client: aioredis.Redis) -> None:
    """No window between entering the subscription and the reader's first XREAD."""
    a, b = _bus(), _bus()
    try:
        for _ in range(20):
            cid = _cid()
            async with b.subscribe(cid) as sub:
                await a.publish(Notification(cid, 1))
                assert await sub.next(2) == Notification(cid, 1)
    finally:
        await a.close()
        await b.close()


@pytest.mark.redis
async def test_redis_delivers_each_notification_in_turn(redis_client: aioredis.Redis) -> None:
    """One at a time, each published notification reaches the other bus's subscriber (how fast
    is bench B2's business: no test asserts a latency)."""
    a, b = _bus(), _bus()
    cid = _cid()
    try:
        async with b.subscribe(cid) as sub:
            for revision in range(1, 21):
                await a.publish(Notification(cid, revision))
                assert await sub.next(_PATIENCE_SECONDS) == Notification(cid, revision)
    finally:
        await a.close()
        await b.close()


@pytest.mark.redis
async def test_redis_resubscribe_and_many_streams(redis_client: aioredis.Redis) -> None:
    a, b = _bus(), _bus()
    ids = [_cid() for _ in range(5)]
    try:
        async with b.subscribe(ids[0]) as first:
            await a.publish(Notification(ids[0], 1))
            assert await first.next(2) == Notification(ids[0], 1)
        async with b.subscribe(ids[0]) as again, b.subscribe(ids[1]) as second:
            await a.publish(Notification(ids[1], 5))
            await a.publish(Notification(ids[0], 2))
            assert await second.next(2) == Notification(ids[1], 5)
            assert await again.next(2) == Notification(ids[0], 2)
            assert await again.next(0.1) is None
    finally:
        await a.close()
        await b.close()


@pytest.mark.redis
async def test_redis_unreachable_never_raises(redis_client: aioredis.Redis) -> None:
    bus = RedisStreamBus("redis://127.0.0.1:6390/15", stream_prefix=PREFIX, control_prefix=CONTROL)
    cid = _cid()
    try:
        # A hang guard only: publishing and subscribing never wait on the unreachable server.
        async with asyncio.timeout(_PATIENCE_SECONDS), bus.subscribe(cid) as sub:
            await bus.publish(Notification(cid, 1))
            await bus.publish(Notification(cid, 2))
            # Local subscribers still get woken.
            assert await sub.next(_PATIENCE_SECONDS) == Notification(cid, 1)
            assert await sub.next(_PATIENCE_SECONDS) == Notification(cid, 2)
            assert await sub.next(0.05) is None
    finally:
        await bus.close()
