"""Prometheus metrics of the gateway (default registry, served at ``/metrics``).

:class:`RequestMetrics` counts and times every HTTP answer by the route template that answered
it; each endpoint names its template with :func:`label_route` (a path with ids in it would make
one series per coordinator and lease).
"""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "FEED_SUBSCRIBERS",
    "REQUESTS",
    "REQUEST_SECONDS",
    "UNMATCHED",
    "RequestMetrics",
    "label_route",
]

REQUESTS = Counter(
    "workcoord_gateway_requests_total",
    "HTTP requests answered, by route template, method and HTTP status code.",
    ["route", "method", "code"],
)
REQUEST_SECONDS = Histogram(
    "workcoord_gateway_request_duration_seconds",
    "Time to answer an HTTP request, by route template and method.",
    ["route", "method"],
    # Long-poll leases wait up to a minute: keep buckets past the default 10 s.
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 90),
)
FEED_SUBSCRIBERS = Gauge(
    "workcoord_gateway_feed_subscribers",
    "Open WebSocket feed subscriptions.",
)

UNMATCHED = "unmatched"
"""The route label of a request no endpoint claimed (a 404, a 405)."""
_ROUTE_KEY = "workcoord.route"


def label_route(scope: Scope, template: str) -> None:
    """Name the route template (``/v1/work-coordinators/{coordinatorId}/leases``, ``/mcp``)
    that answers the request of ``scope``."""
    scope[_ROUTE_KEY] = template


class RequestMetrics:
    """ASGI middleware: :data:`REQUESTS` and :data:`REQUEST_SECONDS` for every HTTP request,
    timed until its answer is sent. WebSocket feeds are counted by :data:`FEED_SUBSCRIBERS`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def noting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, noting_send)
        finally:
            route = str(scope.get(_ROUTE_KEY, UNMATCHED))
            method = str(scope["method"])
            REQUESTS.labels(route, method, str(status)).inc()
            REQUEST_SECONDS.labels(route, method).observe(time.perf_counter() - started)
