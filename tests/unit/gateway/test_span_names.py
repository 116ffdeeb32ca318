"""HTTP server spans are named by the route template, never the raw path (no database: the
callback the gateway hands OpenTelemetry's ASGI middleware, on ASGI scopes)."""

from __future__ import annotations

from typing import Any

import pytest

from workcoord.gateway.routes import load_routes
from workcoord.gateway.span_names import span_details


def _scope(method: str, path: str, *, kind: str = "http") -> dict[str, Any]:
    return {"type": kind, "method": method, "path": path, "raw_path": path.encode("latin-1")}


@pytest.fixture(scope="module")
def details() -> Any:
    return span_details(load_routes(), ("/mcp", "/login"))


@pytest.mark.parametrize(
    ("scope", "name", "route"),
    [
        (
            _scope("POST", "/v1/work-coordinators/wc-9d2e/leases"),
            "POST /v1/work-coordinators/{coordinatorId}/leases",
            "/v1/work-coordinators/{coordinatorId}/leases",
        ),
        (_scope("GET", "/v1/orgs/acme-7f3a"), "GET /v1/orgs/{orgSlug}", "/v1/orgs/{orgSlug}"),
        # HEAD resolves as GET; the span keeps the method the client sent.
        (_scope("HEAD", "/v1/orgs/acme-7f3a"), "HEAD /v1/orgs/{orgSlug}", "/v1/orgs/{orgSlug}"),
        # A query string never reaches the name.
        (_scope("GET", "/v1/orgs/acme-7f3a?x=secret"), "GET /v1/orgs/{orgSlug}", None),
        (_scope("POST", "/mcp"), "POST /mcp", "/mcp"),
    ],
)
def test_a_span_is_named_by_its_route_template(
    details: Any, scope: dict[str, Any], name: str, route: str | None
) -> None:
    got_name, attributes = details(scope)
    assert got_name == name
    if route is not None:
        assert attributes == {"http.route": route}
    assert "acme-7f3a" not in got_name and "wc-9d2e" not in got_name and "secret" not in got_name


def test_a_path_no_route_matches_is_named_by_its_method_alone(details: Any) -> None:
    assert details(_scope("GET", "/v1/no-such-thing/ln-42")) == ("GET", {})


def test_a_websocket_is_named_as_a_get(details: Any) -> None:
    name, _ = details({"type": "websocket", "path": "/v1/no-such/ws-7", "raw_path": b"/x/ws-7"})
    assert name == "GET"
