"""Reading the caller's credential from gRPC metadata."""

from __future__ import annotations

from typing import Any

import grpc

from workcoord.kit.errors import Unauthenticated


def bearer(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The secret of ``authorization: Bearer <secret>`` metadata, if present."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, secret = text.partition(" ")
            if scheme.lower() != "bearer" or not secret.strip():
                raise Unauthenticated("the authorization metadata must be 'Bearer <secret>'")
            return secret.strip()
    return None
