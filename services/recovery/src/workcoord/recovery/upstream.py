"""Talking to the coordinator on a caller's behalf: credentials in, upstream errors back out.

The recovery service decides no authorization itself: it forwards the caller's credential (the
``authorization`` metadata, or a browser session the gateway forwarded with its CSRF token) and
answers with whatever status the coordinator answered, details included.
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc
import grpc.aio
from grpc_status import rpc_status

from workcoord.kit.errors import Unauthenticated
from workcoord.kit.status import status_from_trailer
from workcoord.kit.wire import CSRF_KEY, SESSION_KEY, bearer_metadata, call_credentials

__all__ = [
    "abort_with_upstream",
    "caller_metadata",
]


def caller_metadata(context: grpc.aio.ServicerContext[Any, Any]) -> tuple[tuple[str, str], ...]:
    """Who the caller is, as metadata to forward unchanged: its bearer credential, or else the
    browser session the gateway forwarded (with its CSRF token); UNAUTHENTICATED with neither."""
    credentials = call_credentials(context.invocation_metadata())
    if credentials.bearer is not None:
        return bearer_metadata(credentials.bearer)
    if credentials.session is not None:
        session = ((SESSION_KEY, credentials.session),)
        return session + (((CSRF_KEY, credentials.csrf),) if credentials.csrf else ())
    raise Unauthenticated("missing credential: send authorization")


async def abort_with_upstream(
    context: grpc.aio.ServicerContext[Any, Any], exc: grpc.aio.AioRpcError
) -> NoReturn:
    """Abort the current call with the coordinator's status, unchanged (code, message, details)."""
    status = status_from_trailer(exc)
    if status is not None:
        await context.abort_with_status(rpc_status.to_status(status))
    else:
        await context.abort(exc.code(), exc.details() or "")
    raise AssertionError("unreachable")  # pragma: no cover  # abort always raises
