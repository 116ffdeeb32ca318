"""Typed errors on the wire: ``WorkcoordError`` ↔ ``google.rpc.Status`` ↔ REST JSON.

Server side: :class:`ErrorInterceptor` answers every :class:`WorkcoordError` with its status
(``ErrorInfo`` + ``BadRequest`` details in the ``grpc-status-details-bin`` trailer) and turns any
other exception into a bare INTERNAL, logged with its traceback but never sent to the caller. It
also runs a service's per-call check (authentication, validation) before each method, so what
the check refuses is answered the same way. A request whose bytes protobuf cannot decode
(malformed, or nested deeper than its decoder's 100 levels) is INVALID_ARGUMENT, where gRPC
alone would answer UNKNOWN. Client side: :func:`error_from_rpc` rebuilds the typed error from
the trailer.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn, TypeAlias

import grpc
import grpc.aio
from google.protobuf import any_pb2, json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from workcoord.kit import metrics
from workcoord.kit.errors import (
    ERROR_DOMAIN,
    Code,
    FieldViolation,
    Internal,
    InvalidArgument,
    WorkcoordError,
    error_class_for_code,
    error_class_for_reason,
    generic_error,
    http_status_for,
)
from workcoord.kit.handler_wrapping import Handler, WrappingInterceptor, rebuild_handler
from workcoord.kit.wire import STATUS_DETAILS_KEY

__all__ = [
    "MAX_REPORTED_VIOLATIONS",
    "OMITTED_VIOLATIONS_KEY",
    "CallCheck",
    "CheckFor",
    "ErrorInterceptor",
    "abort_with",
    "call_code",
    "call_details",
    "error_from_rpc",
    "error_from_status",
    "error_to_json",
    "http_status_for",
    "status_from_trailer",
    "status_to_json",
    "to_grpc_status",
    "to_rpc_status",
]

_log = logging.getLogger(__name__)


# A status travels in gRPC trailers (its message percent-encoded in ``grpc-message``, its
# details base64-encoded in ``grpc-status-details-bin``), and gRPC refuses trailers over
# 8 KiB at random and over 16 KiB always, answering RESOURCE_EXHAUSTED in place of the error.
# So what a status says is bounded: at most this many violations, within this many bytes of
# text in all, each field path and description cut to the third limit, the message to the last.
MAX_REPORTED_VIOLATIONS = 20
_VIOLATION_BYTES = 3072
_VIOLATION_TEXT_BYTES = 256
_MESSAGE_BYTES = 512
OMITTED_VIOLATIONS_KEY = "omittedViolations"
"""``ErrorInfo.metadata`` key: how many violations a status left out (absent when none)."""


def to_rpc_status(err: WorkcoordError) -> status_pb2.Status:
    """Build the ``google.rpc.Status`` for ``err``: ErrorInfo always, BadRequest if violations.

    Bounded so it fits gRPC's trailers: the first :data:`MAX_REPORTED_VIOLATIONS` violations
    (fewer if their text runs long), the count of the rest in ``ErrorInfo.metadata`` under
    :data:`OMITTED_VIOLATIONS_KEY`, and long texts cut short.
    """
    shown: list[error_details_pb2.BadRequest.FieldViolation] = []
    budget = _VIOLATION_BYTES
    for violation in err.field_violations[:MAX_REPORTED_VIOLATIONS]:
        field = _cut(violation.field, _VIOLATION_TEXT_BYTES)
        description = _cut(violation.description, _VIOLATION_TEXT_BYTES)
        budget -= len(field.encode()) + len(description.encode())
        if budget < 0 and shown:
            break
        shown.append(
            error_details_pb2.BadRequest.FieldViolation(field=field, description=description)
        )
    metadata = dict(err.metadata)
    omitted = len(err.field_violations) - len(shown)
    if omitted:
        metadata[OMITTED_VIOLATIONS_KEY] = str(omitted)
    info = error_details_pb2.ErrorInfo(reason=err.reason, domain=ERROR_DOMAIN, metadata=metadata)
    details = [_pack(info)]
    if shown:
        details.append(_pack(error_details_pb2.BadRequest(field_violations=shown)))
    message = _cut(err.message, _MESSAGE_BYTES)
    return status_pb2.Status(code=int(err.code), message=message, details=details)


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` UTF-8 bytes, ending in an ellipsis when it was cut."""
    if len(text.encode()) <= limit:
        return text
    ellipsis = "…"
    room = limit - len(ellipsis.encode())
    return text.encode()[:room].decode(errors="ignore") + ellipsis


def to_grpc_status(err: WorkcoordError) -> grpc.Status:
    """The ``grpc.Status`` (code, details, trailer) to abort a call with."""
    status: grpc.Status = rpc_status.to_status(to_rpc_status(err))
    return status


def status_to_json(status: status_pb2.Status) -> dict[str, Any]:
    """The REST JSON form of a status (proto3 JSON mapping, ``@type`` on each detail)."""
    # error_details_pb2 is imported above, so the default pool resolves the Any payloads.
    body: dict[str, Any] = json_format.MessageToDict(status)
    # MessageToDict drops zero values; the REST body always states code and message.
    body.setdefault("code", status.code)
    body.setdefault("message", status.message)
    return body


def error_to_json(err: WorkcoordError) -> tuple[int, dict[str, Any]]:
    """HTTP status and JSON body for ``err``, as the gateway answers it."""
    return http_status_for(err.code), status_to_json(to_rpc_status(err))


async def abort_with(context: grpc.aio.ServicerContext[Any, Any], err: WorkcoordError) -> NoReturn:
    """Abort the current call with ``err``'s status; never returns."""
    await context.abort_with_status(to_grpc_status(err))
    # abort_with_status always raises; this only satisfies the NoReturn contract.
    raise AssertionError("unreachable")  # pragma: no cover


def error_from_status(status: status_pb2.Status) -> WorkcoordError:
    """Rebuild the typed error a ``google.rpc.Status`` describes."""
    reason: str | None = None
    domain = ""
    metadata: dict[str, str] = {}
    violations: list[FieldViolation] = []
    for detail in status.details:
        # Unpack answers False when the Any holds another type.
        info = error_details_pb2.ErrorInfo()
        bad_request = error_details_pb2.BadRequest()
        if detail.Unpack(info):
            reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
        elif detail.Unpack(bad_request):
            violations.extend(
                FieldViolation(v.field, v.description) for v in bad_request.field_violations
            )
    cls = error_class_for_reason(reason) if reason and domain == ERROR_DOMAIN else None
    if cls is not None and int(cls.code) == status.code:
        return cls.rebuild(status.message, metadata=metadata, field_violations=violations)
    if reason is None:
        by_code = error_class_for_code(status.code)
        if by_code is not None:
            return by_code.rebuild(status.message, field_violations=violations)
    return generic_error(
        status.code,
        status.message,
        reason=reason,
        metadata=metadata,
        field_violations=violations,
    )


def error_from_rpc(exc: grpc.RpcError) -> WorkcoordError:
    """Rebuild the typed error from a failed call (``grpc.aio.AioRpcError`` or ``grpc.RpcError``).

    Reads the ``grpc-status-details-bin`` trailer; without one, falls back to the status code.
    """
    status: status_pb2.Status | None = None
    try:
        status = rpc_status.from_call(exc)
    except (ValueError, AttributeError, TypeError):
        # from_call refuses a trailer whose code/message disagree with the call's; parse it
        # ourselves so a proxy rewriting the message does not lose the typed reason.
        status = status_from_trailer(exc)
    if status is not None:
        return error_from_status(status)
    code = call_code(exc)
    details = call_details(exc)
    by_code = error_class_for_code(code)
    if by_code is not None:
        return by_code.rebuild(details or by_code.default_message)
    return generic_error(code, details or code.name.lower().replace("_", " "))


CallCheck: TypeAlias = "Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[None]]"
"""Runs before a method's body with its request; a :class:`WorkcoordError` it raises is the
call's answer, and the method never runs."""

CheckFor: TypeAlias = "Callable[[str], CallCheck | None]"
"""The check of a method by its full name (``/workcoord.api.v1.LaneService/CreateLane``);
None lets the method run unchecked."""


class ErrorInterceptor(WrappingInterceptor):
    """Maps exceptions raised by servicers to ``google.rpc.Status``.

    ``WorkcoordError`` → its status with details. Anything else is a bug: it is logged with its
    traceback and answered INTERNAL "internal error", never leaking the exception text.

    ``check_for`` gives each method's :data:`CallCheck` (looked up once per method); it runs
    first, inside the same mapping. A checked method must take a single request: a
    client-streaming one is refused at interception rather than served unchecked.
    """

    def __init__(self, check_for: CheckFor | None = None) -> None:
        super().__init__()
        self._check_for = check_for

    def wrap(self, handler: Handler, method: str) -> Handler:
        """The method's handler with its check run first and exceptions become statuses."""
        check = self._check_for(method) if self._check_for is not None else None
        if check is not None and (
            handler.stream_unary is not None or handler.stream_stream is not None
        ):
            raise TypeError(f"{method}: a checked method must take a single request")
        for kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
            behavior = getattr(handler, kind)
            if behavior is not None:
                reader = handler.request_deserializer
                return rebuild_handler(
                    handler,
                    kind,
                    _wrap_behavior(behavior, method, check),
                    _tolerant(reader) if reader is not None and kind.startswith("unary") else None,
                )
        return handler


class _Undecodable:
    """Stands for a request protobuf could not decode, so the method's wrapper can answer it."""


_UNDECODABLE = _Undecodable()


def _tolerant(deserialize: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """``deserialize``, answering :data:`_UNDECODABLE` instead of raising: gRPC would answer
    a deserializer's exception UNKNOWN, and undecodable input is the caller's fault."""

    def read(raw: bytes) -> Any:
        try:
            return deserialize(raw)
        except DecodeError:
            return _UNDECODABLE

    return read


def _refuse_undecodable(request: Any) -> None:
    if request is _UNDECODABLE:
        raise InvalidArgument(
            [], "request is not a valid protobuf message (malformed, or nested too deeply)"
        )


def _wrap_behavior(
    behavior: Callable[..., Any], method: str, check: CallCheck | None
) -> Callable[..., Any]:
    # grpc.aio picks the calling convention from the function kind (coroutine function vs async
    # generator function), so the wrapper must be of the same kind as what it wraps. The check
    # runs in the wrapper's own task, so what it puts in a ContextVar the method sees.
    if inspect.isasyncgenfunction(behavior):

        async def stream_wrapper(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            try:
                _refuse_undecodable(request)
                if check is not None:
                    await check(request, context)
                async for response in behavior(request, context):
                    yield response
            except Exception as exc:
                await _answer(exc, context, method)

        return stream_wrapper
    if inspect.iscoroutinefunction(behavior):

        async def unary_wrapper(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                _refuse_undecodable(request)
                if check is not None:
                    await check(request, context)
                return await behavior(request, context)
            except Exception as exc:
                await _answer(exc, context, method)

        return unary_wrapper
    if check is not None:
        raise TypeError(f"{method}: a checked method must be a coroutine or async generator")
    # Synchronous handlers run in grpc's executor; they are not used by workcoord services.
    return behavior


async def _answer(
    exc: Exception, context: grpc.aio.ServicerContext[Any, Any], method: str
) -> NoReturn:
    if isinstance(exc, grpc.aio.AbortError):
        # The servicer already aborted with a status of its choosing.
        raise exc
    if isinstance(exc, WorkcoordError):
        metrics.RPC_ERRORS.labels(method=method, reason=exc.reason).inc()
        await abort_with(context, exc)
    metrics.RPC_ERRORS.labels(method=method, reason=Internal.reason).inc()
    _log.error("unhandled exception in %s", method, exc_info=exc)
    await abort_with(context, Internal())


def _pack(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def status_from_trailer(exc: grpc.RpcError) -> status_pb2.Status | None:
    """The ``google.rpc.Status`` a failed call carried in its trailer, if any (and readable)."""
    trailing = getattr(exc, "trailing_metadata", None)
    if trailing is None:
        return None
    try:
        for key, value in trailing() or ():
            if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
                return status_pb2.Status.FromString(value)
    except Exception:  # a malformed trailer must not hide the original failure
        _log.warning("unreadable %s trailer", STATUS_DETAILS_KEY)
    return None


def call_code(exc: grpc.RpcError) -> Code:
    """The status code of a failed call (UNKNOWN when it states none we know)."""
    code_fn = getattr(exc, "code", None)
    if code_fn is None:
        return Code.UNKNOWN
    try:
        status_code = code_fn()
        number = (
            status_code.value[0] if isinstance(status_code, grpc.StatusCode) else int(status_code)
        )
        return Code(number)
    except (ValueError, TypeError):
        return Code.UNKNOWN


def call_details(exc: grpc.RpcError) -> str:
    """The status message of a failed call (empty when it has none)."""
    details_fn = getattr(exc, "details", None)
    if details_fn is None:
        return ""
    details = details_fn()
    return details if isinstance(details, str) else ""


# The proto enum and ours must agree; a mismatch would silently mislabel every error.
assert all(code_pb2.Code.Value(c.name) == c.value for c in Code)
