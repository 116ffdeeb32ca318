"""A feed authenticated by the session cookie must come from a page of the gateway itself
(cross-site WebSocket hijacking); bearer-token feeds are not subject to it. The origin follows
X-Forwarded-Proto only from a trusted proxy."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from workcoord.gateway.server import RunningGateway, start_gateway

from .conftest import Upstream, gateway_settings

_COOKIE = {"Cookie": "workcoord_session=wcses_abc"}


@contextlib.asynccontextmanager
async def _gateway(upstream: Upstream, **settings: Any) -> AsyncIterator[RunningGateway]:
    running = await start_gateway(gateway_settings(upstream.address).model_copy(update=settings))
    try:
        yield running
    finally:
        await running.stop()


async def _first_frame(address: str, headers: dict[str, str]) -> str:
    url = f"ws://{address}/v1/work-coordinators/wc-1/ws?since=38"
    async with connect(url, additional_headers=headers) as socket:
        return str(json.loads(await socket.recv())["type"])


async def _refused(address: str, headers: dict[str, str]) -> int:
    with pytest.raises(InvalidStatus) as refused:
        await _first_frame(address, headers)
    return refused.value.response.status_code


async def test_a_cookie_feed_must_come_from_the_gateways_own_origin(upstream: Upstream) -> None:
    async with _gateway(upstream) as running:
        own = {**_COOKIE, "Origin": f"http://{running.address}"}
        assert await _first_frame(running.address, own) == "hello"
        evil = {**_COOKIE, "Origin": "https://evil.example"}
        assert await _refused(running.address, evil) == 403
        assert await _refused(running.address, _COOKIE) == 403  # no Origin at all
        # Bearer credentials are not sent by a browser on its own: not subject to the check.
        bearer = {"Authorization": "Bearer k", "Origin": "https://evil.example"}
        assert await _first_frame(running.address, bearer) == "hello"
        assert await _first_frame(running.address, {"Origin": "https://evil.example"}) == "hello"


@pytest.mark.parametrize(
    "authorization",
    ["Basic k", "Bearer", "Bearer " + "k" * 5000, "Bearer k\u00e9", "Bearer k k"],
    ids=["basic", "no-secret", "oversized", "non-ASCII", "two-words"],
)
async def test_a_malformed_authorization_is_401_not_a_cookie_feed(
    upstream: Upstream, authorization: str
) -> None:
    # Regression: a present but malformed Authorization header skipped the Origin check, then
    # was dropped on the way upstream, so the session cookie opened another site's feed.
    async with _gateway(upstream) as running:
        for origin in ("https://evil.example", f"http://{running.address}"):
            headers = {**_COOKIE, "Origin": origin, "Authorization": authorization}
            assert await _refused(running.address, headers) == 401


async def test_configured_public_origins_replace_the_host(upstream: Upstream) -> None:
    public = "https://workcoord.example.com"
    async with _gateway(upstream, public_origins=[public]) as running:
        assert await _first_frame(running.address, {**_COOKIE, "Origin": public}) == "hello"
        own = {**_COOKIE, "Origin": f"http://{running.address}"}
        assert await _refused(running.address, own) == 403


async def test_the_origin_scheme_follows_only_a_trusted_proxy(upstream: Upstream) -> None:
    for trusted, accepted in ((["10.0.0.0/8"], False), (["127.0.0.1"], True)):
        async with _gateway(upstream, trusted_proxies=trusted) as running:
            headers = {
                **_COOKIE,
                "Origin": f"https://{running.address}",
                "X-Forwarded-Proto": "https",
            }
            if accepted:
                assert await _first_frame(running.address, headers) == "hello"
            else:
                assert await _refused(running.address, headers) == 403


async def test_a_handshake_line_the_websocket_parser_refuses_is_431_not_a_hang(
    upstream: Upstream,
) -> None:
    # The WebSocket parser reads lines of at most 8 KiB and dropped a longer one without an
    # answer: the client waited for its own timeout while the gateway held the connection.
    async with _gateway(upstream) as running:
        headers = {**_COOKIE, "Authorization": "Bearer " + "k" * 9000}
        assert await _refused(running.address, headers) == 431
