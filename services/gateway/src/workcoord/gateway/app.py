"""The gateway's ASGI application: REST transcoding, the WebSocket feed, health and OpenAPI.

Everything answers ``application/json``; every error is a ``google.rpc.Status``. The gateway
holds no domain logic: it maps HTTP to the RPC named by the route, forwards the caller's
credential, and maps the answer back. What every request goes through first (tracing, request
id, access log, metrics, compression, the body limit, credential forwarding) is the pipeline of
:mod:`workcoord.gateway.pipeline`, assembled here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import prometheus_client
from google.protobuf import message as _message
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, HTTPConnection, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from workcoord.gateway import metrics
from workcoord.gateway.cells import connect_upstreams
from workcoord.gateway.errors import (
    error_response,
    json_response,
    make_status,
    status_from_rpc_error,
    status_response,
)
from workcoord.gateway.feed import frame_json
from workcoord.gateway.mcp import MCP_PATH, McpEndpoint
from workcoord.gateway.metrics import UNMATCHED, label_route
from workcoord.gateway.oidc import OIDC_CALLBACK_PATH, OIDC_LOGIN_PATH, OidcLogin
from workcoord.gateway.openapi import openapi_document
from workcoord.gateway.pipeline import middleware
from workcoord.gateway.resource_metadata import ProtectedResource
from workcoord.gateway.routes import Route, RouteTable, load_routes
from workcoord.gateway.session import LOGIN_PATH, login
from workcoord.gateway.transcode import build_request, parse_json_body, response_to_json
from workcoord.gateway.upstream import Upstreams, forwarded
from workcoord.gateway.web import WebPages
from workcoord.kit.descriptors import call_deadline_seconds
from workcoord.kit.errors import Code, TooLarge, Unauthenticated, WorkcoordError
from workcoord.kit.settings import GatewaySettings
from workcoord.kit.status import error_from_status
from workcoord.kit.wire import CallCredentials

__all__ = ["OPENAPI_PATH", "build_app"]

_log = logging.getLogger(__name__)

OPENAPI_PATH = "/v1/openapi.json"
_WS_REASON_LIMIT = 120
# The paths without variables answered besides the routes (spans are named after them).
_FIXED_PATHS = ("/", OPENAPI_PATH, LOGIN_PATH, OIDC_LOGIN_PATH, OIDC_CALLBACK_PATH, MCP_PATH)


def build_app(settings: GatewaySettings, channels: Upstreams | None = None) -> Starlette:
    """The Starlette app. ``channels`` injects upstream channels (tests); without it the app
    opens one channel per upstream at startup and closes them at shutdown."""
    gateway = _Gateway(settings, load_routes(), channels)
    mcp = McpEndpoint(
        gateway.table,
        lambda: gateway.upstreams,
        request_timeout_seconds=settings.request_timeout_seconds,
        resource=ProtectedResource.from_settings(settings, MCP_PATH),
    )
    app = Starlette(
        lifespan=mcp.lifespan_around(gateway.lifespan),
        middleware=middleware(settings, _FIXED_PATHS),
    )
    # No Starlette routes: the gateway answers every path itself (a path pattern would not
    # even match a decoded newline and answer a plain-text 404). In front of the API: /mcp (the
    # MCP SDK's), then the web pages and their assets.
    app.router.default = mcp.in_front_of(WebPages(gateway, gateway))
    return app


class _Gateway:
    """One ASGI callable for every HTTP and WebSocket request, so that unknown paths and wrong
    methods answer Status JSON too (a router would answer them in plain text)."""

    def __init__(
        self, settings: GatewaySettings, table: RouteTable, upstreams: Upstreams | None
    ) -> None:
        self.settings = settings
        self.table = table
        self.upstreams = upstreams
        self._fixed = {
            "/healthz": self._healthz,
            "/readyz": self._readyz,
            "/metrics": self._metrics,
            OPENAPI_PATH: self._openapi,
            LOGIN_PATH: self._login,
            OIDC_LOGIN_PATH: self._oidc_login,
            OIDC_CALLBACK_PATH: self._oidc_callback,
        }
        self.oidc = OidcLogin.from_settings(settings)
        # Open feeds by credential (a digest of it: no secret kept as a key).
        self._feeds: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        opened: Upstreams | None = None
        if self.upstreams is None:
            opened = self.upstreams = connect_upstreams(self.settings)
        try:
            yield
        finally:
            if opened is not None:
                self.upstreams = None
                await opened.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(WebSocket(scope, receive, send))
            return
        request = Request(scope, receive)
        label = UNMATCHED
        try:
            label, response = await self._http(request)
        except Exception:
            _log.exception("unhandled error answering %s", label)
            response = status_response(make_status(Code.INTERNAL, "internal error"))
        label_route(scope, label)
        await response(scope, receive, send)

    # --- HTTP ----------------------------------------------------------------------------

    async def _http(self, request: Request) -> tuple[str, Response]:
        path = _raw_path(request)
        fixed = self._fixed.get(path)
        if fixed is not None:
            if request.method not in ("GET", "HEAD"):
                return path, _method_not_allowed(request.method, ["GET"])
            return path, await fixed(request)
        method = "GET" if request.method == "HEAD" else request.method
        found, allowed = self.table.resolve(method, path)
        if found is None:
            if allowed:
                return UNMATCHED, _method_not_allowed(request.method, allowed)
            shown = path if len(path) <= 200 else path[:200] + "…"
            status = make_status(Code.NOT_FOUND, f"no route for {request.method} {shown}")
            return UNMATCHED, status_response(status)
        route = found.route
        if route.streaming:
            status = make_status(
                Code.FAILED_PRECONDITION,
                "this is a WebSocket: connect with an HTTP upgrade",
                reason="WEBSOCKET_REQUIRED",
            )
            return route.path, status_response(
                status, http_status=426, headers={"Upgrade": "websocket"}
            )
        return route.path, await self._unary(request, route, found.path_values)

    async def _unary(self, request: Request, route: Route, path_values: dict[str, str]) -> Response:
        try:
            # The credential first: a malformed one is a 401 whatever else the request holds.
            metadata = forwarded(request.scope).metadata()
            body: Any = None
            if route.body:
                # At most WORKCOORD_MAX_BODY_BYTES: the pipeline's BodyLimit raises TooLarge.
                body = parse_json_body(await request.body())
            message = build_request(route, path_values, request.query_params.multi_items(), body)
        except TooLarge as err:
            return error_response(err, http_status=413)
        except WorkcoordError as err:
            return error_response(err)
        except ClientDisconnect:
            return Response(status_code=499)
        upstreams = self.upstreams
        if upstreams is None:
            return status_response(
                make_status(Code.UNAVAILABLE, "the gateway is not connected to its upstreams")
            )
        try:
            reply = await upstreams.call(
                route,
                message,
                metadata=metadata,
                deadline_seconds=self._timeout(message),
            )
        except grpc.RpcError as exc:
            status = status_from_rpc_error(exc)
            if status.code in (Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.INTERNAL):
                _log.warning("%s answered %s", route.full_method, Code(status.code).name)
            return status_response(status)
        except grpc.aio.UsageError:
            # The channel was closed under us (shutdown in progress).
            return status_response(make_status(Code.UNAVAILABLE, "the gateway is shutting down"))
        return json_response(200, response_to_json(route, reply))

    def _timeout(self, message: _message.Message) -> float:
        return call_deadline_seconds(message, self.settings.request_timeout_seconds)

    # --- fixed endpoints -----------------------------------------------------------------

    async def _login(self, request: Request) -> Response:
        return await login(request, self.upstreams)

    async def _oidc_login(self, request: Request) -> Response:
        if self.oidc is None:
            return _oidc_off()
        return await self.oidc.start(request)

    async def _oidc_callback(self, request: Request) -> Response:
        if self.oidc is None:
            return _oidc_off()
        return await self.oidc.callback(request, self.upstreams)

    async def _healthz(self, request: Request) -> Response:
        return json_response(200, {"status": "ok"})

    async def _readyz(self, request: Request) -> Response:
        upstreams = self.upstreams
        if upstreams is not None and await upstreams.coordinator_serving():
            return json_response(200, {"status": "ready"})
        return status_response(make_status(Code.UNAVAILABLE, "the coordinator is not serving"))

    async def _metrics(self, request: Request) -> Response:
        return Response(
            prometheus_client.generate_latest(),
            media_type=prometheus_client.CONTENT_TYPE_LATEST,
        )

    async def _openapi(self, request: Request) -> Response:
        return json_response(200, openapi_document())

    # --- WebSocket feed ------------------------------------------------------------------

    async def _websocket(self, websocket: WebSocket) -> None:
        found, _ = self.table.resolve("GET", _raw_path(websocket))
        if found is None or not found.route.streaming or self.upstreams is None:
            # Refused before the handshake: the server answers 403.
            await websocket.close(code=1008)
            return
        try:
            credentials = forwarded(websocket.scope).credentials()
        except Unauthenticated as err:
            # Refused before the handshake, as REST refuses it (401), never read as a cookie feed.
            await _deny(websocket, error_response(err))
            return
        if not self._origin_allowed(websocket, credentials):
            # Refused before the handshake (403): another site's page riding the session cookie.
            await websocket.close(code=1008)
            return
        route = found.route
        try:
            message = build_request(
                route, found.path_values, websocket.query_params.multi_items(), None
            )
        except WorkcoordError as err:
            await websocket.accept()
            await _close(websocket, 1008, f"{err.reason}: {err.message}")
            return
        holder = _holder(credentials)
        limit = self.settings.gateway_max_feeds_per_credential
        if self._feeds.get(holder, 0) >= limit:
            await websocket.accept()
            reason = f"RESOURCE_EXHAUSTED: at most {limit} open feeds per credential"
            await _close(websocket, _close_code(Code.RESOURCE_EXHAUSTED), reason)
            return
        self._feeds[holder] = self._feeds.get(holder, 0) + 1
        try:
            await self._feed(websocket, route, message)
        finally:
            left = self._feeds[holder] - 1
            if left:
                self._feeds[holder] = left
            else:
                del self._feeds[holder]

    def _origin_allowed(self, websocket: WebSocket, credentials: CallCredentials) -> bool:
        """A feed authenticated by the session cookie must come from a page of this gateway:
        its ``Origin`` one of ``WORKCOORD_PUBLIC_ORIGINS``, or (unset) the request's own scheme
        and Host. A bearer credential is never sent by a browser on its own, so those feeds,
        and feeds with no cookie at all, are not checked. ``credentials`` are what the
        coordinator will authenticate: a feed it reads as a session's is checked."""
        if credentials.bearer is not None or credentials.session is None:
            return True
        origin = websocket.headers.get("origin", "").strip().lower().rstrip("/")
        if not origin:
            return False
        allowed = self.settings.public_origins
        if not allowed:
            scheme = "https" if websocket.url.scheme in ("wss", "https") else "http"
            host = websocket.headers.get("host", "").strip().lower()
            allowed = [f"{scheme}://{host}"] if host else []
        if origin in allowed:
            return True
        _log.warning("cookie-authenticated feed refused: origin %r is not this gateway's", origin)
        return False

    async def _feed(self, websocket: WebSocket, route: Route, message: _message.Message) -> None:
        upstreams = self.upstreams
        if upstreams is None:
            await websocket.close(code=1013)
            return
        try:
            # The feed's cell (cells.py; one cell: these upstreams).
            target = await upstreams.route_to(route, message)
        except grpc.RpcError:
            await websocket.accept()
            reason = "UNAVAILABLE: the cell directory is unavailable"
            await _close(websocket, _close_code(Code.UNAVAILABLE), reason)
            return
        await websocket.accept()
        metrics.FEED_SUBSCRIBERS.inc()
        call = target.stream(route, message, metadata=forwarded(websocket.scope).metadata())
        # The client sends nothing we use; reading is how its disconnect is noticed.
        watcher = asyncio.create_task(_until_disconnect(websocket, call))
        try:
            async for frame in call:
                await websocket.send_text(frame_json(frame))
            await _close(websocket, 1000, "")
        except grpc.RpcError as exc:
            if not watcher.done():
                status = status_from_rpc_error(exc)
                code = _close_code(Code(status.code))
                # The ErrorInfo reason, as every other answer names it: UNAVAILABLE alone
                # would not tell COORDINATION_DISABLED from STORAGE_UNAVAILABLE.
                reason = error_from_status(status).reason
                await _close(websocket, code, f"{reason}: {status.message}")
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass  # the client went away mid-send
        except asyncio.CancelledError:
            # The watcher cancels the call when the client leaves; anything else is ours.
            task = asyncio.current_task()
            if not watcher.done() or (task is not None and task.cancelling()):
                raise
        finally:
            call.cancel()
            watcher.cancel()
            metrics.FEED_SUBSCRIBERS.dec()


def _raw_path(connection: HTTPConnection) -> str:
    raw = connection.scope.get("raw_path")
    if isinstance(raw, bytes):
        # Some servers include the query string in raw_path; the path is what precedes it.
        return raw.split(b"?", 1)[0].decode("latin-1")
    return str(connection.scope["path"])


def _holder(credentials: CallCredentials) -> str:
    """Whom a feed counts against, as a digest: the credential the coordinator authenticates
    (its bearer secret as parsed, so no spelling of ``Bearer`` counts apart, else its session),
    else the anonymous (whose feeds the coordinator refuses anyway)."""
    if credentials.bearer is not None:
        return "bearer:" + hashlib.sha256(credentials.bearer.encode()).hexdigest()
    if credentials.session is not None:
        return "session:" + hashlib.sha256(credentials.session.encode()).hexdigest()
    return "anonymous"


async def _deny(websocket: WebSocket, response: Response) -> None:
    """Answer a WebSocket handshake with ``response`` (uvicorn supports the ASGI denial
    response); a server without it answers 403."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=1008)


def _oidc_off() -> Response:
    return status_response(
        make_status(Code.UNIMPLEMENTED, "OpenID Connect login is not configured on this gateway")
    )


def _method_not_allowed(method: str, allowed: list[str]) -> Response:
    status = make_status(
        Code.UNIMPLEMENTED, f"method {method} is not allowed here", reason="METHOD_NOT_ALLOWED"
    )
    return status_response(status, http_status=405, headers={"Allow": ", ".join(allowed)})


def _close_code(code: Code) -> int:
    if code in (
        Code.UNAUTHENTICATED,
        Code.PERMISSION_DENIED,
        Code.NOT_FOUND,
        Code.INVALID_ARGUMENT,
        Code.FAILED_PRECONDITION,
    ):
        return 1008  # policy violation: authority gone, or a request that cannot be served
    if code in (Code.UNAVAILABLE, Code.RESOURCE_EXHAUSTED, Code.DEADLINE_EXCEEDED):
        return 1013  # try again later
    return 1011


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    # Close reasons are limited to 123 bytes of UTF-8.
    shown = reason.encode()[:_WS_REASON_LIMIT].decode(errors="ignore")
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.close(code=code, reason=shown)


async def _until_disconnect(websocket: WebSocket, call: Any) -> None:
    with contextlib.suppress(Exception):
        while True:
            event = await websocket.receive()
            if event["type"] == "websocket.disconnect":
                break
    call.cancel()
