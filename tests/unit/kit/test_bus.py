from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from workcoord.kit.bus import (
    InProcessBus,
    Notification,
    bus_from_url,
)
from workcoord.kit.bus_redis import RedisStreamBus

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


# --- ready signals (one class's wake-up) ----------------------------------------------------


async def _yield_to_the_loop(turns: int = 20) -> None:
    """Let every ready callback run (a woken waiter would finish), without sleeping."""
    for _ in range(turns):
        await asyncio.sleep(0)


async def test_ready_signal_wakes_only_for_its_class() -> None:
    bus = InProcessBus()
    cid = _cid()
    async with bus.ready_signal(cid, "codex") as codex, bus.ready_signal(cid, "machine") as machine:
        waiting = asyncio.create_task(codex.wait(_PATIENCE_SECONDS))
        await _yield_to_the_loop()
        await bus.publish(Notification(cid, 1, frozenset({"machine"})))
        await bus.publish(Notification(_cid(), 2, frozenset({"codex"})))  # another coordinator
        await _yield_to_the_loop()
        assert not waiting.done()
        assert await machine.wait(0) is True
        await bus.publish(Notification(cid, 3, frozenset({"codex", "other"})))
        assert await asyncio.wait_for(waiting, _PATIENCE_SECONDS) is True
        assert await machine.wait(0) is False


async def test_ready_signal_debounces_a_burst_into_one_wake_up() -> None:
    bus = InProcessBus()
    cid = _cid()
    async with bus.ready_signal(cid, "codex") as codex, bus.subscribe(cid) as feed:
        waiting = asyncio.create_task(codex.wait(_PATIENCE_SECONDS))
        await _yield_to_the_loop()
        for revision in range(1, 51):
            await bus.publish(Notification(cid, revision, frozenset({"codex"})))
        # The first of the burst woke the waiter; the other 49 count once, for its next wait.
        assert await asyncio.wait_for(waiting, _PATIENCE_SECONDS) is True
        assert await codex.wait(0) is False
        # A subscription still sees every notification.
        seen = [note.revision for note in [await feed.next(0) for _ in range(50)] if note]
        assert seen == list(range(1, 51))
        for revision in range(51, 60):
            await bus.publish(Notification(cid, revision, frozenset({"codex"})))
        assert await codex.wait(0) is True  # set while nobody waited: at once
        assert await codex.wait(0) is False


async def test_ready_signal_ignores_log_only_and_wakes_on_any_class() -> None:
    bus = InProcessBus()
    cid = _cid()
    async with bus.ready_signal(cid, "codex") as codex, bus.subscribe(cid) as feed:
        await bus.publish(Notification(cid, 1, log_only=True))
        assert await feed.next(0) == Notification(cid, 1, log_only=True)
        assert await codex.wait(0) is False
        await bus.publish(Notification(cid, 2))  # no class named: unknown, so any
        assert await codex.wait(0) is True


async def test_ready_signal_hears_nothing_before_enter_or_after_exit() -> None:
    bus = InProcessBus()
    cid = _cid()
    signal = bus.ready_signal(cid, "codex")
    with pytest.raises(RuntimeError):
        await signal.wait(0)
    await bus.publish(Notification(cid, 1, frozenset({"codex"})))
    async with signal:
        assert await signal.wait(0) is False
    await bus.publish(Notification(cid, 2, frozenset({"codex"})))
    with pytest.raises(RuntimeError):
        await signal.wait(0)


async def test_ready_signals_set_by_one_notification_share_its_generation() -> None:
    bus = InProcessBus()
    cid = _cid()
    async with (
        bus.ready_signal(cid, "codex") as first,
        bus.ready_signal(cid, "codex") as second,
        bus.ready_signal(cid, "machine") as other,
    ):
        await bus.publish(Notification(cid, 1, frozenset({"codex", "machine"})))
        assert await first.wait(0) and await second.wait(0) and await other.wait(0)
        assert first.generation == second.generation == other.generation > 0
        await bus.publish(Notification(cid, 2, frozenset({"codex"})))
        await bus.publish(Notification(cid, 3, frozenset({"codex"})))
        assert await first.wait(0)
        assert first.generation > other.generation
        assert await second.wait(0) and second.generation == first.generation


def test_notification_may_ready() -> None:
    assert Notification("c", 1, frozenset({"a"})).may_ready("a")
    assert not Notification("c", 1, frozenset({"a"})).may_ready("b")
    assert Notification("c", 1).may_ready("b")
    assert not Notification("c", 1, log_only=True).may_ready("b")


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
async def test_redis_log_only_is_sent_behind_the_call_in_order(
    redis_client: aioredis.Redis,
) -> None:
    """A log-only publish returns without waiting for Redis, yet its XADD goes out after those
    published before it and before those published after; close sends what is on its way."""
    a, b = _bus(), _bus()
    cid = _cid()
    try:
        async with b.subscribe(cid) as sub:
            for revision in range(1, 11):
                await a.publish(Notification(cid, revision, log_only=revision % 2 == 1))
            for revision in range(1, 11):
                note = await sub.next(_PATIENCE_SECONDS)
                assert note is not None and note.revision == revision
                assert note.log_only is (revision % 2 == 1)
        await a.publish(Notification(cid, 11, log_only=True))
        await a.close()
        newest = await redis_client.xrevrange(a.stream_key(cid), count=1)
        assert newest is not None
        fields = newest[0][1]
        assert fields is not None and fields["revision"] == "11"
    finally:
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
async def test_redis_ready_signal_across_instances(redis_client: aioredis.Redis) -> None:
    """Through the stream: only notifications that may ready the class set the signal, a
    burst counts once, and log-only travels as such."""
    a, b = _bus(), _bus()
    cid = _cid()
    try:
        async with b.ready_signal(cid, "codex") as codex:
            # The signal alone makes b read the stream.
            await a.publish(Notification(cid, 1, frozenset({"codex"})))
            assert await codex.wait(_PATIENCE_SECONDS) is True
            async with b.subscribe(cid) as feed:
                await a.publish(Notification(cid, 2, frozenset({"machine"})))
                await a.publish(Notification(cid, 3, log_only=True))
                # Once the feed has both, the reader has handled them: neither set the signal.
                assert await feed.next(_PATIENCE_SECONDS) == Notification(
                    cid, 2, frozenset({"machine"})
                )
                assert await feed.next(_PATIENCE_SECONDS) == Notification(cid, 3, log_only=True)
                assert await codex.wait(0) is False
                for revision in range(4, 14):
                    await a.publish(Notification(cid, revision, frozenset({"codex"})))
                for revision in range(4, 14):
                    note = await feed.next(_PATIENCE_SECONDS)
                    assert note is not None and note.revision == revision
                assert await codex.wait(0) is True
                assert await codex.wait(0) is False
    finally:
        await a.close()
        await b.close()


@pytest.mark.redis
async def test_redis_local_ready_signal_needs_no_round_trip(redis_client: aioredis.Redis) -> None:
    bus = RedisStreamBus("redis://127.0.0.1:6390/15", stream_prefix=PREFIX, control_prefix=CONTROL)
    cid = _cid()
    try:
        # Redis is unreachable: the local publish alone wakes the waiter.
        async with asyncio.timeout(_PATIENCE_SECONDS), bus.ready_signal(cid, "codex") as codex:
            waiting = asyncio.create_task(codex.wait(_PATIENCE_SECONDS))
            await _yield_to_the_loop()
            await bus.publish(Notification(cid, 1, frozenset({"codex"})))
            assert await waiting is True
    finally:
        await bus.close()


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
