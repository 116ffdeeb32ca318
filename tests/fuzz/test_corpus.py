"""Every bad input kept under ``corpus/`` answers 400 / INVALID_ARGUMENT naming a field, over
REST (through the gateway) and over gRPC (the same request, as the gateway would send it),
never a 500 and never a partial write.

A corpus file is ``<METHOD> <path>``, ``field: <the field the refusal must name>``, a blank
line, then the raw JSON body (kept raw: ``NaN``, ``1e400`` and ``\\u0000`` must reach the
server as a client would send them). ``{cid}``, ``{org}`` and ``{lane}`` in the path or body are
the test's work coordinator, org and lane. Add a file for each bad input found; the test picks
it up. It runs one coordinator on SQLite in process: fast enough for the normal suite.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest

from tests.support.databases import SqliteDatabases
from tests.support.harness import Stack, start_gateway_for, start_stack, task
from workcoord.api.v1 import lane_pb2
from workcoord.gateway.routes import load_routes
from workcoord.gateway.server import RunningGateway
from workcoord.gateway.transcode import build_request, parse_json_body
from workcoord.kit.errors import Code, InvalidArgument, WorkcoordError
from workcoord.kit.status import error_from_rpc
from workcoord.kit.validation import MAX_JSON_DEPTH

CORPUS = Path(__file__).parent / "corpus"
ROUTES = load_routes()


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    field: str
    body: str


def _load(path: Path) -> Case:
    request_line, field_line, blank, *rest = path.read_text(encoding="utf-8").split("\n")
    method, target = request_line.split(" ", 1)
    assert field_line.startswith("field: ") and blank == "", path
    return Case(path.stem, method, target, field_line.removeprefix("field: "), "\n".join(rest))


CASES = sorted((_load(p) for p in CORPUS.glob("*.http")), key=lambda c: c.name)


@dataclass
class World:
    stack: Stack
    gateway: RunningGateway
    lane_id: str

    def fill(self, text: str) -> str:
        return (
            text.replace("{cid}", self.stack.cid)
            .replace("{org}", self.stack.org)
            .replace("{lane}", self.lane_id)
        )


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    url = await SqliteDatabases(tmp_path).create()
    stack = await start_stack("sqlite", url, None)
    gateway = await start_gateway_for(stack.address)
    try:
        lane = await stack.create_lane(task("a"), client=stack.admin)
        yield World(stack, gateway, lane.lane_id)
    finally:
        await gateway.stop()
        await stack.close()


def _named(fields: list[str], expected: str) -> bool:
    return any(f == expected or f.startswith((f"{expected}.", f"{expected}[")) for f in fields)


async def _rest(world: World, case: Case) -> None:
    path = world.fill(case.path)
    async with httpx.AsyncClient(base_url=f"http://{world.gateway.address}") as http:
        response = await http.request(
            case.method,
            path,
            content=world.fill(case.body).encode() if case.body else None,
            headers={
                "Authorization": f"Bearer {world.stack.admin_token}",
                "Content-Type": "application/json",
            },
        )
    assert response.status_code == 400, f"{case.name}: {response.status_code} {response.text}"
    body = response.json()
    assert body["code"] == Code.INVALID_ARGUMENT
    fields = [
        v["field"]
        for d in body.get("details", [])
        if d.get("@type", "").endswith("BadRequest")
        for v in d.get("fieldViolations", [])
    ]
    assert _named(fields, case.field), f"{case.name}: {fields} {body}"


async def _grpc(world: World, case: Case) -> None:
    """The request the gateway would send, sent over gRPC (when REST can express it at all)."""
    raw_path, _, query = world.fill(case.path).partition("?")
    match, _ = ROUTES.resolve(case.method, raw_path)
    assert match is not None, case.name
    pairs = [tuple(p.split("=", 1)) for p in query.split("&") if p]
    params: list[tuple[str, str]] = [(k, httpx.QueryParams(f"v={v}")["v"]) for k, v in pairs]
    try:
        request = build_request(
            match.route, match.path_values, params, parse_json_body(world.fill(case.body).encode())
        )
    except InvalidArgument as refused:
        # Refused while reading JSON (an offset of +25:00): nothing a gRPC client could send.
        assert _named([v.field for v in refused.field_violations], case.field), case.name
        return
    channel = grpc.aio.insecure_channel(world.stack.address)
    try:
        call: Any = channel.unary_unary(
            match.route.full_method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=match.route.response_class.FromString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(request, metadata=(("authorization", f"Bearer {world.stack.admin_token}"),))
    finally:
        await channel.close()
    error: WorkcoordError = error_from_rpc(caught.value)
    assert error.code == Code.INVALID_ARGUMENT, f"{case.name}: {error!r}"
    assert _named([v.field for v in error.field_violations], case.field), f"{case.name}: {error}"


def test_the_corpus_is_there() -> None:
    assert len(CASES) >= 15


async def test_every_bad_input_is_refused_naming_its_field(world: World) -> None:
    for case in CASES:
        await _rest(world, case)
        await _grpc(world, case)
    # Nothing was written by any of them: the one lane of the set-up is still the only one.
    lanes = await world.stack.admin.lanes.ListLanes(
        lane_pb2.ListLanesRequest(coordinator_id=world.stack.cid)
    )
    assert len(lanes.lanes) == 1


def _nested(levels: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    assert isinstance(value, dict)
    return value


async def test_free_form_json_too_deep_is_refused_over_grpc_too(world: World) -> None:
    """What the gateway refuses while reading JSON, a gRPC client meets at the coordinator:
    decodable but over the limit (the field rules), or past what protobuf decodes at all."""
    lane = await world.stack.create_lane(task("a"), client=world.stack.admin)
    channel = grpc.aio.insecure_channel(world.stack.address)
    try:
        call: Any = channel.unary_unary(
            "/workcoord.api.v1.LaneService/CreateItem",
            request_serializer=lambda raw: raw,
            response_deserializer=lane_pb2.CreateItemResponse.FromString,
        )

        def item(levels: int) -> bytes:
            request = lane_pb2.CreateItemRequest(
                coordinator_id=world.stack.cid, lane_id=lane.lane_id, item=task("b")
            )
            request.item.inputs.update(_nested(levels))
            raw: bytes = request.SerializeToString()
            return raw

        metadata = (("authorization", f"Bearer {world.stack.admin_token}"),)
        for levels, field in ((MAX_JSON_DEPTH + 1, "item.inputs"), (40, "")):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call(item(levels), metadata=metadata)
            error = error_from_rpc(caught.value)
            assert error.code == Code.INVALID_ARGUMENT, f"{levels}: {error!r}"
            assert [v.field for v in error.field_violations] == ([field] if field else [])
        created = await call(item(MAX_JSON_DEPTH), metadata=metadata)
        assert created.item.key == "b"
    finally:
        await channel.close()


async def test_a_flood_of_violations_stays_a_400(world: World) -> None:
    """10,000 bad fields in one request: the status names the first few and counts the rest,
    where the whole list overflowed gRPC's trailers and came back 429 with gRPC's text."""
    items = [
        {"key": f"k{i}", "workerClass": "machine", "dependsOn": ["!"] * 100} for i in range(100)
    ]
    body = {"title": "t", "template": "CUSTOM", "items": items}
    async with httpx.AsyncClient(base_url=f"http://{world.gateway.address}") as http:
        response = await http.post(
            f"/v1/work-coordinators/{world.stack.cid}/lanes",
            json=body,
            headers={"Authorization": f"Bearer {world.stack.admin_token}"},
        )
    assert response.status_code == 400, response.text
    details = response.json()["details"]
    info = next(d for d in details if d["@type"].endswith("ErrorInfo"))
    bad = next(d for d in details if d["@type"].endswith("BadRequest"))
    shown = len(bad["fieldViolations"])
    assert bad["fieldViolations"][0]["field"] == "lane.items[0].depends_on[0]"
    assert int(info["metadata"]["omittedViolations"]) == 100 * 100 - shown
    assert len(response.content) < 8192
