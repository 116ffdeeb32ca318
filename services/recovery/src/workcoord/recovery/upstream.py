"""Talking to the coordinator on a caller's behalf: credentials in, upstream errors back out.

The recovery service decides no authorization itself: it forwards the caller's credential (the
``authorization`` metadata, or a browser session the gateway forwarded with its CSRF token) and
answers with whatever status the coordinator answered, details included.
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
    "caller_credentials",
    "require_caller_credentials",
]

AUTHORIZATION_KEY = "authorization"
STATUS_DETAILS_KEY = "grpc-status-details-bin"
# A browser session and its double-submit CSRF token, as the gateway forwards them.
SESSION_KEY = "x-workcoord-session"
CSRF_KEY = "x-workcoord-csrf"


def bearer_metadata(secret: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``secret`` as a bearer credential."""
    return ((AUTHORIZATION_KEY, f"Bearer {secret}"),)


def caller_authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The caller's ``authorization`` metadata value, or None when absent or blank."""
    for key, value in context.invocation_metadata() or ():
        if key == AUTHORIZATION_KEY and isinstance(value, str) and value.strip():
            return value
    return None


def caller_credentials(
    context: grpc.aio.ServicerContext[Any, Any],
) -> tuple[tuple[str, str], ...]:
    """The metadata that says who the caller is, to forward as is: its ``authorization``, or
    else its browser session with the session's CSRF token (empty when it sent neither)."""
    authorization = caller_authorization(context)
    if authorization is not None:
        return ((AUTHORIZATION_KEY, authorization),)
    found = {
        key: value
        for key, value in context.invocation_metadata() or ()
        if key in (SESSION_KEY, CSRF_KEY) and isinstance(value, str) and value.strip()
    }
    if SESSION_KEY not in found:
        return ()
    return tuple((key, found[key]) for key in (SESSION_KEY, CSRF_KEY) if key in found)


async def require_caller_credentials(
    context: grpc.aio.ServicerContext[Any, Any],
) -> tuple[tuple[str, str], ...]:
    """:func:`caller_credentials`; aborts UNAUTHENTICATED when the caller sent none."""
    credentials = caller_credentials(context)
    if not credentials:
        await abort_with(context, Unauthenticated("missing credential: send authorization"))
    return credentials


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
