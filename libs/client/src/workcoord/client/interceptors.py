"""Client interceptors: the caller's credential on every call, typed errors on every failure.

grpc.aio files each interceptor under the first call shape it implements, so there is one
class per shape; :func:`credential_interceptors` returns all four. Unary responses are awaited
inside the interceptor so a failure surfaces as the typed
:class:`~workcoord.kit.errors.WorkcoordError` at the caller's ``await``; streams are wrapped in
an async iterator that does the same when the stream fails.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from workcoord.kit.status import error_from_rpc
from workcoord.kit.wire import AUTHORIZATION_KEY

__all__ = [
    "StreamStreamCredentialInterceptor",
    "StreamUnaryCredentialInterceptor",
    "UnaryStreamCredentialInterceptor",
    "UnaryUnaryCredentialInterceptor",
    "credential_interceptors",
]

_Continuation = Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]]


def credential_interceptors(token: str | None) -> list[Any]:
    """Interceptors for every call shape, sending ``authorization: Bearer <token>``."""
    return [
        UnaryUnaryCredentialInterceptor(token),
        UnaryStreamCredentialInterceptor(token),
        StreamUnaryCredentialInterceptor(token),
        StreamStreamCredentialInterceptor(token),
    ]


class _Credential:
    def __init__(self, token: str | None) -> None:
        self._authorization = f"Bearer {token}" if token else None

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        if self._authorization is None:
            return details
        pairs = [
            (key, value)
            for key, value in (details.metadata or ())
            if key != AUTHORIZATION_KEY  # an explicit per-call credential is replaced, not doubled
        ]
        pairs.append((AUTHORIZATION_KEY, self._authorization))
        return grpc.aio.ClientCallDetails(
            method=details.method,
            timeout=details.timeout,
            metadata=grpc.aio.Metadata(*pairs),
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
        )


class UnaryUnaryCredentialInterceptor(_Credential, grpc.aio.UnaryUnaryClientInterceptor):
    """Credential and typed errors for unary calls."""

    async def intercept_unary_unary(
        self,
        continuation: _Continuation,
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        call = await continuation(self._details(client_call_details), request)
        return await _typed_response(call)


class StreamUnaryCredentialInterceptor(_Credential, grpc.aio.StreamUnaryClientInterceptor):
    """Credential and typed errors for client-streaming calls."""

    async def intercept_stream_unary(
        self,
        continuation: _Continuation,
        client_call_details: grpc.aio.ClientCallDetails,
        request_iterator: Any,
    ) -> Any:
        call = await continuation(self._details(client_call_details), request_iterator)
        return await _typed_response(call)


class UnaryStreamCredentialInterceptor(_Credential, grpc.aio.UnaryStreamClientInterceptor):
    """Credential and typed errors for server-streaming calls (``Watch``)."""

    async def intercept_unary_stream(
        self,
        continuation: _Continuation,
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> AsyncIterator[Any]:
        call = await continuation(self._details(client_call_details), request)
        return _typed_stream(call)


class StreamStreamCredentialInterceptor(_Credential, grpc.aio.StreamStreamClientInterceptor):
    """Credential and typed errors for bidirectional calls."""

    async def intercept_stream_stream(
        self,
        continuation: _Continuation,
        client_call_details: grpc.aio.ClientCallDetails,
        request_iterator: Any,
    ) -> AsyncIterator[Any]:
        call = await continuation(self._details(client_call_details), request_iterator)
        return _typed_stream(call)


async def _typed_response(call: Awaitable[Any]) -> Any:
    try:
        return await call
    except grpc.aio.AioRpcError as exc:
        raise error_from_rpc(exc) from exc


async def _typed_stream(call: AsyncIterable[Any]) -> AsyncIterator[Any]:
    try:
        async for message in call:
            yield message
    except grpc.aio.AioRpcError as exc:
        raise error_from_rpc(exc) from exc
