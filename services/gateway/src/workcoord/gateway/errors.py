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
from workcoord.kit.status import status_to_json, to_rpc_status

__all__ = [
    "JSON_MEDIA_TYPE",
    "error_response",
    "json_response",
    "make_status",
    "status_from_rpc_error",
    "status_response",
]

_log = logging.getLogger(__name__)

JSON_MEDIA_TYPE = "application/json"
_DETAILS_KEY = "grpc-status-details-bin"

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


def status_response(
    status: status_pb2.Status,
    *,
    http_status: int | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The JSON form of ``status``, with the HTTP code of its canonical code by default."""
    code = http_status if http_status is not None else http_status_for(status.code)
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
    rich = _rich_status(exc)
    code = _code_of(exc)
    if rich is not None and rich.code == int(code) and rich.code != 0:
        return rich
    if code in _TRANSPORT_MESSAGES:
        details = _details_of(exc)
        if details:
            _log.info("upstream %s: %s", code.name, details)
        return make_status(code, _TRANSPORT_MESSAGES[code])
    return make_status(code, _details_of(exc) or code.name.lower().replace("_", " "))


def _rich_status(exc: grpc.RpcError) -> status_pb2.Status | None:
    trailing = getattr(exc, "trailing_metadata", None)
    if trailing is None:
        return None
    try:
        for key, value in trailing() or ():
            if key == _DETAILS_KEY and isinstance(value, bytes):
                return status_pb2.Status.FromString(value)
    except Exception:  # a malformed trailer must not turn an answer into a 500
        _log.warning("unreadable %s trailer", _DETAILS_KEY)
    return None


def _code_of(exc: grpc.RpcError) -> Code:
    code_fn = getattr(exc, "code", None)
    try:
        status_code = code_fn() if code_fn is not None else None
        if isinstance(status_code, grpc.StatusCode):
            return Code(status_code.value[0])
    except (ValueError, TypeError):
        pass
    return Code.UNKNOWN


def _details_of(exc: grpc.RpcError) -> str:
    details_fn = getattr(exc, "details", None)
    details = details_fn() if details_fn is not None else None
    return details if isinstance(details, str) else ""
