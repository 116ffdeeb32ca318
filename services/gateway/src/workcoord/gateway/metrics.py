"""Prometheus metrics of the gateway (default registry, served at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["FEED_SUBSCRIBERS", "REQUESTS", "REQUEST_SECONDS"]

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
