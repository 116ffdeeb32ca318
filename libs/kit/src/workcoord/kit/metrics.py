"""Prometheus metrics every service shares, the RPC observer, and the metrics endpoint.

Everything lands in ``prometheus_client``'s default registry, so in ``workcoord dev`` (three
services in one process) the gateway's ``/metrics`` shows the whole process. In production each
service serves ``/metrics`` on ``WORKCOORD_METRICS_PORT`` from :func:`start_metrics_server`, which
also answers ``/healthz`` (the process serves) and ``/readyz`` (its gRPC health is SERVING) in
plain HTTP: kubelet's gRPC probes cannot speak TLS, so with TLS on the probes come here.

Label sets are bounded: ``method`` is a full gRPC method name of a registered service (unknown
methods are never wrapped), ``code`` a gRPC status code name, ``reason`` an ErrorInfo reason
from the contract's fixed list.
"""

from __future__ import annotations

import errno
import inspect
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from socketserver import ThreadingMixIn
from typing import Any, TypeAlias, TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import grpc
import grpc.aio
import prometheus_client
from prometheus_client import Counter, Gauge, Histogram

from workcoord.kit.startup import AddressInUse, StartupError

__all__ = [
    "BUS_NOTIFICATIONS_DROPPED",
    "BUS_PUBLISH_FAILURES",
    "FEED_SUBSCRIBERS",
    "PROCESS_HEALTH",
    "RPC_DURATION",
    "RPC_ERRORS",
    "RpcObserver",
    "start_metrics_server",
]

_log = logging.getLogger(__name__)
_access = logging.getLogger("workcoord.access")

RPC_ERRORS = Counter(
    "workcoord_rpc_errors_total",
    "RPC calls answered with an error, by full method name and ErrorInfo reason.",
    ["method", "reason"],
)
RPC_DURATION = Histogram(
    "workcoord_rpc_duration_seconds",
    "Time to answer a unary RPC, by full method name (long-poll Lease calls include their wait).",
    ["method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 90),
)
FEED_SUBSCRIBERS = Gauge(
    "workcoord_feed_subscribers",
    "Open FeedService.Watch streams on this coordinator (the gateway's WebSockets are one each).",
)
BUS_PUBLISH_FAILURES = Counter(
    "workcoord_bus_publish_failures_total",
    "Notifications that could not be published to Redis (the slow poll covers them).",
)
BUS_NOTIFICATIONS_DROPPED = Counter(
    "workcoord_bus_notifications_dropped_total",
    "Notifications dropped from a full subscriber queue (oldest first; they are only hints).",
)

# Probed every few seconds: logging each would drown the access log.
_QUIET_PREFIXES = ("/grpc.health.v1.", "/grpc.reflection.")


class _ProcessHealth:
    """What ``/healthz`` and ``/readyz`` on the metrics port answer (set by the gRPC server)."""

    def __init__(self) -> None:
        self.live = False
        self.ready = False


PROCESS_HEALTH = _ProcessHealth()


# --- the RPC observer -------------------------------------------------------------------------

_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")
_Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


class RpcObserver(grpc.aio.ServerInterceptor):
    """Times every unary RPC into :data:`RPC_DURATION` and writes one access-log line per call.

    ``open_streams`` maps a streaming method's full name to a gauge counting its open calls
    (the coordinator maps ``FeedService/Watch`` to :data:`FEED_SUBSCRIBERS`). Place it inside
    the tracing interceptor, so the access line carries the call's ``trace_id``, and outside
    the error interceptor, so it sees the final status.
    """

    def __init__(self, open_streams: Mapping[str, Gauge] | None = None) -> None:
        self._open_streams = dict(open_streams or {})
        self._wrapped: dict[str, tuple[_Handler, _Handler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[_Req, _Resp] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Req, _Resp] | None:
        """Wrap the method's handler (cached per method)."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method: str = handler_call_details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(handler, method)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, handler: _Handler, method: str) -> _Handler:
        serializers = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        quiet = method.startswith(_QUIET_PREFIXES)
        if handler.unary_unary is not None and inspect.iscoroutinefunction(handler.unary_unary):
            return grpc.unary_unary_rpc_method_handler(
                _timed(handler.unary_unary, method, quiet), **serializers
            )
        if handler.unary_stream is not None and inspect.isasyncgenfunction(handler.unary_stream):
            gauge = self._open_streams.get(method)
            return grpc.unary_stream_rpc_method_handler(
                _counted(handler.unary_stream, method, gauge, quiet), **serializers
            )
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
            if not quiet:
                _log_access(method, context, failure, elapsed)

    return unary


def _counted(
    behavior: Callable[..., Any], method: str, gauge: Gauge | None, quiet: bool
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
                yield response
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if gauge is not None:
                gauge.dec()
            if not quiet:
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


# --- the metrics endpoint ---------------------------------------------------------------------


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds are not news."""


_Environ = dict[str, Any]
_StartResponse = Callable[..., Any]


def _app() -> Callable[[_Environ, _StartResponse], list[bytes]]:
    metrics_app = prometheus_client.make_wsgi_app()

    def app(environ: _Environ, start_response: _StartResponse) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path in ("/healthz", "/readyz"):
            ok = PROCESS_HEALTH.live if path == "/healthz" else PROCESS_HEALTH.ready
            start_response(
                "200 OK" if ok else "503 Service Unavailable",
                [("Content-Type", "application/json")],
            )
            return [b'{"status":"ok"}' if ok else b'{"status":"unavailable"}']
        result: list[bytes] = metrics_app(environ, start_response)
        return result

    return app


def start_metrics_server(
    port: int | None,
    address: str = "0.0.0.0",  # noqa: S104 - Prometheus scrapes the pod IP
    *,
    what: str = "metrics",
) -> bool:
    """Serve ``/metrics``, ``/healthz`` and ``/readyz`` on ``address:port`` in a daemon thread.

    Does nothing when ``port`` is None (``WORKCOORD_METRICS_PORT`` unset). A busy port raises
    :class:`~workcoord.kit.startup.AddressInUse`. Returns whether a server was started.
    """
    if port is None:
        return False
    try:
        server = make_server(address, port, _app(), _Server, handler_class=_QuietHandler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUse(f"{address}:{port}", what) from None
        raise StartupError(f"cannot listen on {address}:{port} ({what}): {exc.strerror}") from None
    thread = threading.Thread(target=server.serve_forever, name="workcoord-metrics", daemon=True)
    thread.start()
    _log.info("metrics served on %s:%d", address, port)
    return True
