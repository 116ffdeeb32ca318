"""Names of the gateway's HTTP server spans: the route template, never the raw path.

A span named ``POST /v1/work-coordinators/wc-8f3a/leases`` makes one name per coordinator,
lane and lease: trace back ends cannot group them, and ids leak into span names. The
OpenTelemetry HTTP conventions name a server span ``{method} {route}`` — here the RPC's public
path template (``POST /v1/work-coordinators/{coordinatorId}/leases``), with ``http.route`` set
to it — and the method alone when the path matches no route.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from workcoord.gateway.routes import RouteTable

__all__ = ["span_details"]


def span_details(
    table: RouteTable, fixed_paths: Iterable[str]
) -> Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]:
    """The ``default_span_details`` callback of OpenTelemetry's ASGI middleware: the span name
    and the ``http.route`` attribute of a request's ``scope``. ``fixed_paths`` are the paths
    without variables that the gateway answers besides the routes (``/mcp``, ``/login``…)."""
    fixed = frozenset(fixed_paths)

    def details(scope: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        websocket = scope.get("type") == "websocket"
        method = "GET" if websocket else str(scope.get("method", "")).upper() or "HTTP"
        raw = scope.get("raw_path")
        path = raw.decode("latin-1").split("?", 1)[0] if raw else str(scope.get("path", ""))
        if path in fixed:
            return f"{method} {path}", {"http.route": path}
        lookup = "GET" if method == "HEAD" else method
        found, _ = table.resolve(lookup, path)
        if found is None:
            return method, {}  # no route: no path in the name (it may hold anything)
        return f"{method} {found.route.path}", {"http.route": found.route.path}

    return details
