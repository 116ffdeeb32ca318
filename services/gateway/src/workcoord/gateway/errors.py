"""Every error the gateway answers, as ``google.rpc.Status`` JSON with its HTTP code.

Upstream failures keep the coordinator's rich status (``grpc-status-details-bin``: ErrorInfo,
BadRequest); statuses without one get an ErrorInfo whose reason is the code name. Transport
failures (unreachable upstream, deadline) never echo grpc's own text, which names addresses
and internals.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import grpc
import grpc.aio
from google.rpc import status_pb2
from starlette.responses import Response

from workcoord.kit.errors import Code, WorkcoordError, generic_error, http_status_for
from workcoord.kit.status import (
    call_code,
    call_details,
    status_from_trailer,
    status_to_json,
    to_rpc_status,
)

__all__ = [
    "JSON_MEDIA_TYPE",
    "RETRY_AFTER_SECONDS",
    "error_response",
    "json_response",
    "make_status",
    "status_from_rpc_error",
    "status_response",
]

_log = logging.getLogger(__name__)

JSON_MEDIA_TYPE = "application/json"

# Codes grpc itself produces for transport trouble: their text is for operators, not callers.
_TRANSPORT_MESSAGES: dict[Code, str] = {
    Code.UNAVAILABLE: "the upstream service is unavailable, try again later",
    Code.DEADLINE_EXCEEDED: "the upstream service did not answer in time",
    Code.CANCELLED: "the call was cancelled",
    Code.UNKNOWN: "unknown upstream error",
    Code.INTERNAL: "internal error",
    Code.DATA_LOSS: "internal error",
}


def json_response(status_code: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    """``application/json`` response with compact, UTF-8 JSON."""
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(content, status_code=status_code, headers=headers, media_type=JSON_MEDIA_TYPE)


def make_status(code: Code, message: str, *, reason: str | None = None) -> status_pb2.Status:
    """A status with an ``ErrorInfo`` (reason defaults to the code name, domain workcoord)."""
    return to_rpc_status(generic_error(code, message, reason=reason or code.name))


# Seconds a 503 asks the caller to wait before retrying (the database or the upstream is
# briefly away, or coordination is switched off): short, clients back off further themselves.
RETRY_AFTER_SECONDS = 1


def status_response(
    status: status_pb2.Status,
    *,
    http_status: int | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The JSON form of ``status``, with the HTTP code of its canonical code by default.
    A 503 says when to retry (``Retry-After``)."""
    code = http_status if http_status is not None else http_status_for(status.code)
    if code == 503 and not any(k.lower() == "retry-after" for k in headers or {}):
        headers = {**(headers or {}), "Retry-After": str(RETRY_AFTER_SECONDS)}
    return json_response(code, status_to_json(status), headers)


def error_response(
    err: WorkcoordError,
    *,
    http_status: int | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The JSON form of a typed error."""
    return status_response(to_rpc_status(err), http_status=http_status, headers=headers)


def status_from_rpc_error(exc: grpc.RpcError) -> status_pb2.Status:
    """The status a failed upstream call answered: its rich trailer if any, else built."""
    rich = status_from_trailer(exc)
    code = call_code(exc)
    if rich is not None and rich.code == int(code) and rich.code != 0:
        return rich
    if code in _TRANSPORT_MESSAGES:
        details = call_details(exc)
        if details:
            _log.info("upstream %s: %s", code.name, details)
        return make_status(code, _TRANSPORT_MESSAGES[code])
    return make_status(code, call_details(exc) or code.name.lower().replace("_", " "))
