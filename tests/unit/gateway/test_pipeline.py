"""The gateway's pipeline (``gateway/pipeline.py``): one list of middleware, in one order, and
what its stages do for every endpoint alike (request ids, metrics by route template, the body
limit, credential forwarding)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from workcoord.gateway.access_log import AccessLog
from workcoord.gateway.app import build_app
from workcoord.gateway.compression import GzipText
from workcoord.gateway.metrics import RequestMetrics
from workcoord.gateway.pipeline import BodyLimit, RequestId, middleware
from workcoord.gateway.server import start_gateway
from workcoord.gateway.upstream import CallForwarding

from .conftest import MAX_BODY_BYTES, Recorder, Upstream, gateway_settings

# Typed as plain objects: Starlette's Middleware.cls is a factory type mypy cannot compare.
ORDER: list[Any] = [RequestId, AccessLog, RequestMetrics, GzipText, BodyLimit, CallForwarding]


def test_the_pipeline_is_one_list_assembled_in_one_order() -> None:
    settings = gateway_settings("127.0.0.1:1")
    stages = middleware(settings, ())
    assert [stage.cls for stage in stages] == ORDER
    assert dict(stages[ORDER.index(BodyLimit)].kwargs) == {"max_bytes": MAX_BODY_BYTES}
    # The app is that list and nothing else.
    assert [stage.cls for stage in build_app(settings).user_middleware] == ORDER


def _count(route: str, method: str, code: str) -> float:
    value = REGISTRY.get_sample_value(
        "workcoord_gateway_requests_total", {"route": route, "method": method, "code": code}
    )
    return value or 0.0


@pytest.mark.parametrize(
    ("path", "route", "code"),
    [
        (
            "/v1/work-coordinators/wc-1/lanes/l1",
            "/v1/work-coordinators/{coordinatorId}/lanes/{laneId}",
            "200",
        ),
        ("/v1/no/such/thing", "unmatched", "404"),
        ("/healthz", "/healthz", "200"),
        ("/ui/board.js", "/ui/{file}", "200"),
        ("/o/acme/work-coordinator", "/o/{orgSlug}/work-coordinator", "303"),
        ("/sign-in", "/sign-in", "200"),
        ("/mcp", "/mcp", "503"),  # no lifespan under ASGITransport: the MCP layer is not up
    ],
)
async def test_every_answer_is_counted_by_its_route_template(
    client: httpx.AsyncClient, path: str, route: str, code: str
) -> None:
    before = _count(route, "GET", code)
    response = await client.get(path)
    assert str(response.status_code) == code, response.text
    assert _count(route, "GET", code) == before + 1


async def test_a_request_without_an_id_gets_one_forwarded_and_echoed(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.get("/v1/me", headers={"Authorization": "Bearer s3cret"})
    minted = response.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", minted)
    assert recorder.last("GetCurrentPrincipal").metadata["x-request-id"] == minted


@pytest.mark.parametrize("sent", ["r" * 201, "tab\there"])
async def test_an_id_grpc_cannot_carry_is_replaced(
    client: httpx.AsyncClient, recorder: Recorder, sent: str
) -> None:
    response = await client.get(
        "/v1/me", headers={"Authorization": "Bearer s3cret", "x-request-id": sent}
    )
    replaced = response.headers["x-request-id"]
    assert replaced != sent and re.fullmatch(r"[0-9a-f]{32}", replaced)
    assert recorder.last("GetCurrentPrincipal").metadata["x-request-id"] == replaced


async def test_the_id_is_echoed_on_every_endpoint(client: httpx.AsyncClient) -> None:
    for path in ("/healthz", "/ui/board.js", "/sign-in", "/v1/nothing", "/mcp"):
        response = await client.get(path, headers={"x-request-id": "req-7"})
        assert response.headers.get_list("x-request-id") == ["req-7"], path


async def test_a_malformed_credential_is_refused_before_the_body_is_measured(
    client: httpx.AsyncClient,
) -> None:
    big = b"{" + b" " * (MAX_BODY_BYTES * 2) + b"}"
    response = await client.post(
        "/v1/work-coordinators/wc-1/leases",
        content=big,
        headers={"Authorization": "Basic abc", "content-type": "application/json"},
    )
    assert response.status_code == 401
    response = await client.post(
        "/v1/work-coordinators/wc-1/leases",
        content=big,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413
    # A route without a body never reads it, so never trips the limit.
    response = await client.request("GET", "/healthz", content=big)
    assert response.status_code == 200


async def test_mcp_answers_an_oversized_body_as_a_json_rpc_413(upstream: Upstream) -> None:
    """The pipeline's limit is the only one (the MCP SDK's would answer in plain text)."""
    running = await start_gateway(gateway_settings(upstream.address))
    headers = {
        "Authorization": "Bearer s3cret",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(10):
            yield b" " * 1000

    try:
        async with httpx.AsyncClient(base_url=f"http://{running.address}") as http:
            declared = await http.post("/mcp", content=b" " * (MAX_BODY_BYTES + 1), headers=headers)
            streamed = await http.post("/mcp", content=chunks(), headers=headers)
            fits = await http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers=headers,
            )
    finally:
        await running.stop()
    for answer in (declared, streamed):
        assert answer.status_code == 413, answer.text
        error = answer.json()["error"]
        assert error["message"].startswith("TOO_LARGE")
        assert error["data"]["details"][0]["reason"] == "TOO_LARGE"
    assert fits.status_code == 200, fits.text
    assert fits.json()["id"] == 1
