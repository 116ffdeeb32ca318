"""A base for the server interceptors that wrap each method's handler: the wrapping is done
once per method and cached, so the hot path only looks it up."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

import grpc
import grpc.aio

__all__ = ["Handler", "WrappingInterceptor", "rebuild_handler"]

_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")
# A string: grpc.RpcMethodHandler is only generic in the stubs, not at run time.
Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"

_FACTORIES: dict[str, Callable[..., Handler]] = {
    "unary_unary": grpc.unary_unary_rpc_method_handler,
    "unary_stream": grpc.unary_stream_rpc_method_handler,
    "stream_unary": grpc.stream_unary_rpc_method_handler,
    "stream_stream": grpc.stream_stream_rpc_method_handler,
}


def rebuild_handler(
    handler: Handler,
    kind: str,
    behavior: Callable[..., Any],
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> Handler:
    """A handler of the same ``kind`` (``unary_unary``, ``unary_stream``, …) and the same
    serializers as ``handler`` (or ``request_deserializer`` in place of its own), running
    ``behavior``."""
    return _FACTORIES[kind](
        behavior,
        request_deserializer=request_deserializer or handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class WrappingInterceptor(grpc.aio.ServerInterceptor):
    """Wraps each method's handler with :meth:`wrap`, once per method and handler."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}

    def wrap(self, handler: Handler, method: str) -> Handler:
        """The handler to serve ``method`` with in place of ``handler``."""
        raise NotImplementedError

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[_Req, _Resp] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Req, _Resp] | None:
        """The method's handler, wrapped (cached per method)."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method: str = handler_call_details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self.wrap(handler, method)
        self._wrapped[method] = (handler, wrapped)
        return wrapped
