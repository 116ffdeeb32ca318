"""The switch holds everywhere: with coordination switched off (the platform's
``workCoordinatorEnabled``, the child's own ``enabled`` or its GLOBAL parent's), every route of
the gateway (from ``load_routes()``, so a new route is walked without anyone listing it) answers
a work key ``COORDINATION_DISABLED`` (HTTP 503, gRPC UNAVAILABLE) wherever it would have
answered, reads included, over REST, gRPC and the WebSocket feed; what would have been refused
is refused exactly as before (no existence oracle). A person keeps reading and administering
but not working; a platform admin switches it back on over REST, and then every cell answers
what the authorization matrix says again.

The world, the request builders and the expected letters are the authorization matrix's
(``authz_world``, ``authz_builders``, ``authz_table``): ``C`` here means
COORDINATION_DISABLED.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from google.protobuf.message import Message
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Close

from tests.integration import authz_table, authz_world
from tests.integration import test_authz_matrix_rest as rest_matrix
from tests.integration.authz_builders import BUILDERS
from tests.support.harness import start_gateway_for
from tests.support.rest import ERROR_INFO
from workcoord.gateway.routes import Route, load_routes
from workcoord.gateway.server import RunningGateway

pytestmark = [pytest.mark.pg, pytest.mark.redis, pytest.mark.xdist_group(name="switch-everywhere")]

# The matrix's module-scoped world, registered here too (this module gets its own).
world = authz_world.world

EXPECTED = authz_table.EXPECTED
COLUMN_NAMES = authz_table.COLUMN_NAMES
ROUTES: tuple[Route, ...] = tuple(
    route
    for route in load_routes().routes
    if route.method.containing_service.name not in authz_table.OTHER_PROCESS
)

DISABLED = "C"
KEYS = "RLWG"  # work keys of the child (READ, LEASE, WRITE) and of its GLOBAL parent
HUMANS = "PAV"  # platform admin, the child's org admin, its viewer
# The coordinator each key lists (None: it lists none, lacking READ).
LISTED = {"R": "child", "L": None, "W": None, "G": "parent"}

# What a work key may still call while off, with why that is no work surface.
KEPT_FOR_KEYS = {
    "AdminService/GetCurrentPrincipal": "who the caller is, nothing of the work",
    "AdminService/ListOrgs": "a work key sees no org",
    "SessionService/ExchangeLoginCode": "the one-time code is the credential, not the key",
}

# What a person may no longer do while off: work (lease, change lanes and items, decide, act
# on a child). Everything else a person may do is reading or administration and is kept.
HUMAN_WORK = {
    "LaneService/CreateLane",
    "LaneService/UpdateLane",
    "LaneService/PauseLane",
    "LaneService/ResumeLane",
    "LaneService/CancelLane",
    "LaneService/AddBlocker",
    "LaneService/ResolveBlocker",
    "LaneService/LinkTicket",
    "LaneService/CreateItem",
    "LaneService/ApproveItem",
    "LaneService/DenyItem",
    "LaneService/ResumeItem",
    "LaneService/CancelItem",
    "LaneService/RetryItem",
    "WorkCoordinatorService/ResolvePendingAction",
    "WorkCoordinatorService/AssignChildWork",
    "WorkCoordinatorService/SteerChildWork",
    "WorkCoordinatorService/EscalateChildWork",
    "WorkerService/ReportWorker",
    "WorkerService/Lease",
    "WorkerService/Start",
    "WorkerService/Heartbeat",
    "WorkerService/Complete",
    "WorkerService/Fail",
    "WorkerService/Checkpoint",
    "WorkerService/Release",
    "WorkerService/BatchHeartbeat",
    "WorkerService/BatchComplete",
    "WorkerService/BatchFail",
}


def _name(route: Route) -> str:
    return f"{route.method.containing_service.name}/{route.method.name}"


def test_every_route_is_walked_and_every_method_is_classified() -> None:
    """The walk covers every routed method of the matrix, and every name listed here exists."""
    routed = {_name(route) for route in ROUTES}
    assert routed == set(EXPECTED)
    assert set(KEPT_FOR_KEYS) | HUMAN_WORK <= routed


# ------------------------------------------------------------------------------ the world


@dataclass
class SwitchWorld:
    matrix: authz_world.World
    gateway: RunningGateway
    http: httpx.AsyncClient

    def coordinator(self, which: str) -> str:
        return self.matrix.child if which == "child" else self.matrix.parent


@pytest.fixture(scope="module")
async def switch_world(world: authz_world.World) -> AsyncIterator[SwitchWorld]:
    gateway = await start_gateway_for(world.stack.address)
    http = httpx.AsyncClient(base_url=f"http://{gateway.address}", timeout=30.0)
    try:
        yield SwitchWorld(world, gateway, http)
    finally:
        await http.aclose()
        await gateway.stop()


# Each switch, and the columns it concerns: the parent's switch stops only what acts on the
# GLOBAL parent (its key, and its platform admin acting on the child).
SWITCHES = {"platform": KEYS + HUMANS, "child": KEYS + HUMANS, "parent": "GP"}


async def _set(sw: SwitchWorld, switch: str, *, on: bool) -> None:
    """Flip ``switch`` over REST as a human administrator (the platform admin's token)."""
    admin = rest_matrix._headers(sw.matrix.stack.admin_token)
    if switch == "platform":
        response = await sw.http.patch(
            "/v1/settings",
            params={"updateMask": "workCoordinatorEnabled"},
            json={"workCoordinatorEnabled": on},
            headers=admin,
        )
    else:
        scope = "ORG" if switch == "child" else "GLOBAL"
        response = await sw.http.patch(
            f"/v1/work-coordinators/{sw.coordinator(switch)}",
            params={"updateMask": "enabled"},
            json={"scope": scope, "enabled": on},
            headers=admin,
        )
    assert response.status_code == 200, response.text


def _switched_off(sw: SwitchWorld, switch: str) -> set[str] | None:
    """The coordinators ``switch`` turns off (None: all of them)."""
    return None if switch == "platform" else {sw.coordinator(switch)}


def _targets(request: Message) -> set[str]:
    fields = request.DESCRIPTOR.fields_by_name
    return {
        getattr(request, name)
        for name in ("coordinator_id", "child_id")
        if name in fields and getattr(request, name)
    }


def _touched(sw: SwitchWorld, off: set[str] | None, column: str, name: str, req: Message) -> bool:
    """Whether this call works on a switched-off coordinator: one it names, or (listing the
    coordinators) every one the caller may reach."""
    if off is None:
        return True
    if name == "WorkCoordinatorService/ListWorkCoordinators" and column in LISTED:
        listed = LISTED[column]
        return listed is not None and sw.coordinator(listed) in off
    return bool(_targets(req) & off)


def _while_off(
    sw: SwitchWorld, off: set[str] | None, column: str, name: str, request: Message
) -> set[str]:
    """The letters a cell may answer while ``off`` is switched off."""
    on = EXPECTED[name][authz_table.COLUMNS.index(column)]
    if on not in "AFn":
        # Refused before the switch is looked at; a PERMISSION_DENIED may also become the
        # switch's refusal (a key reading grants), never a NOT_FOUND (no existence oracle).
        return {on, DISABLED} if on == "D" else {on}
    if column in KEYS:
        kept = name in KEPT_FOR_KEYS or not _touched(sw, off, column, name, request)
    else:
        kept = name not in HUMAN_WORK or not _touched(sw, off, column, name, request)
    return {on} if kept else {DISABLED}


# ------------------------------------------------------------------------------ calling


def _rest_letter(response: httpx.Response) -> tuple[str, str]:
    if response.status_code == 503:
        body = response.json()
        reasons = [d.get("reason") for d in body.get("details", []) if d.get("@type") == ERROR_INFO]
        if body.get("code") == 14 and reasons == ["COORDINATION_DISABLED"]:
            return DISABLED, f"HTTP 503 {body.get('message')}"
    return rest_matrix.classify(response)


def _grpc_letter(error: Any) -> str:
    if error is not None and error.reason == "COORDINATION_DISABLED":
        return DISABLED if error.code.name == "UNAVAILABLE" else f"code {error.code.name}"
    return authz_table.outcome(error)


def _close_letter(close: Close | None) -> tuple[str, str]:
    if close is None:
        return "?", "closed without a close frame"
    shown = f"closed {close.code} {close.reason!r}"
    reason = close.reason.split(":", 1)[0]
    if close.code == 1013 and reason == "COORDINATION_DISABLED":
        return DISABLED, shown
    letters = {"UNAUTHENTICATED": "U", "PERMISSION_DENIED": "D", "NOT_FOUND": "N"}
    if close.code == 1008 and reason in letters:
        return letters[reason], shown
    return "?", shown


async def _ws_letter(sw: SwitchWorld, path: str, token: str | None) -> tuple[str, str]:
    """Open the feed at ``path``: ``A`` once its hello frame arrives, else how it closed."""
    url = f"ws://{sw.gateway.address}{path}"
    try:
        async with connect(
            url, additional_headers=rest_matrix._headers(token), open_timeout=10
        ) as socket:
            try:
                async with asyncio.timeout(30):
                    first = json.loads(await socket.recv())
            except ConnectionClosed as closed:
                return _close_letter(closed.rcvd)
            return ("A", "hello") if first.get("type") == "hello" else ("?", str(first)[:200])
    except InvalidStatus as refused:
        return "?", f"handshake refused: HTTP {refused.response.status_code}"


async def _rest(
    sw: SwitchWorld, route: Route, token: str | None, request: Message
) -> tuple[str, str]:
    call = rest_matrix.to_http(route, request)
    if route.streaming:
        return await _ws_letter(sw, call.path, token)
    response = await sw.http.request(
        call.method,
        call.path,
        params=call.query,
        json=call.body,
        headers=rest_matrix._headers(token),
    )
    letter, shown = _rest_letter(response)
    key_listing_orgs = route.method.name == "ListOrgs" and token in _key_tokens(sw)
    if letter == "A" and key_listing_orgs and response.json().get("orgs"):
        return "?", f"a work key listed orgs: {response.text[:200]}"
    return letter, shown


def _key_tokens(sw: SwitchWorld) -> set[str | None]:
    return {sw.matrix.tokens[c] for c in KEYS}


async def _grpc(sw: SwitchWorld, route: Route, column: str, request: Message) -> str:
    name = _name(route)
    response_class = authz_table.message_class(route.method.output_type)
    client = sw.matrix.clients[column]
    return _grpc_letter(
        await authz_table.call(client, name, request, response_class, route.streaming)
    )


Cell = tuple[Route, str, Message]


async def _build(sw: SwitchWorld, columns: str) -> list[Cell]:
    """Every route x column with its request, built while coordination is on (the builders
    create the lanes, leases and grants the calls name)."""
    cells: list[Cell] = []
    for route in ROUTES:
        for column in columns:
            request = await BUILDERS[_name(route)](sw.matrix, column)
            cells.append((route, column, request))
    return cells


def _cell(route: Route, column: str) -> str:
    return f"{route.http_method} {route.path} ({_name(route)}) x {COLUMN_NAMES[column]} ({column})"


# ------------------------------------------------------------------------------ the tests


@pytest.mark.parametrize("switch", list(SWITCHES))
async def test_off_refuses_every_work_surface_to_work_keys_and_on_restores_it(
    switch_world: SwitchWorld, switch: str
) -> None:
    sw = switch_world
    columns = SWITCHES[switch]
    cells = await _build(sw, columns)
    off = _switched_off(sw, switch)
    wrong: list[str] = []
    await _set(sw, switch, on=False)
    try:
        for route, column, request in cells:
            name = _name(route)
            if name == "AdminService/UpdateSettings" and switch == "platform":
                # The platform admin still changes the settings (here: keeps the switch off).
                request.settings.work_coordinator_enabled = False  # type: ignore[attr-defined]
            allowed = _while_off(sw, off, column, name, request)
            letter, shown = await _rest(sw, route, sw.matrix.tokens[column], request)
            if letter not in allowed:
                wrong.append(f"REST {_cell(route, column)}: expected {allowed}, got {shown}")
            if column in KEYS and "A" not in allowed:
                # A refused call changed nothing, so gRPC can ask the same.
                got = await _grpc(sw, route, column, request)
                if got not in allowed:
                    wrong.append(f"gRPC {_cell(route, column)}: expected {allowed}, got {got}")
    finally:
        await _set(sw, switch, on=True)
    assert wrong == [], "\n".join(wrong)

    # Switched back on over REST by a person: every cell answers as the matrix says again.
    for route, column, request in await _build(sw, columns):
        expected = EXPECTED[_name(route)][authz_table.COLUMNS.index(column)]
        letter, shown = await _rest(sw, route, sw.matrix.tokens[column], request)
        if letter != expected:
            wrong.append(f"back on: REST {_cell(route, column)}: expected {expected}, got {shown}")
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("switch", ["platform", "child"])
async def test_an_open_feed_of_a_work_key_closes_promptly_when_switched_off(
    switch_world: SwitchWorld, switch: str
) -> None:
    """Well before the next ping (15 s), the open WebSocket closes with the switch's reason;
    switched back on, the same key's new feed opens again."""
    sw = switch_world
    path = f"/v1/work-coordinators/{sw.matrix.child}/ws"
    headers = rest_matrix._headers(sw.matrix.tokens["R"])
    async with connect(f"ws://{sw.gateway.address}{path}", additional_headers=headers) as socket:
        assert json.loads(await socket.recv())["type"] == "hello"
        await _set(sw, switch, on=False)
        try:
            closed: Close | None = None
            async with asyncio.timeout(10):
                try:
                    while True:
                        await socket.recv()  # the snapshot, until the close
                except ConnectionClosed as ended:
                    closed = ended.rcvd
            assert _close_letter(closed)[0] == DISABLED, _close_letter(closed)
        finally:
            await _set(sw, switch, on=True)
    assert await _ws_letter(sw, path, sw.matrix.tokens["R"]) == ("A", "hello")
