"""The RPC observer: a gRPC server interceptor that times every unary call into
``workcoord_rpc_duration_seconds``, counts open streams, and writes one access-log line per call
(logger ``workcoord.access``, INFO; health checks and reflection are not logged)."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import grpc
import grpc.aio
from prometheus_client import Gauge

from workcoord.kit.handler_wrapping import Handler, WrappingInterceptor, rebuild_handler
from workcoord.kit.metrics import RPC_DURATION

__all__ = ["RpcObserver"]

_access = logging.getLogger("workcoord.access")

# Probed every few seconds: logging each would drown the access log.
_QUIET_PREFIXES = ("/grpc.health.v1.", "/grpc.reflection.")


class RpcObserver(WrappingInterceptor):
    """Times every unary RPC into :data:`RPC_DURATION` and writes one access-log line per call.

    ``open_streams`` maps a streaming method's full name to a gauge counting its open calls
    (the coordinator maps ``FeedService/Watch`` to :data:`FEED_SUBSCRIBERS`);
    ``on_response`` maps one to a function called with each message the stream sends (the
    coordinator measures feed lag with it). Place it inside
    the tracing interceptor, so the access line carries the call's ``trace_id``, and outside
    the error interceptor, so it sees the final status.
    """

    def __init__(
        self,
        open_streams: Mapping[str, Gauge] | None = None,
        on_response: Mapping[str, Callable[[Any], None]] | None = None,
    ) -> None:
        super().__init__()
        self._open_streams = dict(open_streams or {})
        self._on_response = dict(on_response or {})

    def wrap(self, handler: Handler, method: str) -> Handler:
        """The method's handler, timed and logged (a unary one) or counted (a stream)."""
        quiet = method.startswith(_QUIET_PREFIXES)
        if handler.unary_unary is not None and inspect.iscoroutinefunction(handler.unary_unary):
            return rebuild_handler(
                handler, "unary_unary", _timed(handler.unary_unary, method, quiet)
            )
        if handler.unary_stream is not None and inspect.isasyncgenfunction(handler.unary_stream):
            gauge = self._open_streams.get(method)
            observe = self._on_response.get(method)
            counted = _counted(handler.unary_stream, method, gauge, observe, quiet)
            return rebuild_handler(handler, "unary_stream", counted)
        return handler


def _timed(behavior: Callable[..., Any], method: str, quiet: bool) -> Callable[..., Any]:
    histogram = RPC_DURATION.labels(method)

    async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        started = time.perf_counter()
        failure: BaseException | None = None
        try:
            return await behavior(request, context)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            elapsed = time.perf_counter() - started
            histogram.observe(elapsed)
            if not quiet and _access.isEnabledFor(logging.INFO):
                _log_access(method, context, failure, elapsed)

    return unary


def _counted(
    behavior: Callable[..., Any],
    method: str,
    gauge: Gauge | None,
    observe: Callable[[Any], None] | None,
    quiet: bool,
) -> Callable[..., Any]:
    async def stream(
        request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Any]:
        started = time.perf_counter()
        failure: BaseException | None = None
        if gauge is not None:
            gauge.inc()
        try:
            async for response in behavior(request, context):
                if observe is not None:
                    observe(response)
                yield response
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if gauge is not None:
                gauge.dec()
            if not quiet and _access.isEnabledFor(logging.INFO):
                _log_access(method, context, failure, time.perf_counter() - started)

    return stream


def _log_access(
    method: str,
    context: grpc.aio.ServicerContext[Any, Any],
    failure: BaseException | None,
    elapsed: float,
) -> None:
    code = _status_name(context, failure)
    _access.info(
        "rpc %s %s %.1fms",
        method,
        code,
        elapsed * 1000,
        extra={"rpc_method": method, "rpc_code": code, "duration_ms": round(elapsed * 1000, 1)},
    )


def _status_name(context: grpc.aio.ServicerContext[Any, Any], failure: BaseException | None) -> str:
    try:
        code = context.code()
    except Exception:  # older grpcio: no code() on the aio context
        code = None
    if isinstance(code, grpc.StatusCode):
        return code.name
    if isinstance(code, int):
        return next((c.name for c in grpc.StatusCode if c.value[0] == code), str(code))
    if failure is None:
        return "OK"
    if isinstance(failure, grpc.aio.AbortError):
        return "ABORTED_BY_SERVICER"
    return "CANCELLED" if type(failure).__name__ == "CancelledError" else "UNKNOWN"
