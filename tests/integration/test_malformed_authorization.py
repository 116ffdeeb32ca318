"""A present but malformed ``Authorization`` header is refused through the real gateway and
coordinator (401), on REST, on ``/mcp`` and on the feed's WebSocket, even beside a valid
session cookie: it never falls back to the cookie. Regressions of a non-ASCII or over-8 KiB
header, dropped on the way to gRPC, letting the cookie authenticate (and skip a feed's Origin
check)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.integration.tenancy.world import login
from tests.support.harness import Stack, start_gateway_for
from workcoord.gateway.server import RunningGateway

MALFORMED: list[bytes] = [
    "Bearer wcadm_\u00e9".encode(),  # non-ASCII
    b"Bearer " + b"a" * (9 * 1024),  # over what gRPC metadata carries
    b"Bearer " + b"a" * 5000,  # over the longest secret accepted
    b"Basic d2NhZG1feA==",
    b"Bearer",
]
_IDS = ["non-ASCII", "over-8KiB", "oversized", "basic", "no-secret"]


@pytest.fixture
async def gateway(stack: Stack) -> AsyncIterator[RunningGateway]:
    running = await start_gateway_for(stack.address)
    yield running
    await running.stop()


@pytest.fixture
async def session_cookie(stack: Stack) -> str:
    """A valid browser session's cookie (the bootstrap admin's)."""
    session = await login(stack)
    return f"workcoord_session={session.session_secret}"


@pytest.mark.parametrize("authorization", MALFORMED, ids=_IDS)
async def test_rest_and_mcp_refuse_a_malformed_authorization_beside_a_valid_cookie(
    stack: Stack, gateway: RunningGateway, session_cookie: str, authorization: bytes
) -> None:
    async with httpx.AsyncClient(base_url=f"http://{gateway.address}", timeout=30) as http:
        alone = await http.get("/v1/me", headers={"Cookie": session_cookie})
        assert alone.status_code == 200, alone.text  # the cookie alone authenticates
        headers = {b"Cookie": session_cookie.encode(), b"Authorization": authorization}
        me = await http.get("/v1/me", headers=headers)
        assert me.status_code == 401, me.text
        assert me.json()["code"] == 16
        mcp = await http.post(
            "/mcp",
            headers={**headers, b"Accept": b"application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        assert mcp.status_code == 401, mcp.text


# A line over 8 KiB never reaches the application on a WebSocket handshake (431, guard.py).
_FEED_CASES = [(v, i) for v, i in zip(MALFORMED, _IDS, strict=True) if len(v) < 8000]


@pytest.mark.parametrize(
    "authorization",
    [value.decode("latin-1") for value, _ in _FEED_CASES],
    ids=[name for _, name in _FEED_CASES],
)
async def test_a_feed_refuses_a_malformed_authorization_beside_a_valid_cookie(
    stack: Stack, gateway: RunningGateway, session_cookie: str, authorization: str
) -> None:
    url = f"ws://{gateway.address}/v1/work-coordinators/{stack.cid}/ws"
    own = {"Cookie": session_cookie, "Origin": f"http://{gateway.address}"}
    async with connect(url, additional_headers=own) as feed:
        assert '"hello"' in str(await feed.recv())  # the cookie alone opens the feed
    for origin in (own["Origin"], "https://evil.example"):
        headers = {**own, "Origin": origin, "Authorization": authorization}
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers=headers):
                pass
        assert refused.value.response.status_code == 401
