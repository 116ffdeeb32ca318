"""REST through the gateway app to a real grpc.aio server with fake servicers."""

from __future__ import annotations

from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from grpc_health.v1 import health_pb2

from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.gateway.app import build_app
from workcoord.gateway.upstream import Upstreams

from .conftest import MAX_BODY_BYTES, Recorder, Upstream, gateway_settings, unused_address

LANES = "/v1/work-coordinators/wc-1/lanes"


def _detail(body: dict[str, Any], suffix: str) -> dict[str, Any]:
    for detail in body.get("details", []):
        if detail["@type"].endswith(suffix):
            assert isinstance(detail, dict)
            return detail
    raise AssertionError(f"no {suffix} detail in {body}")


def _violations(body: dict[str, Any]) -> list[str]:
    return [v["field"] for v in _detail(body, "BadRequest")["fieldViolations"]]


async def test_path_params_fill_the_request_and_response_body_is_the_field(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.get(f"{LANES}/lane%2F7")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    request = recorder.last("GetLane").request
    assert isinstance(request, lane_pb2.GetLaneRequest)
    assert (request.coordinator_id, request.lane_id) == ("wc-1", "lane/7")
    body = response.json()
    # response_body "lane": the Lane itself, camelCase, enum by name, RFC 3339 time.
    assert body["laneId"] == "lane/7"
    assert body["state"] == "ACTIVE"
    assert body["createTime"] == "2027-01-15T08:00:00Z"
    assert "items" not in body  # proto3 JSON omits empty lists


async def test_body_star_is_the_whole_request(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.post(
        "/v1/work-coordinators/wc-1/leases",
        json={"workerId": "w1", "worker_class": "machine", "maxItems": 2, "leaseSeconds": 30},
    )
    assert response.status_code == 200, response.text
    request = recorder.last("Lease").request
    assert isinstance(request, worker_pb2.LeaseRequest)
    assert request.coordinator_id == "wc-1"
    assert (request.worker_id, request.worker_class) == ("w1", "machine")
    assert (request.max_items, request.lease_seconds) == (2, 30)
    # No response_body: the whole response.
    assert [lease["leaseId"] for lease in response.json()["leases"]] == ["lease-0", "lease-1"]


async def test_path_wins_over_the_same_field_in_a_star_body(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.post(
        "/v1/work-coordinators/wc-1/leases",
        json={"coordinatorId": "other", "workerId": "w1", "workerClass": "machine"},
    )
    assert response.status_code == 200
    assert recorder.last("Lease").request.coordinator_id == "wc-1"  # type: ignore[attr-defined]


async def test_body_field_is_parsed_into_that_field(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.post(
        LANES,
        json={"title": "Fix flaky parser", "template": "CUSTOM", "priority": 5,
              "inputs": {"repo": "parser", "n": 3},
              "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}]},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    request = recorder.last("CreateLane").request
    assert isinstance(request, lane_pb2.CreateLaneRequest)
    assert request.coordinator_id == "wc-1"
    assert request.lane.template == lane_pb2.Lane.CUSTOM
    assert request.lane.inputs["repo"] == "parser"
    body = response.json()
    assert body["laneId"] == "lane-1"
    assert body["items"][0]["workerClass"] == "machine"


async def test_query_params_int64_enum_bool_and_repeated(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.get(
        "/v1/work-coordinators/wc-1/events",
        params={"sinceRevision": "9007199254740993", "page_size": "100", "laneId": "l1"},
    )
    assert response.status_code == 200
    request = recorder.last("ListEvents").request
    assert isinstance(request, work_coordinator_pb2.ListEventsRequest)
    assert request.since_revision == 9007199254740993
    assert request.page_size == 100
    assert request.lane_id == "l1"
    assert response.json() == {"nextPageToken": "next"}

    response = await client.get(LANES, params={"state": "LIVE"})
    assert response.status_code == 200
    assert recorder.last("ListLanes").request.state == lane_pb2.Lane.LIVE  # type: ignore[attr-defined]


async def test_bad_query_values_are_400(client: httpx.AsyncClient) -> None:
    cases: list[tuple[dict[str, str | list[str]], str]] = [
        ({"state": "NOPE"}, "state"),
        ({"pageSize": "ten"}, "page_size"),
        ({"bogus": "1"}, "bogus"),
        ({"coordinatorId": "x"}, "coordinator_id"),
        ({"pageSize": ["1", "2"]}, "page_size"),
    ]
    for params, field in cases:
        response = await client.get(LANES, params=params)
        assert response.status_code == 400, (params, response.text)
        body = response.json()
        assert body["code"] == 3
        assert _violations(body) == [field], params


async def test_unknown_json_field_is_400_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/work-coordinators/wc-1/leases",
        json={"workerId": "w1", "runIdentity": {"pid": 1, "colour": "blue"}},
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 3
    assert _detail(body, "ErrorInfo")["reason"] == "INVALID_ARGUMENT"
    assert _violations(body) == ["run_identity.colour"]

    response = await client.post(LANES, json={"title": "t", "colour": "blue"})
    assert response.status_code == 400
    assert _violations(response.json()) == ["lane.colour"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"text"', "must be a JSON object"),
        (b"\xff\xfe\x00", "JSON"),
    ],
)
async def test_malformed_bodies_are_400(
    client: httpx.AsyncClient, content: bytes, expected: str
) -> None:
    response = await client.post(
        "/v1/work-coordinators/wc-1/leases",
        content=content,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 3
    assert expected in body["message"]


@pytest.mark.parametrize(
    ("path", "content", "field"),
    [
        # A lone surrogate in a placement key, in a value, and as an unknown key anywhere.
        (
            LANES,
            b'{"title": "t", "placement": {"requireLabels": {"\\ud800": "x"}}}',
            "lane.placement.require_labels",
        ),
        (LANES, b'{"title": "\\ud800"}', "lane.title"),
        (LANES, b'{"title": "t", "placement": {"\\udfff": 1}}', "lane.placement"),
        (LANES, b'{"\\ud800": 1}', "lane"),
        ("/v1/work-coordinators/wc-1/leases", b'{"workerId": "w\\ud800x"}', "worker_id"),
    ],
)
async def test_lone_surrogates_are_400_naming_the_field(
    client: httpx.AsyncClient, path: str, content: bytes, field: str
) -> None:
    response = await client.post(
        path, content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert _violations(body) == [field]
    assert "\\ud" in response.text  # shown escaped, never as the raw surrogate


async def test_a_lone_surrogate_key_of_a_whole_body_names_the_body(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/v1/work-coordinators/wc-1/leases",
        content=b'{"\\ud800": 1}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith("request has a key that is not valid Unicode")


async def test_wrong_json_types_are_400_naming_the_field(client: httpx.AsyncClient) -> None:
    for payload, field in [
        ({"maxItems": "many"}, "max_items"),
        ({"workerId": 5}, "worker_id"),
        ({"maxItems": 1.5}, "max_items"),
        ({"runIdentity": {"pid": "x"}}, "run_identity.pid"),
        ({"runIdentity": []}, "run_identity"),
    ]:
        response = await client.post("/v1/work-coordinators/wc-1/leases", json=payload)
        assert response.status_code == 400, (payload, response.text)
        assert _violations(response.json()) == [field], payload
    response = await client.post(f"{LANES}/l1/blockers", json=["reason"])
    assert response.status_code == 400
    assert _violations(response.json()) == ["blocker"]


async def test_body_too_large_is_413(client: httpx.AsyncClient) -> None:
    big = {"workerId": "w" * (MAX_BODY_BYTES + 10)}
    response = await client.post("/v1/work-coordinators/wc-1/leases", json=big)
    assert response.status_code == 413
    body = response.json()
    assert body["code"] == 8
    assert _detail(body, "ErrorInfo")["reason"] == "TOO_LARGE"

    async def chunks() -> Any:  # no Content-Length: the limit holds while streaming
        for _ in range(10):
            yield b" " * 1000

    response = await client.post("/v1/work-coordinators/wc-1/leases", content=chunks())
    assert response.status_code == 413


async def test_patch_fills_update_mask_from_the_body(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.patch("/v1/settings", json={"workCoordinatorEnabled": False})
    assert response.status_code == 200, response.text
    request = recorder.last("UpdateSettings").request
    assert isinstance(request, admin_pb2.UpdateSettingsRequest)
    assert list(request.update_mask.paths) == ["work_coordinator_enabled"]
    assert request.settings.HasField("work_coordinator_enabled")
    # An optional field keeps its presence: false is answered, not omitted.
    assert response.json() == {"workCoordinatorEnabled": False}

    response = await client.patch(
        "/v1/settings",
        params={"updateMask": "etag"},
        json={"etag": "e1", "work_coordinator_enabled": True},
    )
    assert response.status_code == 200
    request = recorder.last("UpdateSettings").request
    assert isinstance(request, admin_pb2.UpdateSettingsRequest)
    assert list(request.update_mask.paths) == ["etag"]


@pytest.mark.parametrize(
    ("lane_id", "http_status", "code", "reason"),
    [
        ("err-invalid", 400, 3, "INVALID_ARGUMENT"),
        ("err-illegal", 400, 9, "ILLEGAL_TRANSITION"),
        ("err-unauthenticated", 401, 16, "UNAUTHENTICATED"),
        ("err-denied", 403, 7, "PERMISSION_DENIED"),
        ("err-not-found", 404, 5, "NOT_FOUND"),
        ("err-lease-lost", 409, 10, "LEASE_LOST"),
        ("err-pool-full", 429, 8, "POOL_FULL"),
        ("err-disabled", 503, 14, "COORDINATION_DISABLED"),
    ],
)
async def test_upstream_errors_pass_through_with_their_details(
    client: httpx.AsyncClient, lane_id: str, http_status: int, code: int, reason: str
) -> None:
    response = await client.get(f"{LANES}/{lane_id}")
    assert response.status_code == http_status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["code"] == code
    info = _detail(body, "ErrorInfo")
    assert (info["reason"], info["domain"]) == (reason, "workcoord")
    if reason == "INVALID_ARGUMENT":
        assert _violations(body) == ["lease_seconds"]
    if reason == "LEASE_LOST":
        assert info["metadata"] == {"cause": "expired"}
    # A 503 says when to retry; nothing else does.
    assert response.headers.get("retry-after") == ("1" if http_status == 503 else None)


async def test_upstream_down_is_503(upstream: Upstream) -> None:
    address = unused_address()
    channel = grpc.aio.insecure_channel(address)
    app = build_app(gateway_settings(address), Upstreams(coordinator=channel, recovery=channel))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway"
        ) as http:
            response = await http.get(f"{LANES}/l1")
            assert response.status_code == 503
            assert response.headers["retry-after"] == "1"
            body = response.json()
            assert body["code"] == 14
            assert _detail(body, "ErrorInfo")["reason"] == "UNAVAILABLE"
            assert address not in response.text  # grpc's transport text is not echoed
            ready = await http.get("/readyz")
            assert ready.status_code == 503
    finally:
        await channel.close()


async def test_unimplemented_upstream_method_is_501(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/orgs")  # the fake admin does not implement ListOrgs
    assert response.status_code == 501
    assert response.json()["code"] == 12


async def test_unknown_path_is_404_and_wrong_method_405(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/nothing/here")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json()["code"] == 5

    response = await client.delete("/v1/work-coordinators/wc-1")
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == {"GET", "PATCH"}
    assert _detail(response.json(), "ErrorInfo")["reason"] == "METHOD_NOT_ALLOWED"

    response = await client.post("/healthz")
    assert response.status_code == 405

    response = await client.get("/v1/users/a%0Ab")  # a decoded newline still gets JSON
    assert response.status_code == 501  # routed: the fake admin does not implement GetUser
    assert response.headers["content-type"] == "application/json"


async def test_credentials_and_trace_context_reach_the_servicer(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.get(
        "/v1/me",
        headers={
            "Authorization": "Bearer s3cret",
            "x-request-id": "req-1",
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "cookie": "workcoord_session=sess-1",
        },
    )
    assert response.status_code == 200
    assert response.json() == {"kind": "USER", "name": "user:ops"}
    assert response.headers["x-request-id"] == "req-1"
    metadata = recorder.last("GetCurrentPrincipal").metadata
    assert metadata["authorization"] == "Bearer s3cret"
    assert metadata["x-workcoord-session"] == "sess-1"
    assert metadata["x-request-id"] == "req-1"
    assert metadata["traceparent"].startswith("00-0af7651916cd43dd")


async def test_the_bearer_secret_is_forwarded_as_parsed(
    client: httpx.AsyncClient, recorder: Recorder
) -> None:
    response = await client.get("/v1/me", headers={"Authorization": "bearer \t s3cret "})
    assert response.status_code == 200
    assert recorder.last("GetCurrentPrincipal").metadata["authorization"] == "Bearer s3cret"


@pytest.mark.parametrize(
    "authorization",
    [
        b"Basic czNjcmV0",
        b"Bearer",
        b"",
        b"Bearer s3cret extra",
        "Bearer s3cr\u00e9t".encode(),  # non-ASCII: gRPC metadata cannot carry it
        b"Bearer " + b"a" * (9 * 1024),  # over what gRPC metadata carries
    ],
    ids=["basic", "no-secret", "empty", "two-words", "non-ASCII", "over-8KiB"],
)
async def test_a_malformed_authorization_is_401_never_the_session_cookie(
    client: httpx.AsyncClient, recorder: Recorder, authorization: bytes
) -> None:
    # Regression: a header gRPC could not carry was dropped on the way upstream, and the
    # session cookie beside it authenticated the request instead.
    calls = len(recorder.calls)
    headers = {b"Authorization": authorization, b"Cookie": b"workcoord_session=wcses_s"}
    for response in (
        await client.get("/v1/me", headers=headers),
        await client.post(LANES, headers=headers, json={"title": "t"}),
    ):
        assert response.status_code == 401, response.text
        body = response.json()
        assert body["code"] == 16
        assert body["message"].startswith("Authorization must be 'Bearer <secret>'")
    assert len(recorder.calls) == calls  # nothing reached the coordinator


async def test_recovery_routes_reach_the_recovery_upstream(
    upstream: Upstream, recorder: Recorder
) -> None:
    coordinator = grpc.aio.insecure_channel(unused_address())
    recovery = grpc.aio.insecure_channel(upstream.address)
    app = build_app(
        gateway_settings(upstream.address), Upstreams(coordinator=coordinator, recovery=recovery)
    )
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway"
        ) as http:
            response = await http.post("/v1/work-coordinators/wc-9/maintain", json={})
            assert response.status_code == 200, response.text
            assert response.json() == {"coordinatorId": "wc-9", "requeued": 2, "revision": "9"}
            assert (await http.get(f"{LANES}/l1")).status_code == 503
    finally:
        await coordinator.close()
        await recovery.close()


async def test_health_readiness_metrics_and_openapi(
    client: httpx.AsyncClient, upstream: Upstream
) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).status_code == 200
    await upstream.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    try:
        assert (await client.get("/readyz")).status_code == 503
    finally:
        await upstream.health.set("", health_pb2.HealthCheckResponse.SERVING)
    metrics = await client.get("/metrics")
    assert metrics.status_code == 200
    assert "workcoord_gateway_requests_total" in metrics.text
    document = await client.get("/v1/openapi.json")
    assert document.status_code == 200
    assert document.json()["openapi"] == "3.0.3"


async def test_plain_get_on_the_feed_asks_for_a_websocket(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/work-coordinators/wc-1/ws")
    assert response.status_code == 426
    assert _detail(response.json(), "ErrorInfo")["reason"] == "WEBSOCKET_REQUIRED"
