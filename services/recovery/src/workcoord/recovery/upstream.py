"""Talking to the coordinator on a caller's behalf: credentials in, upstream errors back out.

The recovery service decides no authorization itself: it forwards the caller's ``authorization``
metadata and answers with whatever status the coordinator answered, details included.
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc
import grpc.aio
from google.rpc import status_pb2
from grpc_status import rpc_status

from workcoord.kit.errors import Unauthenticated
from workcoord.kit.status import abort_with

__all__ = [
    "AUTHORIZATION_KEY",
    "STATUS_DETAILS_KEY",
    "abort_with_upstream",
    "bearer_metadata",
    "caller_authorization",
    "require_caller_authorization",
]

AUTHORIZATION_KEY = "authorization"
STATUS_DETAILS_KEY = "grpc-status-details-bin"


def bearer_metadata(secret: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``secret`` as a bearer credential."""
    return ((AUTHORIZATION_KEY, f"Bearer {secret}"),)


def caller_authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The caller's ``authorization`` metadata value, or None when absent or blank."""
    for key, value in context.invocation_metadata() or ():
        if key == AUTHORIZATION_KEY and isinstance(value, str) and value.strip():
            return value
    return None


async def require_caller_authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The caller's ``authorization`` value; aborts UNAUTHENTICATED when there is none."""
    value = caller_authorization(context)
    if value is None:
        await abort_with(context, Unauthenticated("missing credential: send authorization"))
    return value


async def abort_with_upstream(
    context: grpc.aio.ServicerContext[Any, Any], exc: grpc.aio.AioRpcError
) -> NoReturn:
    """Abort the current call with the coordinator's status, unchanged (code, message, details)."""
    status = _upstream_status(exc)
    if status is not None:
        await context.abort_with_status(rpc_status.to_status(status))
    else:
        await context.abort(exc.code(), exc.details() or "")
    raise AssertionError("unreachable")  # pragma: no cover  # abort always raises


def _upstream_status(exc: grpc.aio.AioRpcError) -> status_pb2.Status | None:
    for key, value in exc.trailing_metadata() or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            try:
                return status_pb2.Status.FromString(value)
            except Exception:  # a malformed trailer must not hide the upstream code
                return None
    return None
