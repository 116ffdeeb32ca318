"""The gRPC side of the gateway: one shared channel per upstream, calls by full method name.

RecoveryService goes to the recovery process, everything else to the coordinator. The caller's
credential and trace context travel as metadata; the coordinator decides what the caller may do.

:class:`CallForwarding`, a stage of the gateway's pipeline, reads what a request forwards once
(:class:`Forwarded`); the endpoints that call upstream take their metadata from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
from google.protobuf import message as _message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from workcoord.api.v1 import worker_pb2
from workcoord.gateway.heartbeats import BATCH_METHOD, HEARTBEAT_METHOD, Heartbeats
from workcoord.gateway.routes import Route
from workcoord.kit.errors import Unauthenticated
from workcoord.kit.grpc_server import TlsSettings, client_channel
from workcoord.kit.settings import GatewaySettings
from workcoord.kit.telemetry import current_tracing
from workcoord.kit.wire import (
    AUTHORIZATION_KEY,
    CSRF_KEY,
    SESSION_KEY,
    CallCredentials,
    bearer_metadata,
    bearer_secret,
)

__all__ = [
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "CallForwarding",
    "Forwarded",
    "Upstreams",
    "forwarded",
    "forwarded_metadata",
    "open_channel",
    "read_forwarded",
    "request_credentials",
]

SESSION_COOKIE = "workcoord_session"
CSRF_HEADER = "x-csrf-token"
"""The header a browser's UI copies its CSRF cookie into (double submit)."""

# HTTP header → gRPC metadata key, forwarded verbatim. The credentials (Authorization, the
# session cookie and its double-submit CSRF token) are forwarded as request_credentials reads
# them.
_FORWARDED_HEADERS = {
    "x-request-id": "x-request-id",
    "traceparent": "traceparent",
    "tracestate": "tracestate",
}
_MAX_METADATA_VALUE = 8192


def open_channel(address: str, settings: GatewaySettings) -> grpc.aio.Channel:
    """A client channel to ``address``, TLS/mTLS from the gateway's settings; with tracing on,
    each call is a child span of the HTTP request's and carries its context."""
    return client_channel(
        address,
        TlsSettings.from_settings(settings),
        interceptors=current_tracing().client_interceptors,
    )


def request_credentials(headers: Mapping[str, str], cookies: Mapping[str, str]) -> CallCredentials:
    """What an HTTP request presents, read as the coordinator reads the metadata forwarded
    from it: the secret of its ``Authorization`` header, its session cookie, its CSRF header.

    An ``Authorization`` header that is present but not a well-formed bearer credential
    (:func:`~workcoord.kit.wire.bearer_secret`: another scheme, non-ASCII, oversized) raises
    UNAUTHENTICATED: dropping it would let the session cookie authenticate the request
    instead. A cookie or CSRF value gRPC cannot carry is absent (no credential, so a 401 or a
    403 from the coordinator).
    """
    return read_forwarded(headers, cookies).credentials()


def forwarded_metadata(
    headers: Mapping[str, str], cookies: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """The gRPC metadata carried over from an HTTP request's headers and session cookie: its
    :func:`request_credentials` (the bearer secret re-sent as ``Bearer <secret>``; raises
    UNAUTHENTICATED like it), its request id and trace context.

    Other values that gRPC cannot carry (non-printable ASCII) are dropped rather than failing
    the call.
    """
    return read_forwarded(headers, cookies).metadata()


@dataclass(frozen=True)
class Forwarded:
    """What one request carries upstream, read once (:func:`read_forwarded`)."""

    credentials_read: CallCredentials | Unauthenticated
    """The credentials, or the refusal of a malformed ``Authorization`` header."""
    passed_on: tuple[tuple[str, str], ...]
    """The request id and trace context, as metadata."""

    def credentials(self) -> CallCredentials:
        """:func:`request_credentials` of the request (raises UNAUTHENTICATED like it)."""
        if isinstance(self.credentials_read, Unauthenticated):
            raise self.credentials_read
        return self.credentials_read

    def metadata(self, *, session: bool = True) -> tuple[tuple[str, str], ...]:
        """:func:`forwarded_metadata` of the request (raises UNAUTHENTICATED like it);
        ``session=False`` leaves the session cookie out (MCP: only a bearer credential
        authenticates there)."""
        credentials = self.credentials()
        metadata: list[tuple[str, str]] = []
        if credentials.bearer is not None:
            metadata.extend(bearer_metadata(credentials.bearer))
        metadata.extend(self.passed_on)
        if session and credentials.session is not None:
            metadata.append((SESSION_KEY, credentials.session))
        if credentials.csrf is not None:
            metadata.append((CSRF_KEY, credentials.csrf))
        return tuple(metadata)


def read_forwarded(headers: Mapping[str, str], cookies: Mapping[str, str]) -> Forwarded:
    """Read what a request with ``headers`` (lower-case names) and ``cookies`` forwards."""
    authorization = headers.get(AUTHORIZATION_KEY)
    session = cookies.get(SESSION_COOKIE)
    csrf = headers.get(CSRF_HEADER)
    credentials: CallCredentials | Unauthenticated
    try:
        credentials = CallCredentials(
            bearer=bearer_secret(authorization) if authorization is not None else None,
            session=session if session and _carriable(session) else None,
            csrf=csrf if csrf and _carriable(csrf) else None,
        )
    except Unauthenticated as err:
        credentials = err
    passed_on = tuple(
        (key, value)
        for header, key in _FORWARDED_HEADERS.items()
        if (value := headers.get(header)) is not None and _carriable(value)
    )
    return Forwarded(credentials, passed_on)


_FORWARDED_KEY = "workcoord.forwarded"


def forwarded(scope: Scope) -> Forwarded:
    """What the request of ``scope`` forwards: as :class:`CallForwarding` read it, or read now
    (an application served without the pipeline)."""
    found = scope.get(_FORWARDED_KEY)
    return found if isinstance(found, Forwarded) else _read_scope(scope)


def _read_scope(scope: Scope) -> Forwarded:
    connection = HTTPConnection(scope)
    headers = {key: connection.headers[key] for key in connection.headers}
    return read_forwarded(headers, connection.cookies)


class CallForwarding:
    """ASGI middleware: reads each request's credential, request id and trace context once
    (:func:`forwarded`). A malformed ``Authorization`` header is refused (401) only by an
    endpoint that forwards it: a probe or a page asset never looks at it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope[_FORWARDED_KEY] = _read_scope(scope)
        await self.app(scope, receive, send)


def _carriable(value: str) -> bool:
    return 0 < len(value) <= _MAX_METADATA_VALUE and all(" " <= ch <= "~" for ch in value)


@dataclass
class Upstreams:
    """The coordinator and recovery channels (they may be one and the same in tests)."""

    coordinator: grpc.aio.Channel
    recovery: grpc.aio.Channel
    owned: bool = False
    """Whether :meth:`close` closes the channels (True when :meth:`connect` opened them)."""
    _callables: dict[tuple[int, str, bool], Any] = field(default_factory=dict, repr=False)
    _heartbeats: Heartbeats | None = field(default=None, repr=False)

    @classmethod
    def connect(cls, settings: GatewaySettings) -> Upstreams:
        """Open one channel per upstream address (shared if both addresses are equal)."""
        coordinator = open_channel(settings.coordinator_address, settings)
        recovery = (
            coordinator
            if settings.recovery_address == settings.coordinator_address
            else open_channel(settings.recovery_address, settings)
        )
        return cls(coordinator=coordinator, recovery=recovery, owned=True)

    def channel_for(self, route: Route) -> grpc.aio.Channel:
        """The channel that serves ``route``."""
        return self.recovery if route.upstream == "recovery" else self.coordinator

    async def route_to(self, route: Route, request: _message.Message) -> Upstreams:
        """The upstreams that answer ``request``: these (one cell; see ``cells.py``)."""
        return self

    def _callable(self, route: Route) -> Any:
        return self._method(
            self.channel_for(route), route.full_method, route.response_class, route.streaming
        )

    def _method(
        self,
        channel: grpc.aio.Channel,
        full_method: str,
        response_class: type[_message.Message],
        streaming: bool = False,
    ) -> Any:
        key = (id(channel), full_method, streaming)
        found = self._callables.get(key)
        if found is None:
            factory = channel.unary_stream if streaming else channel.unary_unary
            found = factory(
                full_method,
                request_serializer=_serialize,
                response_deserializer=_deserializer(response_class),
            )
            self._callables[key] = found
        return found

    def coalesced(self) -> Heartbeats:
        """The coalescing of this coordinator channel's heartbeats (``heartbeats.py``)."""
        if self._heartbeats is None:
            channel = self.coordinator
            self._heartbeats = Heartbeats(
                batch_call=self._method(channel, BATCH_METHOD, worker_pb2.BatchHeartbeatResponse),
                single_call=self._method(channel, HEARTBEAT_METHOD, worker_pb2.HeartbeatResponse),
            )
        return self._heartbeats

    async def call(
        self,
        route: Route,
        request: _message.Message,
        *,
        metadata: tuple[tuple[str, str], ...],
        deadline_seconds: float,
    ) -> _message.Message:
        """Call a unary method; raises ``grpc.aio.AioRpcError`` on failure. Heartbeats go
        together with the others in flight (``heartbeats.py``)."""
        if route.full_method == HEARTBEAT_METHOD and isinstance(
            request, worker_pb2.HeartbeatRequest
        ):
            return await self.coalesced().call(
                request, metadata=metadata, deadline_seconds=deadline_seconds
            )
        response: _message.Message = await self._callable(route)(
            request, metadata=metadata, timeout=deadline_seconds
        )
        return response

    def stream(
        self,
        route: Route,
        request: _message.Message,
        *,
        metadata: tuple[tuple[str, str], ...],
    ) -> grpc.aio.UnaryStreamCall[Any, Any]:
        """Open a server stream (no deadline: feeds live as long as their socket)."""
        call: grpc.aio.UnaryStreamCall[Any, Any] = self._callable(route)(request, metadata=metadata)
        return call

    async def coordinator_serving(self, deadline_seconds: float = 2.0) -> bool:
        """Whether the coordinator's ``grpc.health.v1`` check answers SERVING."""
        stub = health_pb2_grpc.HealthStub(self.coordinator)
        try:
            reply = await stub.Check(
                health_pb2.HealthCheckRequest(service=""), timeout=deadline_seconds
            )
        except grpc.RpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def close(self) -> None:
        """Close the channels this object opened."""
        if self._heartbeats is not None:
            await self._heartbeats.close()
        if not self.owned:
            return
        await self.coordinator.close()
        if self.recovery is not self.coordinator:
            await self.recovery.close()


def _serialize(message: _message.Message) -> bytes:
    return message.SerializeToString()


def _deserializer(cls: type[_message.Message]) -> Any:
    return cls.FromString
