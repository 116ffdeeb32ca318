"""``GetView`` answers that did not change go out as the bytes they were serialized to last time.

The view cache hands back the same answer object while nothing in it changed (see
``mapping/lane_cache.py``); serializing its ten thousand items again would be a quarter of
what such a call costs the coordinator. This interceptor gives the ``GetView`` handler a
serializer that serializes a held answer once and reuses its bytes; any other answer is
serialized as usual.
"""

from __future__ import annotations

from typing import Any

import grpc

from workcoord.kit.handler_wrapping import Handler, WrappingInterceptor

from .mapping.lane_cache import VIEW_RESPONSES

GET_VIEW_METHOD = "/workcoord.api.v1.WorkCoordinatorService/GetView"


class ViewWireInterceptor(WrappingInterceptor):
    """Serializes held ``GetView`` answers once (innermost: the others keep its serializer)."""

    def wrap(self, handler: Handler, method: str) -> Handler:
        if method != GET_VIEW_METHOD or handler.unary_unary is None:
            return handler
        serialize = handler.response_serializer
        if serialize is None:
            return handler

        def serializer(response: Any) -> bytes:
            return VIEW_RESPONSES.serialized(response, serialize)

        return grpc.unary_unary_rpc_method_handler(
            handler.unary_unary,
            request_deserializer=handler.request_deserializer,
            response_serializer=serializer,
        )
