"""An agent's side of MCP: the official SDK's ``Client`` over each transport, and small helpers
(shared by the integration and end-to-end tests).

``http`` connects through a round-robin "load balancer" (an httpx2 transport sending each HTTP
request to the next of two gateways), so a session only works if any replica can serve any
request of it. ``http-legacy`` does the same with the initialize handshake of the 2025 protocol
revisions (what most agents speak today); ``http`` lets the SDK pick (2026-07-28, per request).
``stdio`` starts ``workcoord mcp`` as an agent does today (initialize handshake);
``stdio-modern`` lets the SDK pick there too.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

HTTP = "http"
HTTP_LEGACY = "http-legacy"
STDIO = "stdio"
STDIO_MODERN = "stdio-modern"
TRANSPORTS = (HTTP, HTTP_LEGACY, STDIO, STDIO_MODERN)

_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next gateway in turn and counts what each one served."""

    def __init__(self, addresses: list[str]) -> None:
        self.addresses = addresses
        self.served: Counter[str] = Counter()
        self.session_ids: list[str] = []
        self._next = 0
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        address = self.addresses[self._next % len(self.addresses)]
        self._next += 1
        host, port = address.rsplit(":", 1)
        request.url = request.url.copy_with(host=host, port=int(port))
        response = await self._inner.handle_async_request(request)
        self.served[address] += 1
        session = response.headers.get("mcp-session-id")
        if session:
            self.session_ids.append(session)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class Agent:
    """A connected MCP client and what the test needs to know about its connection."""

    client: Client
    balancer: RoundRobin | None = None

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        return await self.client.call_tool(tool, arguments)

    async def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool``; it must succeed. Its structured result."""
        result = await self.call(tool, arguments)
        assert not result.is_error, result.structured_content
        body = result.structured_content
        assert isinstance(body, dict)
        # The text content carries the same JSON, for clients that show only text.
        assert json.loads(_text(result)) == body
        return body

    async def error(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool``; it must answer a tool error. The google.rpc.Status JSON."""
        result = await self.call(tool, arguments)
        assert result.is_error, result.structured_content
        body = result.structured_content
        assert isinstance(body, dict)
        assert json.loads(_text(result)) == body
        return body


def _text(result: CallToolResult) -> str:
    """The JSON text block: the only one, or the last after a stop's words (``STOP …``)."""
    content = result.content[-1]
    text = getattr(content, "text", None)
    assert isinstance(text, str)
    return text


def reason(status: dict[str, Any]) -> str:
    """The ErrorInfo reason of a Status JSON."""
    return str(_detail(status, _ERROR_INFO)["reason"])


def error_metadata(status: dict[str, Any]) -> dict[str, str]:
    """The ErrorInfo metadata of a Status JSON."""
    return dict(_detail(status, _ERROR_INFO).get("metadata", {}))


def violated(status: dict[str, Any]) -> set[str]:
    """The fields a Status JSON's BadRequest names."""
    for detail in status.get("details", []):
        if detail.get("@type") == _BAD_REQUEST:
            return {v["field"] for v in detail["fieldViolations"]}
    return set()


def _detail(status: dict[str, Any], kind: str) -> dict[str, Any]:
    for detail in status.get("details", []):
        if detail.get("@type") == kind:
            return dict(detail)
    raise AssertionError(f"no {kind} in {status}")


@asynccontextmanager
async def http_agent(
    gateways: list[str], token: str | None, *, legacy: bool = False
) -> AsyncIterator[Agent]:
    """An MCP client of ``http://<gateway>/mcp``, each request going to the next gateway."""
    balancer = RoundRobin(gateways)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    http = httpx2.AsyncClient(headers=headers, transport=balancer, timeout=60.0)
    transport = streamable_http_client(f"http://{gateways[0]}/mcp", http_client=http)
    async with http, Client(transport, mode="legacy" if legacy else "auto") as client:
        yield Agent(client, balancer)


@asynccontextmanager
async def stdio_agent(
    address: str, token: str, errlog: TextIO, *, legacy: bool = True
) -> AsyncIterator[Agent]:
    """``workcoord mcp`` as an agent starts it: credential and address in the environment."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "workcoord.cli.main", "mcp"],
        env={"WORKCOORD_ADDRESS": address, "WORKCOORD_TOKEN": token},
    )
    transport = stdio_client(server, errlog=errlog)
    async with Client(transport, mode="legacy" if legacy else "auto") as client:
        yield Agent(client)


@asynccontextmanager
async def agent(
    transport: str, gateways: list[str], address: str, token: str, log: Path
) -> AsyncIterator[Agent]:
    """An agent connected over ``transport`` with ``token``."""
    if transport in (STDIO, STDIO_MODERN):
        with log.open("a") as errlog:
            async with stdio_agent(address, token, errlog, legacy=transport == STDIO) as connected:
                yield connected
        return
    async with http_agent(gateways, token, legacy=transport == HTTP_LEGACY) as connected:
        yield connected
