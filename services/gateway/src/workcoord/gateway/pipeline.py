"""The gateway's pipeline: every cross-cutting concern of an HTTP request or WebSocket, as one
list of ASGI middleware assembled here (:func:`middleware`), outermost first:

1. **tracing** (only with tracing on): OpenTelemetry's ASGI middleware makes the request a
   server span named by its route template (``span_names.py``), continuing an incoming
   ``traceparent``; the gRPC client interceptors carry its context upstream.
2. **request id** (:class:`RequestId`): the client's ``x-request-id``, or a fresh one, in the
   request's headers and echoed on the answer.
3. **access log** (``access_log.py``): one line per request or feed, with the trace and request
   ids.
4. **metrics** (``metrics.py``): count and duration by the route template that answered.
5. **compression** (``compression.py``): gzip for whole text answers the client accepts it for;
   never a stream, an event stream or a WebSocket.
6. **size limit** (:class:`BodyLimit`): a request body of at most ``WORKCOORD_MAX_BODY_BYTES``.
7. **credential forwarding** (``upstream.py``): what the request forwards upstream (its
   credential, request id and trace context), read once.

Inside the pipeline the endpoints answer: ``/mcp`` (``mcp.py``), the web pages (``web/``), then
the REST routes, the WebSocket feed and the fixed endpoints (``app.py``). Before any of it,
uvicorn's protocol enforces the connection limits (``guard.py``: header and body deadlines, the
header size limit, the connection cap).
"""

from __future__ import annotations

import uuid

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workcoord.gateway.access_log import QUIET_PATHS, AccessLog
from workcoord.gateway.compression import GzipText
from workcoord.gateway.metrics import RequestMetrics
from workcoord.gateway.routes import load_routes
from workcoord.gateway.span_names import span_details
from workcoord.gateway.upstream import CallForwarding
from workcoord.kit.errors import TooLarge
from workcoord.kit.settings import GatewaySettings
from workcoord.kit.telemetry import configure_tracing

__all__ = ["REQUEST_ID_HEADER", "BodyLimit", "RequestId", "middleware"]

REQUEST_ID_HEADER = "x-request-id"
_MAX_REQUEST_ID = 200


def middleware(settings: GatewaySettings, fixed_paths: tuple[str, ...]) -> list[Middleware]:
    """The pipeline, outermost first (see the module docstring). ``fixed_paths`` are the
    paths without variables the gateway answers besides its routes (span names use them)."""
    stages: list[Middleware] = []
    tracing = configure_tracing("workcoord-gateway", settings.otel_enabled)
    if tracing.enabled:
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

        stages.append(
            Middleware(
                OpenTelemetryMiddleware,
                excluded_urls=",".join(sorted(QUIET_PATHS)),
                tracer_provider=tracing.provider,
                # Spans per ASGI send/receive message would bury the request's own.
                exclude_spans=["receive", "send"],
                # Named by route template, not by the raw path with its ids.
                default_span_details=span_details(load_routes(), fixed_paths),
            )
        )
    stages += [
        Middleware(RequestId),
        Middleware(AccessLog),
        Middleware(RequestMetrics),
        Middleware(GzipText),
        Middleware(BodyLimit, max_bytes=settings.max_body_bytes),
        Middleware(CallForwarding),
    ]
    return stages


class RequestId:
    """ASGI middleware: every HTTP request and WebSocket handshake carries an
    ``x-request-id``: the client's when it is printable ASCII of at most 200 characters (it
    travels as gRPC metadata), else a fresh one in its place. Everything inside reads it from
    the request's headers; HTTP answers echo it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        sent = Headers(scope=scope).get(REQUEST_ID_HEADER)
        request_id = sent if sent is not None and _usable(sent) else uuid.uuid4().hex
        encoded = request_id.encode()
        if sent != request_id:
            # In place: the stages inside share this scope (a route label set by an endpoint
            # must reach the metrics).
            scope["headers"] = [
                *(item for item in scope["headers"] if item[0] != REQUEST_ID_HEADER.encode()),
                (REQUEST_ID_HEADER.encode(), encoded),
            ]
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def echoing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    item
                    for item in message.get("headers", [])
                    if item[0].lower() != REQUEST_ID_HEADER.encode()
                ]
                message = {**message, "headers": [*headers, (REQUEST_ID_HEADER.encode(), encoded)]}
            await send(message)

        await self.app(scope, receive, echoing_send)


def _usable(value: str) -> bool:
    return 0 < len(value) <= _MAX_REQUEST_ID and all(" " <= ch <= "~" for ch in value)


class BodyLimit:
    """ASGI middleware: a request body holds at most ``max_bytes``.

    Enforced as the body is read: ``receive`` raises :class:`~workcoord.kit.errors.TooLarge`
    once the declared ``Content-Length`` or the bytes received pass the limit, and each
    endpoint answers 413 in its own form (REST a ``google.rpc.Status``, ``/mcp`` a JSON-RPC
    error) after what it checks first: a malformed credential is still a 401, and an endpoint
    that reads no body never trips it.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        declared = Headers(scope=scope).get("content-length", "")
        over = declared.isdigit() and int(declared) > limit
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            if over:
                raise TooLarge(f"request body is larger than {limit} bytes")
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise TooLarge(f"request body is larger than {limit} bytes")
            return message

        await self.app(scope, limited_receive, send)
