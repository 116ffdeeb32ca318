"""What an unauthenticated client may hold on a gateway: half-sent requests time out, connections
past the cap are refused at once (and logged a bounded number of times), one credential holds a
bounded number of feeds. Regressions of 20,000 half-sent requests holding every descriptor of a
gateway and 35 MB of log, and of 1,000 feeds from one key."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import AsyncIterator

import httpx
import pytest
import websockets
from websockets.asyncio.client import ClientConnection, connect

from workcoord.gateway.server import RunningGateway, start_gateway
from workcoord.kit.logging import configure_logging

from .conftest import HOLD_OPEN_SINCE, Upstream, gateway_settings

# Generous: the answers below arrive when the server decides, never raced against a clock.
_PATIENCE_SECONDS = 60.0
_HALF_SENT = b"POST /v1/work-coordinators/wc-1/leases HTTP/1.1\r\nHost: gateway\r\n"


@contextlib.asynccontextmanager
async def _gateway(upstream: Upstream, **limits: float) -> AsyncIterator[RunningGateway]:
    settings = gateway_settings(upstream.address).model_copy(update=limits)
    running = await start_gateway(settings)
    try:
        yield running
    finally:
        await running.stop()


async def _open(address: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = address.rsplit(":", 1)
    return await asyncio.open_connection(host, int(port))


async def _answer(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection."""
    async with asyncio.timeout(_PATIENCE_SECONDS):
        return await reader.read()


async def test_half_sent_headers_get_408_and_the_connection_closes(upstream: Upstream) -> None:
    async with _gateway(upstream, gateway_header_timeout_seconds=0.2) as running:
        reader, writer = await _open(running.address)
        writer.write(_HALF_SENT)  # and never the blank line
        await writer.drain()
        assert (await _answer(reader)).startswith(b"HTTP/1.1 408 ")
        writer.close()

        # A kept-alive connection's next request gets its own deadline.
        reader, writer = await _open(running.address)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n" + _HALF_SENT)
        answer = await _answer(reader)
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert b"HTTP/1.1 408 " in answer
        writer.close()


async def test_a_body_that_stops_coming_gets_408(upstream: Upstream) -> None:
    async with _gateway(upstream, gateway_body_timeout_seconds=0.2) as running:
        reader, writer = await _open(running.address)
        writer.write(_HALF_SENT + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        await writer.drain()
        assert (await _answer(reader)).startswith(b"HTTP/1.1 408 ")
        writer.close()


async def test_oversized_headers_get_431_but_a_large_body_in_one_write_does_not(
    upstream: Upstream,
) -> None:
    async with _gateway(upstream) as running:
        reader, writer = await _open(running.address)
        writer.write(_HALF_SENT + b"X-Filler: " + b"a" * (70 * 1024))
        assert (await _answer(reader)).startswith(b"HTTP/1.1 431 ")
        writer.close()

    async with _gateway(upstream, max_body_bytes=1024 * 1024) as running:
        # Headers and a large body sent at once: the bytes past the headers are the body's.
        reader, writer = await _open(running.address)
        body = b'{"workerId": "' + b"w" * (200 * 1024) + b'"}'
        head = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        head += "Connection: close\r\n\r\n"
        writer.write(_HALF_SENT + head.encode() + body)
        assert (await _answer(reader)).startswith(b"HTTP/1.1 200 ")
        writer.close()


def _head(size: int) -> bytes:
    """A complete ``GET /healthz`` head of about ``size`` bytes, in 1 KiB headers."""
    start = b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n"
    fillers = [b"X-Filler-%d: %s\r\n" % (i, b"a" * 1000) for i in range(size // 1024)]
    return start + b"".join(fillers) + b"\r\n"


@pytest.mark.parametrize("kilobytes", [70, 100])
async def test_a_whole_head_past_the_limit_in_one_write_gets_431(
    upstream: Upstream, kilobytes: int
) -> None:
    # Regression: the limit counted only reads that left the head incomplete, so a complete
    # 70-100 KB head in one read reached the application.
    async with _gateway(upstream) as running:
        reader, writer = await _open(running.address)
        writer.write(_head(kilobytes * 1024))
        assert (await _answer(reader)).startswith(b"HTTP/1.1 431 ")
        writer.close()


async def test_a_head_under_the_limit_is_served_however_it_arrives(upstream: Upstream) -> None:
    head = _head(60 * 1024)
    assert len(head) < 64 * 1024
    async with _gateway(upstream) as running:
        for pieces in ([head], [head[:30_000], head[30_000:]]):
            reader, writer = await _open(running.address)
            for piece in pieces:
                writer.write(piece)
                await writer.drain()
            assert (await _answer(reader)).startswith(b"HTTP/1.1 200 ")
            writer.close()


async def test_connections_past_the_cap_are_refused_at_once_and_logged_boundedly(
    upstream: Upstream,
) -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging("INFO", stream=stream, repeat_limit=5, repeat_window_seconds=3600)
    held: list[asyncio.StreamWriter] = []
    try:
        async with _gateway(
            upstream, gateway_max_connections=20, gateway_header_timeout_seconds=3600
        ) as running:
            for _ in range(20):
                _, writer = await _open(running.address)
                writer.write(_HALF_SENT)
                held.append(writer)
            # Each half-sent request holds its connection; the cap is reached once the server
            # has taken them all, after which every new connection is answered 503 and closed.
            refused = 0
            async with asyncio.timeout(_PATIENCE_SECONDS):
                while refused < 200:
                    reader, writer = await _open(running.address)
                    answer = await reader.read()  # sending nothing: only a refusal answers
                    writer.close()
                    if answer.startswith(b"HTTP/1.1 503 "):
                        refused += 1
            # Letting go of the held connections makes room again.
            for writer in held:
                writer.close()
            held.clear()
            async with httpx.AsyncClient(base_url=f"http://{running.address}") as http:
                async with asyncio.timeout(_PATIENCE_SECONDS):
                    while True:
                        with contextlib.suppress(httpx.HTTPError):
                            if (await http.get("/healthz")).status_code == 200:
                                break
                        await asyncio.sleep(0.05)
    finally:
        for writer in held:
            writer.close()
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    refusals = [line for line in stream.getvalue().splitlines() if "connection refused" in line]
    assert len(refusals) == 5, refusals


async def _feed(address: str, key: str, scheme: str = "Bearer ") -> ClientConnection:
    url = f"ws://{address}/v1/work-coordinators/wc-1/ws?since={HOLD_OPEN_SINCE}"
    socket = await connect(url, additional_headers={"Authorization": f"{scheme}{key}"})
    return socket


async def test_one_credential_holds_a_bounded_number_of_feeds(upstream: Upstream) -> None:
    async with _gateway(upstream, gateway_max_feeds_per_credential=3) as running:
        feeds = [await _feed(running.address, "k1") for _ in range(3)]
        for feed in feeds:
            assert json.loads(await feed.recv())["type"] == "hello"

        extra = await _feed(running.address, "k1")
        with pytest.raises(websockets.ConnectionClosedError) as closed:
            await extra.recv()
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1013
        assert closed.value.rcvd.reason == (
            "RESOURCE_EXHAUSTED: at most 3 open feeds per credential"
        )

        # Another credential is not affected; the first ones are still open.
        other = await _feed(running.address, "k2")
        assert json.loads(await other.recv())["type"] == "hello"
        for feed in feeds:
            assert json.loads(await feed.recv())["type"] == "ping"

        # Closing one makes room for one more.
        await feeds.pop().close()
        async with asyncio.timeout(_PATIENCE_SECONDS):
            while True:
                again = await _feed(running.address, "k1")
                try:
                    assert json.loads(await again.recv())["type"] == "hello"
                    feeds.append(again)
                    break
                except websockets.ConnectionClosedError:
                    await asyncio.sleep(0.05)  # the server has not seen the close yet
        for feed in [*feeds, other]:
            await feed.close()


async def test_spellings_of_one_bearer_count_as_one_credential(upstream: Upstream) -> None:
    # Regression: the cap counted the header's raw text, so "bearer k1" and "Bearer  k1" were
    # new credentials to it (555 feeds on one key under a cap of 256).
    async with _gateway(upstream, gateway_max_feeds_per_credential=2) as running:
        feeds = [await _feed(running.address, "k1", scheme) for scheme in ("Bearer ", "bearer ")]
        for feed in feeds:
            assert json.loads(await feed.recv())["type"] == "hello"
        for scheme in ("Bearer  ", "BEARER\t", "Bearer "):
            extra = await _feed(running.address, "k1 ", scheme)
            with pytest.raises(websockets.ConnectionClosedError) as closed:
                await extra.recv()
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.reason.startswith("RESOURCE_EXHAUSTED")
        for feed in feeds:
            await feed.close()
