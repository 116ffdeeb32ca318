"""The authorization matrix over REST: every route of the gateway x every credential kind.

The gateway runs in-process in front of the gRPC matrix's world (same fixture, same request
builders), and every cell must answer what ``authz_table.EXPECTED`` says for the route's
gRPC method: that table is the one source of truth, so REST diverging from gRPC fails here.

Letter → HTTP: ``A`` 2xx · ``U`` 401 · ``D`` 403 · ``N``/``n`` 404 · ``F`` 400; every error
body must be a ``google.rpc.Status`` JSON whose code is the letter's gRPC code, carrying an
``ErrorInfo`` whose reason is the one the gRPC matrix classifies by.

Each request is the gRPC matrix's minimal valid request, transcoded by the route's
``google.api.http`` rule: path variables from the request's fields, the body per the rule
(``*``: the whole request minus the path-bound fields; ``field``: that field), and whatever
else is set as query parameters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.integration import authz_table, authz_world
from tests.integration.authz_builders import BUILDERS
from tests.support.harness import start_gateway_for
from tests.support.rest import ERROR_INFO
from workcoord.gateway.routes import Route, load_routes
from workcoord.gateway.server import RunningGateway

pytestmark = [pytest.mark.pg, pytest.mark.redis, pytest.mark.xdist_group(name="authz-matrix-rest")]

# The gRPC matrix's module-scoped fixture, registered here too (this module gets its own world).
world = authz_world.world

World = authz_world.World
EXPECTED = authz_table.EXPECTED
COLUMNS = authz_table.COLUMNS
COLUMN_NAMES = authz_table.COLUMN_NAMES


@dataclass(frozen=True)
class Outcome:
    """What a letter of the table means over REST."""

    http: int
    """The HTTP status (``A``: any 2xx; 200 is what the gateway answers)."""
    grpc_code: int
    """The ``google.rpc.Code`` of the Status body (0 for ``A``)."""
    reason: str | None
    """The ErrorInfo reason required (None: any non-empty reason)."""


OUTCOMES: dict[str, Outcome] = {
    "A": Outcome(200, 0, None),
    "U": Outcome(401, 16, "UNAUTHENTICATED"),
    "D": Outcome(403, 7, "PERMISSION_DENIED"),
    "N": Outcome(404, 5, "NOT_FOUND"),
    "n": Outcome(404, 5, "NOT_FOUND"),
    "F": Outcome(400, 9, None),
}

ROUTES: tuple[Route, ...] = load_routes().routes


def _method_name(route: Route) -> str:
    return f"{route.method.containing_service.name}/{route.method.name}"


def _route_id(route: Route) -> str:
    return f"{route.http_method} {route.path}"


def _params() -> list[Any]:
    params: list[Any] = []
    for route in sorted(ROUTES, key=_method_name):
        name = _method_name(route)
        if name.split("/")[0] in authz_table.OTHER_PROCESS:
            continue  # answered by the recovery process, as in the gRPC matrix
        if name not in EXPECTED:
            continue  # no row to compare with: test_the_routes_cover_the_grpc_matrix fails
        marks = []
        if route.streaming:
            marks.append(
                pytest.mark.skip(
                    reason=f"{name} is server-streaming: the gateway serves it as a WebSocket "
                    "(426 to plain HTTP), not as a REST call with a status code per request"
                )
            )
        params.append(pytest.param(route, id=f"{name}[{_route_id(route)}]", marks=marks))
    return params


# ------------------------------------------------------------------------------ the gateway


@dataclass
class RestWorld:
    world: authz_world.World
    gateway: RunningGateway
    http: httpx.AsyncClient


@pytest.fixture(scope="module")
async def rest(world: authz_world.World) -> AsyncIterator[RestWorld]:
    gateway = await start_gateway_for(world.stack.address)  # no RecoveryService route here
    http = httpx.AsyncClient(base_url=f"http://{gateway.address}", timeout=30.0)
    try:
        yield RestWorld(world, gateway, http)
    finally:
        await http.aclose()
        await gateway.stop()


# ------------------------------------------------------------------------------ transcoding


@dataclass(frozen=True)
class HttpCall:
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: Any  # JSON value, or None for a route without a body


def to_http(route: Route, request: Message) -> HttpCall:
    """The REST form of ``request`` under ``route``'s HttpRule."""
    rest = type(request)()
    rest.CopyFrom(request)
    values: list[str] = []
    for field_path in route.path_fields:
        *parents, leaf = field_path.split(".")
        holder: Any = rest
        for name in parents:
            holder = getattr(holder, name)
        values.append(str(getattr(holder, leaf)))
        holder.ClearField(leaf)
    path = route.path
    for param, value in zip(route.path_params, values, strict=True):
        assert value, f"{route.full_method}: path variable {param} is empty"
        path = path.replace("{" + param + "}", quote(value, safe=""), 1)

    body: Any = None
    if route.body == "*":
        body = json_format.MessageToDict(rest)
        rest.Clear()
    elif route.body:
        json_name = rest.DESCRIPTOR.fields_by_name[route.body].json_name
        body = json_format.MessageToDict(rest).get(json_name, {})
        rest.ClearField(route.body)
    query: list[tuple[str, str]] = []
    _flatten(json_format.MessageToDict(rest), "", query)
    return HttpCall(route.http_method, path, tuple(query), body)


def _flatten(value: Any, prefix: str, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(inner, f"{prefix}.{key}" if prefix else key, out)
    elif isinstance(value, list):
        for inner in value:
            assert not isinstance(inner, dict | list), f"{prefix}: no messages in a query"
            _flatten(inner, prefix, out)
    elif isinstance(value, bool):
        out.append((prefix, "true" if value else "false"))
    else:
        out.append((prefix, str(value)))


def _headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


# ------------------------------------------------------------------------------ classifying


def classify(response: httpx.Response) -> tuple[str, str]:
    """(letter, description) of a REST answer, by the gRPC matrix's rules.

    The letter is ``?`` when the answer is not a well-formed outcome (a Status body without an
    ErrorInfo reason, an HTTP code that disagrees with the Status code…).
    """
    status = response.status_code
    if 200 <= status < 300:
        return "A", f"HTTP {status}"
    try:
        body = response.json()
    except ValueError:
        return "?", f"HTTP {status} with a non-JSON body {response.text[:200]!r}"
    shown = f"HTTP {status} {str(body)[:300]}"
    if not isinstance(body, dict) or not isinstance(body.get("code"), int):
        return "?", f"{shown} (not a google.rpc.Status)"
    reasons = [
        detail.get("reason")
        for detail in body.get("details", [])
        if isinstance(detail, dict) and detail.get("@type") == ERROR_INFO
    ]
    if len(reasons) != 1 or not isinstance(reasons[0], str) or not reasons[0]:
        return "?", f"{shown} (no single ErrorInfo with a reason)"
    reason, code, message = reasons[0], body["code"], str(body.get("message", ""))
    if reason == "UNAUTHENTICATED":
        letter = "U"
    elif reason == "PERMISSION_DENIED":
        letter = "D"
    elif reason == "NOT_FOUND":
        made_up = any(
            what in message for what in ("pending action", "tracker connection", "webhook")
        )
        letter = "n" if made_up else "N"
    elif code == 9:  # FAILED_PRECONDITION
        letter = "F"
    else:
        return "?", shown
    expected = OUTCOMES[letter]
    if (status, code) != (expected.http, expected.grpc_code):
        return (
            "?",
            f"{shown} (reason {reason} wants HTTP {expected.http}, code {expected.grpc_code})",
        )
    return letter, shown


# ------------------------------------------------------------------------------ the tests


def test_the_routes_cover_the_grpc_matrix() -> None:
    """Every route's method has a row (or is another process's); every row is routed."""
    routed = {_method_name(route) for route in ROUTES}
    unknown = {
        name
        for name in routed
        if name not in EXPECTED and name.split("/")[0] not in authz_table.OTHER_PROCESS
    }
    assert unknown == set(), f"routes of methods the gRPC matrix does not know: {sorted(unknown)}"
    unrouted = set(EXPECTED) - routed
    assert unrouted == set(), f"gRPC methods without a REST route: {sorted(unrouted)}"
    assert set(OUTCOMES) >= {letter for row in EXPECTED.values() for letter in row}


def _status(code: int, reason: str | None, message: str = "m") -> dict[str, Any]:
    details = [{"@type": ERROR_INFO, "reason": reason, "domain": "workcoord"}] if reason else []
    return {"code": code, "message": message, "details": details}


@pytest.mark.parametrize(
    ("status", "body", "letter"),
    [
        (200, {}, "A"),
        (401, _status(16, "UNAUTHENTICATED"), "U"),
        (403, _status(7, "PERMISSION_DENIED"), "D"),
        (404, _status(5, "NOT_FOUND"), "N"),
        (404, _status(5, "NOT_FOUND", "no pending action pa_x"), "n"),
        (400, _status(9, "ILLEGAL_TRANSITION"), "F"),
        # Malformed answers never pass as a letter of the table.
        (403, _status(7, None), "?"),  # no ErrorInfo
        (403, {"error": "forbidden"}, "?"),  # not a Status
        (403, "forbidden", "?"),
        (500, _status(7, "PERMISSION_DENIED"), "?"),  # HTTP code disagrees with the Status
        (403, _status(16, "PERMISSION_DENIED"), "?"),  # Status code disagrees with the reason
        (409, _status(6, "ALREADY_EXISTS"), "?"),
    ],
)
def test_classify(status: int, body: Any, letter: str) -> None:
    got, shown = classify(httpx.Response(status, json=body))
    assert got == letter, shown


async def test_every_column_has_its_credential(rest: RestWorld) -> None:
    assert set(rest.world.tokens) == set(COLUMNS)
    assert rest.world.tokens["-"] is None
    assert all(rest.world.tokens[c] for c in COLUMNS if c != "-")


@pytest.mark.parametrize("route", _params())
async def test_rest_matrix_row(rest: RestWorld, route: Route) -> None:
    name = _method_name(route)
    wrong: list[str] = []
    for column, expected in zip(COLUMNS, EXPECTED[name], strict=True):
        request = await BUILDERS[name](rest.world, column)
        assert isinstance(request, route.request_class), (name, type(request))
        call = to_http(route, request)
        response = await rest.http.request(
            call.method,
            call.path,
            params=call.query,
            json=call.body,
            headers=_headers(rest.world.tokens[column]),
        )
        got, shown = classify(response)
        if got != expected:
            wrong.append(
                f"{_route_id(route)} ({name}) x {COLUMN_NAMES[column]} ({column}): "
                f"expected {expected} (HTTP {OUTCOMES[expected].http}), got {got}: {shown}"
            )
    assert wrong == []
