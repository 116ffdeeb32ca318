"""The access log: one INFO line per HTTP request or WebSocket session, when it ends.

The line names the method, the path without its query string, the status (a WebSocket's close
code) and the duration; its structured fields add the request id. Probes and scrapes
(:data:`QUIET_PATHS`) are not logged: they come every few seconds.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["QUIET_PATHS", "AccessLog"]

_access = logging.getLogger("workcoord.access")

QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
"""Probes and scrapes every few seconds: not worth a line (nor a span) each."""


class AccessLog:
    """ASGI middleware: one INFO line per HTTP request or WebSocket session, when it ends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in QUIET_PATHS:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: dict[str, Any] = {"code": 101 if scope["type"] == "websocket" else 500}

        async def noting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            elif message["type"] == "websocket.close":
                status["code"] = message.get("code", 1000)
            await send(message)

        try:
            await self.app(scope, receive, noting_send)
        finally:
            elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
            method = scope.get("method", "WS")
            _access.info(
                "http %s %s %s %.1fms",
                method,
                scope.get("path", ""),
                status["code"],
                elapsed_ms,
                extra={
                    "http_method": method,
                    "http_path": scope.get("path", ""),
                    "http_status": status["code"],
                    "duration_ms": elapsed_ms,
                    "request_id": Headers(scope=scope).get("x-request-id", ""),
                },
            )
