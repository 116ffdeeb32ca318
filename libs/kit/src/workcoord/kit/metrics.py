"""Prometheus metrics every service shares, the RPC observer, and the metrics endpoint.

This module imports no grpc (the bus and other grpc-free code record metrics here); the RPC
observer is :mod:`workcoord.kit.rpc_observer`. Everything lands in ``prometheus_client``'s
default registry, so in ``workcoord dev`` (three
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
import logging
import threading
from collections.abc import Callable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

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
    "SERVING",
    "start_metrics_server",
]

_log = logging.getLogger(__name__)

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


SERVING = Gauge(
    "workcoord_serving",
    "1 while this process's gRPC health answers SERVING (the coordinator: its database answers).",
)


class _ProcessHealth:
    """What ``/healthz`` and ``/readyz`` on the metrics port answer (set by the gRPC server)."""

    def __init__(self) -> None:
        self.live = False
        self._ready = False

    @property
    def ready(self) -> bool:
        """Whether gRPC health answers SERVING."""
        return self._ready

    @ready.setter
    def ready(self, value: bool) -> None:
        self._ready = value
        SERVING.set(1 if value else 0)


PROCESS_HEALTH = _ProcessHealth()


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
