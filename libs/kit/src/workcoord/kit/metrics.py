"""Prometheus helpers and the few metrics the kit itself records.

Services define their own metrics (queue depth, lease latency, sweep duration, …) with
``prometheus_client`` directly; everything lands in the default registry that
:func:`start_metrics_server` exposes.
"""

from __future__ import annotations

import logging

import prometheus_client
from prometheus_client import Counter

__all__ = [
    "BUS_NOTIFICATIONS_DROPPED",
    "BUS_PUBLISH_FAILURES",
    "RPC_ERRORS",
    "start_metrics_server",
]

_log = logging.getLogger(__name__)

RPC_ERRORS = Counter(
    "workcoord_rpc_errors_total",
    "RPC calls answered with an error, by full method name and ErrorInfo reason.",
    ["method", "reason"],
)
BUS_PUBLISH_FAILURES = Counter(
    "workcoord_bus_publish_failures_total",
    "Notifications that could not be published to Redis (the slow poll covers them).",
)
BUS_NOTIFICATIONS_DROPPED = Counter(
    "workcoord_bus_notifications_dropped_total",
    "Notifications dropped from a full subscriber queue (oldest first; they are only hints).",
)


def start_metrics_server(port: int | None, address: str = "0.0.0.0") -> bool:  # noqa: S104
    """Serve ``/metrics`` on ``address:port`` in a daemon thread; do nothing if ``port`` is None.

    Binds every interface by default because Prometheus scrapes the pod IP; it is only started
    when ``WORKCOORD_METRICS_PORT`` is configured. Returns whether a server was started.
    """
    if port is None:
        return False
    prometheus_client.start_http_server(port, addr=address)
    _log.info("metrics served on %s:%d", address, port)
    return True
