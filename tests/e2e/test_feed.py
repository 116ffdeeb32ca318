"""The live feed end to end, delivery: frames, resuming, two gateway replicas, a Redis
restart, retention and the subscriber's lifecycle (disconnects, oversized messages). The
system is :mod:`tests.e2e.feed_services`: two coordinators and two gateways as separate
processes, a private Redis; gateway 1 talks to coordinator A, gateway 2 to coordinator B, and
every write goes through gateway 1, so gateway 2's subscribers hear of it only through Redis
(or the backstop poll when Redis is down).
"""

from __future__ import annotations

import asyncio
import functools
import time

import asyncpg
import httpx
import pytest

from tests.support.databases import asyncpg_dsn
from tests.support.processes import run_in_thread

from . import feed_clients, feed_services
from .feed_clients import WAIT_SECONDS, Socket, Tenant, in_thread
from .feed_services import POLL_SECONDS

pytestmark = [pytest.mark.xdist_group(name="e2e-feed"), pytest.mark.pg, pytest.mark.redis]

# The module-scoped system and the per-test tenant on it, registered here.
feed_system = feed_services.feed_system
tenant = feed_clients.tenant


async def test_hello_then_snapshot_as_json_frames(tenant: Tenant) -> None:
    await in_thread(lambda: tenant.lane("a", "b"))
    revision = await in_thread(tenant.revision)
    view = await in_thread(
        lambda: tenant.call("GET", f"/v1/work-coordinators/{tenant.cid}/view?pageSize=500")
    )
    socket = await Socket.open(tenant.system.gateway_urls[0], tenant.cid, tenant.key)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        hello, snapshot = socket.frames[0], socket.frames[1]
        assert hello == {
            "type": "hello",
            "coordinatorId": tenant.cid,
            "revision": str(revision),
            "pingSeconds": 1,
            "resumeFrom": str(revision),
        }
        assert snapshot["type"] == "snapshot" and snapshot["revision"] == str(revision)
        assert snapshot["view"] == view
        await socket.until(lambda s: "ping" in s.kinds())
        assert {"type": "ping", "revision": str(revision)} in socket.frames
    finally:
        await socket.close()


async def test_resuming_with_since_gets_exactly_the_missed_events(tenant: Tenant) -> None:
    gateway = tenant.system.gateway_urls[0]
    socket = await Socket.open(gateway, tenant.cid, tenant.key)
    await in_thread(lambda: tenant.lane("a"))
    await socket.until_revision(await in_thread(tenant.revision))
    last = socket.delivered()
    await socket.close()
    # Missed while disconnected:
    await in_thread(lambda: tenant.lane("b", "c"))
    await in_thread(lambda: tenant.lane("d"))
    missed = await in_thread(lambda: tenant.events_after(last))
    assert missed
    resumed = await Socket.open(gateway, tenant.cid, tenant.key, since=last)
    try:
        current = await in_thread(tenant.revision)
        await resumed.until_revision(current)
        assert resumed.frames[0]["resumeFrom"] == str(last)
        assert "snapshot" not in resumed.kinds()
        assert resumed.events() == missed
    finally:
        await resumed.close()


async def test_two_gateway_replicas_deliver_identical_streams(tenant: Tenant) -> None:
    since = await in_thread(tenant.revision)
    sockets = [
        await Socket.open(url, tenant.cid, tenant.key, since=since)
        for url in tenant.system.gateway_urls
    ]
    try:
        for n in range(5):
            await in_thread(functools.partial(tenant.lane, f"r{n}", f"s{n}"))
        current = await in_thread(tenant.revision)
        for socket in sockets:
            await socket.until_revision(current)
        expected = await in_thread(lambda: tenant.events_after(since))
        assert sockets[0].events() == sockets[1].events() == expected
    finally:
        for socket in sockets:
            await socket.close()


async def test_a_subscriber_across_a_redis_restart_sees_no_gap(tenant: Tenant) -> None:
    redis = tenant.system.redis
    since = await in_thread(tenant.revision)
    # Gateway 2 → coordinator B, which hears of gateway 1's writes only via Redis or the poll.
    socket = await Socket.open(tenant.system.gateway_urls[1], tenant.cid, tenant.key, since=since)
    try:
        await in_thread(lambda: tenant.lane("before"))
        await socket.until_revision(await in_thread(tenant.revision))
        await in_thread(redis.shutdown)
        try:
            for n in range(3):
                await in_thread(functools.partial(tenant.lane, f"down{n}"))
            current = await in_thread(tenant.revision)
            # Only the backstop poll can deliver these.
            await socket.until_revision(current, within=POLL_SECONDS * 4 + 10)
        finally:
            await in_thread(redis.start)
        for n in range(3):
            await in_thread(functools.partial(tenant.lane, f"up{n}"))
        current = await in_thread(tenant.revision)
        await socket.until_revision(current, within=POLL_SECONDS * 4 + 10)
        assert socket.events() == await in_thread(lambda: tenant.events_after(since))
        assert socket.close_code is None
    finally:
        await socket.close()


async def test_a_since_older_than_the_retained_events_gets_a_snapshot(tenant: Tenant) -> None:
    for n in range(3):
        await in_thread(functools.partial(tenant.lane, f"old{n}"))
    revision = await in_thread(tenant.revision)
    # Retention: the oldest events are gone from the log.
    await _prune_events(tenant.system.database_url, tenant.cid, below=revision - 2)
    socket = await Socket.open(tenant.system.gateway_urls[0], tenant.cid, tenant.key, since=1)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        assert socket.kinds()[:3] == ["hello", "resync", "snapshot"]
        assert socket.frames[1] == {"type": "resync", "reason": "GAP", "revision": str(revision)}
        assert socket.frames[2]["revision"] == str(revision)
        # …and live from the snapshot on.
        await in_thread(lambda: tenant.lane("new"))
        current = await in_thread(tenant.revision)
        await socket.until_revision(current)
        assert socket.events() == await in_thread(lambda: tenant.events_after(revision))
    finally:
        await socket.close()


async def _prune_events(database_url: str, cid: str, below: int) -> None:
    dsn = asyncpg_dsn(database_url)

    async def prune() -> None:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(
                "DELETE FROM events WHERE coordinator_id = $1 AND revision < $2", cid, below
            )
        finally:
            await connection.close()

    await asyncio.to_thread(run_in_thread, lambda: asyncio.run(prune()))


async def test_a_client_that_disconnects_costs_nothing_after(tenant: Tenant) -> None:
    gateway = tenant.system.gateway_urls[0]
    sockets = [await Socket.open(gateway, tenant.cid, tenant.key) for _ in range(5)]
    for socket in sockets:
        await socket.until(lambda s: "snapshot" in s.kinds())
    assert await in_thread(lambda: _subscribers(gateway)) >= 5
    for socket in sockets:
        await socket.close()
    deadline = time.monotonic() + WAIT_SECONDS
    while await in_thread(lambda: _subscribers(gateway)) != 0:
        assert time.monotonic() < deadline, "the gateway kept feeds of gone clients"
        await asyncio.sleep(0.05)


def _subscribers(gateway: str) -> float:
    text = httpx.get(f"{gateway}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith("workcoord_gateway_feed_subscribers "):
            return float(line.split()[1])
    raise AssertionError("no feed subscribers gauge")


async def test_an_oversized_client_message_closes_the_socket_with_1009(tenant: Tenant) -> None:
    """Clients have nothing to send; a huge message is refused (message too big), and the
    feed behind it is released."""
    gateway = tenant.system.gateway_urls[0]
    socket = await Socket.open(gateway, tenant.cid, tenant.key)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        await socket.connection.send("x" * (256 * 1024))
        assert await socket.until_closed() == 1009
    finally:
        await socket.close()
    deadline = time.monotonic() + WAIT_SECONDS
    while await in_thread(lambda: _subscribers(gateway)) != 0:
        assert time.monotonic() < deadline, "the gateway kept the feed of a refused client"
        await asyncio.sleep(0.05)
