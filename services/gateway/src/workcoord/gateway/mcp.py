"""MCP over streamable HTTP at ``/mcp``: the tools of :mod:`workcoord.kit.mcp_tools`.

Stateless by design: the SDK's session manager runs with ``stateless=True`` and JSON responses,
so no ``Mcp-Session-Id`` is issued and every POST carries everything it needs (the 2026-07-28
protocol is per-request anyway). Any gateway replica serves any request of a client's session;
nothing lives in this process between requests.

Every HTTP request is authenticated before the MCP layer sees it: without a bearer credential,
or with one the coordinator does not know (checked with ``AdminService.GetCurrentPrincipal``),
it answers 401 with a JSON-RPC error whose ``data`` is the ``google.rpc.Status`` JSON. Each tool
call then forwards that request's ``Authorization`` header (never a browser session cookie) to
the coordinator, which authorizes the call itself, exactly as for REST.

The bearer credential is a work key, a user's API token, or (OpenID Connect configured) an
access token a user's MCP client obtained from the issuer: the coordinator verifies that JWT
and maps it to the provisioned user, whose current roles the call then carries. With OIDC
configured this endpoint also answers the OAuth Protected Resource Metadata paths
(:mod:`workcoord.gateway.resource_metadata`), and its 401s say where that document is
(``WWW-Authenticate: Bearer resource_metadata="…"``), which is how an OAuth-only MCP client
discovers where to sign its user in.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import grpc
import grpc.aio
from google.protobuf import message as _message
from google.rpc import status_pb2
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from workcoord.api.v1 import admin_pb2
from workcoord.gateway.errors import (
    RETRY_AFTER_SECONDS,
    json_response,
    make_status,
    status_from_rpc_error,
)
from workcoord.gateway.metrics import label_route
from workcoord.gateway.resource_metadata import ProtectedResource
from workcoord.gateway.routes import Route, RouteTable
from workcoord.gateway.upstream import Upstreams, forwarded
from workcoord.kit.descriptors import API_PACKAGE, call_deadline_seconds
from workcoord.kit.errors import Code, TooLarge, Unauthenticated, generic_error, http_status_for
from workcoord.kit.mcp_server import JSONRPC_SERVER_ERROR, build_mcp_server
from workcoord.kit.mcp_tools import McpTool
from workcoord.kit.status import error_from_status, status_to_json, to_rpc_status
from workcoord.kit.wire import AUTHORIZATION_KEY

__all__ = ["MCP_PATH", "McpEndpoint"]

MCP_PATH = "/mcp"
Lifespan = Callable[[Any], AbstractAsyncContextManager[None]]
_WHO_AM_I = f"{API_PACKAGE}.AdminService.GetCurrentPrincipal"


class McpEndpoint:
    """The ``/mcp`` ASGI endpoint. ``upstreams`` returns the gateway's channels (None while it
    starts or stops); :meth:`running` must wrap the app's lifetime."""

    def __init__(
        self,
        table: RouteTable,
        upstreams: Callable[[], Upstreams | None],
        *,
        request_timeout_seconds: float,
        resource: ProtectedResource | None = None,
    ) -> None:
        self._upstreams = upstreams
        self._resource = resource
        self._timeout = request_timeout_seconds
        self._routes = {
            route.method.full_name: route for route in table.routes if route.binding_index == 0
        }
        self._who_am_i = self._routes[_WHO_AM_I]
        self._server = build_mcp_server(self._call)
        self._manager: StreamableHTTPSessionManager | None = None

    def in_front_of(self, app: ASGIApp) -> ASGIApp:
        """``app`` with :data:`MCP_PATH` (and, OIDC configured, its resource metadata paths)
        answered by this endpoint."""
        metadata_paths = self._resource.paths if self._resource is not None else frozenset()

        async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and (
                scope["path"] == MCP_PATH or scope["path"] in metadata_paths
            ):
                await self(scope, receive, send)
            else:
                await app(scope, receive, send)

        return dispatch

    def lifespan_around(self, lifespan: Lifespan) -> Lifespan:
        """``lifespan`` (which opens the upstreams) with the session manager running inside."""

        @contextlib.asynccontextmanager
        async def both(app: Any) -> AsyncIterator[None]:
            async with lifespan(app), self.running():
                yield

        return both

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the SDK's session manager (one per app lifetime, as the SDK requires).

        No DNS-rebinding (Host/Origin) check: only a bearer header authenticates here, never a
        cookie, so a page rebound to the gateway has no ambient credential to use.
        """
        manager = StreamableHTTPSessionManager(
            app=self._server,
            json_response=True,
            stateless=True,
            # The gateway's pipeline limits the body (BodyLimit: a JSON-RPC 413 from _serve);
            # the SDK's own check would answer first, in plain text.
            max_request_body_size=sys.maxsize,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope["path"])
        if self._resource is not None and path in self._resource.paths:
            label_route(scope, path)
            await self._resource.response(str(scope["method"]))(scope, receive, send)
            return
        label_route(scope, MCP_PATH)
        await self._serve(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        upstreams, manager = self._upstreams(), self._manager
        if upstreams is None or manager is None:
            status = make_status(Code.UNAVAILABLE, "the gateway is not connected to its upstreams")
            await self._refusal(status, 503)(scope, receive, send)
            return
        try:
            metadata = _metadata(scope)  # read by the one parse of Authorization
        except Unauthenticated as err:
            await self._refusal(to_rpc_status(err), 401)(scope, receive, send)
            return
        if not any(key == AUTHORIZATION_KEY for key, _ in metadata):
            status = make_status(
                Code.UNAUTHENTICATED,
                "MCP needs a work key or user token: send Authorization: Bearer <secret>",
            )
            await self._refusal(status, 401, credential_sent=False)(scope, receive, send)
            return
        try:
            await upstreams.call(
                self._who_am_i,
                admin_pb2.GetCurrentPrincipalRequest(),
                metadata=metadata,
                deadline_seconds=self._timeout,
            )
        except grpc.RpcError as exc:
            status = status_from_rpc_error(exc)
            await self._refusal(status, http_status_for(status.code))(scope, receive, send)
            return
        except grpc.aio.UsageError:
            status = make_status(Code.UNAVAILABLE, "the gateway is shutting down")
            await self._refusal(status, 503)(scope, receive, send)
            return
        if scope["method"] != "POST":
            # Stateless: no stream to open with GET, no session to end with DELETE (the spec's
            # answer for both is 405).
            status = make_status(
                Code.UNIMPLEMENTED,
                "this MCP endpoint is stateless: POST each JSON-RPC message",
                reason="METHOD_NOT_ALLOWED",
            )
            await self._refusal(status, 405, {"Allow": "POST"})(scope, receive, send)
            return
        try:
            await manager.handle_request(scope, receive, send)
        except TooLarge as err:
            # The pipeline's BodyLimit, raised while the SDK read the body (before any answer).
            await _refusal(to_rpc_status(err), 413)(scope, receive, send)

    def _refusal(
        self,
        status: status_pb2.Status,
        http_status: int,
        headers: dict[str, str] | None = None,
        *,
        credential_sent: bool = True,
    ) -> Response:
        """:func:`_refusal`, whose 401 points at the resource metadata when there is one."""
        if self._resource is None:
            return _refusal(status, http_status, headers)
        challenge = self._resource.challenge(invalid_token=credential_sent)
        return _refusal(status, http_status, headers, challenge=challenge)

    async def _call(
        self, tool: McpTool, request: _message.Message, ctx: ServerRequestContext[Any, Any]
    ) -> _message.Message:
        """One tool's RPC with the credential of the HTTP request that carried the call."""
        upstreams = self._upstreams()
        http_request = ctx.request
        if upstreams is None or http_request is None:
            raise generic_error(Code.UNAVAILABLE, "the gateway is not connected to its upstreams")
        route: Route = self._routes[tool.method.full_name]
        try:
            return await upstreams.call(
                route,
                request,
                metadata=_metadata(http_request.scope),
                deadline_seconds=call_deadline_seconds(request, self._timeout),
            )
        except grpc.RpcError as exc:
            raise error_from_status(status_from_rpc_error(exc)) from None
        except grpc.aio.UsageError:
            raise generic_error(Code.UNAVAILABLE, "the gateway is shutting down") from None


def _metadata(scope: Scope) -> tuple[tuple[str, str], ...]:
    # The bearer credential only: a browser session cookie never authenticates an MCP call.
    return forwarded(scope).metadata(session=False)


def _refusal(
    status: status_pb2.Status,
    http_status: int,
    headers: dict[str, str] | None = None,
    *,
    challenge: str = 'Bearer realm="workcoord"',
) -> Response:
    """An HTTP refusal MCP clients can read: a JSON-RPC error (no id: the body was not read)
    whose message names the reason and whose data is the ``google.rpc.Status`` JSON. A 401
    carries ``challenge`` as its ``WWW-Authenticate``."""
    body = status_to_json(status)
    reason = Code(status.code).name
    for detail in body.get("details", []):
        reason = str(detail.get("reason", reason))
    error = {
        "code": JSONRPC_SERVER_ERROR,
        "message": f"{reason}: {status.message}",
        "data": body,
    }
    if http_status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": challenge}
    if http_status == 503:
        headers = {**(headers or {}), "Retry-After": str(RETRY_AFTER_SECONDS)}
    return json_response(http_status, {"jsonrpc": "2.0", "id": None, "error": error}, headers)
