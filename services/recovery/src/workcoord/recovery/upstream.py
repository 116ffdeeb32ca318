"""Talking to the coordinator on a caller's behalf: credentials in, upstream errors back out.

The recovery service decides no authorization itself: it forwards the caller's bearer
credential and answers with whatever status the coordinator answered, details included.
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc
import grpc.aio
from grpc_status import rpc_status

from workcoord.kit.errors import Unauthenticated
from workcoord.kit.status import status_from_trailer
from workcoord.kit.wire import bearer_metadata, call_credentials

__all__ = [
    "abort_with_upstream",
    "caller_metadata",
]


def caller_metadata(context: grpc.aio.ServicerContext[Any, Any]) -> tuple[tuple[str, str], ...]:
    """The caller's bearer credential as metadata to forward; UNAUTHENTICATED without one."""
    secret = call_credentials(context.invocation_metadata()).bearer
    if secret is None:
        raise Unauthenticated("missing credential: send authorization")
    return bearer_metadata(secret)


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
