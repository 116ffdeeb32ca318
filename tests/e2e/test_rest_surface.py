"""The complete REST surface, through a gateway in front of a real coordinator (PostgreSQL) and
recovery service, all separate processes: every annotated RPC has a reachable route, every
error is a proper ``google.rpc.Status``, request limits hold, and a bounded schemathesis run
over ``/v1/openapi.json`` finds no 5xx.

The system is private to this module (the fuzzer creates and changes things freely).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import APIOperation, GenerationMode
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.result import Err, Ok

from tests.support.rest import ERROR_INFO, JSON, bearer, ok
from workcoord.gateway.routes import Route, load_routes
from workcoord.kit.errors import http_status_for

from .feed_services import FeedSystem, run_feed_system

pytestmark = [pytest.mark.xdist_group(name="e2e-rest-surface"), pytest.mark.pg]

Operation = APIOperation[Any, Any, Any, Any]
REASON = re.compile(r"[A-Z][A-Z0-9_]*")
# HTTP statuses the gateway answers on its own, outside google/rpc/code.proto's mapping.
_GATEWAY_STATUSES = {405, 413, 426}


@dataclass
class Surface:
    system: FeedSystem
    url: str
    admin: str
    org: str
    cid: str


@pytest.fixture(scope="module")
def surface(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surface]:
    directory = tmp_path_factory.mktemp("e2e-rest-surface")
    with run_feed_system(directory, replicas=1, with_recovery=True) as system:
        url = system.gateway_urls[0]
        admin = system.admin_token
        headers = bearer(admin)
        org = f"surface-{secrets.token_hex(4)}"
        ok(httpx.post(f"{url}/v1/orgs", json={"slug": org, "displayName": "S"}, headers=headers))
        wc = ok(
            httpx.post(
                f"{url}/v1/work-coordinators",
                json={
                    "scope": "ORG",
                    "digestOwner": "ops@acme.test",
                    "orgSlug": org,
                    "displayName": "surface",
                },
                headers=headers,
            )
        )
        yield Surface(system, url, admin, org, wc["coordinatorId"])


def assert_status(response: httpx.Response) -> JSON:
    """``response`` is an error whose body is a proper google.rpc.Status; returns its ErrorInfo."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    assert isinstance(body, dict) and set(body) <= {"code", "message", "details"}, body
    code = body.get("code")
    assert isinstance(code, int) and code != 0, body
    assert isinstance(body.get("message"), str) and body["message"], body
    if response.status_code not in _GATEWAY_STATUSES:
        assert http_status_for(code) == response.status_code, (response.status_code, body)
    infos = [d for d in body.get("details", []) if d.get("@type") == ERROR_INFO]
    assert len(infos) == 1, body
    assert infos[0]["domain"] == "workcoord" and REASON.fullmatch(infos[0]["reason"]), body
    info: JSON = infos[0]
    return info


def path_of(route: Route, surface: Surface) -> str:
    values = {"coordinatorId": surface.cid, "orgSlug": surface.org, "day": "2026-11-29"}
    return re.sub(
        r"\{([^}=]+)\}", lambda m: values.get(m.group(1), f"x{len(m.group(1))}"), route.path
    )


ROUTES = sorted(load_routes().routes, key=lambda r: (r.path, r.http_method))


def test_every_annotated_rpc_has_a_route() -> None:
    """The table covers every RPC of every service of the API (the feed included)."""
    from workcoord.kit.descriptors import api_file_descriptors

    methods = {
        f"/{service.full_name}/{method.name}"
        for file in api_file_descriptors()
        for service in file.services_by_name.values()
        for method in service.methods
    }
    assert {route.full_method for route in ROUTES} == methods


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.http_method} {r.path}")
def test_every_route_answers_a_stranger_with_a_status(route: Route, surface: Surface) -> None:
    body: JSON | None = {} if route.http_method in ("POST", "PATCH", "PUT") else None
    response = httpx.request(route.http_method, surface.url + path_of(route, surface), json=body)
    info = assert_status(response)
    if route.streaming:
        assert response.status_code == 426 and info["reason"] == "WEBSOCKET_REQUIRED"
    else:
        # The gateway refuses what it cannot transcode (400); the coordinator's gate refuses
        # a stranger before anything else (401). Nothing else gets through.
        assert response.status_code in (400, 401), (response.status_code, response.text)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.http_method} {r.path}")
def test_every_route_reaches_its_rpc(route: Route, surface: Surface) -> None:
    """With the admin's credential, an empty request reaches the RPC: never a 404 for the
    route, never a 5xx other than a documented UNIMPLEMENTED or an unavailable upstream."""
    if route.streaming:
        pytest.skip("the WebSocket is tested in test_feed*.py")
    if route.method.name == "UpdateSettings":
        pytest.skip("would switch the platform off under the other tests")
    body: JSON | None = {} if route.http_method in ("POST", "PATCH", "PUT") else None
    response = httpx.request(
        route.http_method,
        surface.url + path_of(route, surface),
        json=body,
        headers=bearer(surface.admin),
        timeout=30,
    )
    if response.status_code == 200:
        assert isinstance(response.json(), dict)
        return
    info = assert_status(response)
    assert not (response.status_code == 404 and response.json()["message"].startswith("no route"))
    if response.status_code >= 500:
        assert (response.status_code, info["reason"]) == (501, "UNIMPLEMENTED"), response.text


def test_a_body_over_the_limit_is_413_with_a_status(surface: Surface) -> None:
    big = {"title": "x" * (2 * 1024 * 1024), "template": "CUSTOM"}
    response = httpx.post(
        f"{surface.url}/v1/work-coordinators/{surface.cid}/lanes",
        json=big,
        headers=bearer(surface.admin),
    )
    assert response.status_code == 413
    assert assert_status(response)["reason"] == "TOO_LARGE"


@pytest.mark.parametrize("size", ["501", "-1", "100000"])
def test_page_sizes_past_the_cap_are_400(surface: Surface, size: str) -> None:
    for path in (
        f"/v1/work-coordinators/{surface.cid}/events",
        f"/v1/work-coordinators/{surface.cid}/lanes",
        f"/v1/work-coordinators/{surface.cid}/view",
        "/v1/work-coordinators",
        "/v1/orgs",
    ):
        response = httpx.get(
            f"{surface.url}{path}?pageSize={size}",
            headers=bearer(surface.admin),
        )
        assert response.status_code == 400, (path, response.text)
        assert assert_status(response)["reason"] == "INVALID_ARGUMENT"


def test_page_size_at_the_cap_is_accepted(surface: Surface) -> None:
    response = httpx.get(
        f"{surface.url}/v1/work-coordinators/{surface.cid}/events?pageSize=500",
        headers=bearer(surface.admin),
    )
    assert response.status_code == 200, response.text


def test_openapi_is_valid_and_describes_every_route(surface: Surface) -> None:
    document = ok(httpx.get(f"{surface.url}/v1/openapi.json"))
    schema = schemathesis.openapi.from_dict(document)
    operations = [_operation(result) for result in schema.get_all_operations()]
    described = {(op.method.upper(), op.path) for op in operations}
    expected = {(r.http_method, r.path) for r in ROUTES}
    assert expected <= described, expected - described


# Bounded: a few examples per operation, a few hundred requests in all.
_EXAMPLES_PER_OPERATION = 4


def test_schemathesis_finds_no_5xx_and_only_proper_statuses(surface: Surface) -> None:
    schema = schemathesis.openapi.from_url(f"{surface.url}/v1/openapi.json")
    headers = bearer(surface.admin)
    failures: list[str] = []
    statuses: dict[int, int] = {}
    calls = 0
    with httpx.Client(base_url=surface.url, timeout=30) as client:
        for result in schema.get_all_operations():
            operation = _operation(result)
            if operation.path.endswith("/ws") or operation.path == "/v1/settings":
                continue  # the WebSocket, and the platform switch (would stop the run)

            @settings(
                max_examples=_EXAMPLES_PER_OPERATION,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
                derandomize=True,
            )
            @given(
                case=st.one_of(
                    operation.as_strategy(GenerationMode.POSITIVE),
                    operation.as_strategy(GenerationMode.NEGATIVE),
                )
            )
            def run(case: Any) -> None:
                nonlocal calls
                calls += 1
                kwargs = case.as_transport_kwargs(base_url=surface.url, headers=headers)
                response = client.request(
                    kwargs["method"],
                    kwargs["url"],
                    params=kwargs.get("params"),
                    headers=kwargs.get("headers"),
                    content=_content(kwargs),
                )
                label = f"{case.method} {case.formatted_path}"
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                if response.status_code >= 500 and not (
                    response.status_code == 501 and _reason(response) == "UNIMPLEMENTED"
                ):
                    failures.append(f"{label} → {response.status_code} {response.text[:300]}")
                if response.status_code >= 400:
                    try:
                        assert_status(response)
                    except AssertionError as exc:
                        failures.append(f"{label} → not a Status: {exc}")

            run()
    print(f"schemathesis: {calls} requests, statuses {sorted(statuses.items())}")
    assert calls >= 100
    # The run reached the RPCs, not only the validation in front of them.
    assert statuses.get(200, 0) > 0 and statuses.get(400, 0) > 0, statuses
    assert not failures, "\n".join(failures[:40])


def _operation(result: Ok[Operation] | Err[InvalidSchema]) -> Operation:
    """The operation of a schema result; an invalid operation fails the test with its error."""
    if isinstance(result, Err):
        raise AssertionError(f"invalid operation in /v1/openapi.json: {result.err()}")
    return result.ok()


def _reason(response: httpx.Response) -> str:
    try:
        details = response.json().get("details", [])
    except ValueError:
        return ""
    return next((d.get("reason", "") for d in details if d.get("@type") == ERROR_INFO), "")


def _content(kwargs: JSON) -> bytes | None:
    if "json" in kwargs:
        return json.dumps(kwargs["json"]).encode()
    data = kwargs.get("data")
    if isinstance(data, str):
        return data.encode()
    return data if isinstance(data, bytes) else None
