"""Who reads the private bodies of the work: a lane's and an item's inputs and the checkpoint an
attempt ended with. GetLane and GetItem give them to those who decide (platform admins, the
org's admins), over gRPC and REST alike; an org viewer and a work key see only that they
exist (``inputsRedacted``, ``checkpointRedacted``); the view, the events and a parent's
summary never carry them, whoever reads.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from google.protobuf import json_format, struct_pb2

from tests.integration import authz_world
from tests.support.harness import identity, start_gateway_for, task
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.gateway.server import RunningGateway

pytestmark = [pytest.mark.pg, pytest.mark.redis, pytest.mark.xdist_group(name="private-bodies")]

world = authz_world.world
L = lane_pb2
K = worker_pb2
W = work_coordinator_pb2

READS_BODIES = ("P", "A")  # platform admin, org admin
SEES_MARKERS = ("V", "R")  # org viewer, a work key with READ


@dataclass
class Planted:
    marker: str
    lane_id: str
    item_id: str
    lease_id: str


def struct(data: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(data)
    return out


@pytest.fixture(scope="module")
async def planted(world: authz_world.World) -> Planted:
    """A lane with inputs whose item (with inputs) ended its first attempt with a checkpoint."""
    marker = f"private-{secrets.token_hex(6)}"
    lane = L.Lane(
        title="bodies",
        template=L.Lane.CUSTOM,
        inputs=struct({"repo": f"{marker}-lane"}),
        items=[task("a", "codex", inputs={"prompt": f"{marker}-item"})],
    )
    create = L.CreateLaneRequest(coordinator_id=world.child, lane=lane)
    created = (await world.admin.lanes.CreateLane(create)).lane
    request = K.LeaseRequest(
        coordinator_id=world.child,
        worker_id="bodies",
        worker_class="codex",
        max_items=1,
        lease_seconds=300,
        run_identity=identity(world.stack.clock),
    )
    (lease,) = (await world.full_key.workers.Lease(request)).leases
    assert lease.item.lane_id == created.lane_id
    checkpoint = L.Checkpoint(
        summary=f"{marker}-summary", files_changed=[f"{marker}.py"], next_action="finish the tests"
    )
    await world.full_key.workers.Checkpoint(
        K.CheckpointRequest(
            coordinator_id=world.child,
            lease_id=lease.lease_id,
            lease_token=lease.lease_token,
            checkpoint=checkpoint,
        )
    )
    return Planted(marker, created.lane_id, created.items[0].item_id, lease.lease_id)


@dataclass
class Rest:
    gateway: RunningGateway
    http: httpx.AsyncClient


@pytest.fixture(scope="module")
async def rest(world: authz_world.World) -> AsyncIterator[Rest]:
    gateway = await start_gateway_for(world.stack.address)
    http = httpx.AsyncClient(base_url=f"http://{gateway.address}", timeout=30.0)
    try:
        yield Rest(gateway, http)
    finally:
        await http.aclose()
        await gateway.stop()


async def grpc_lane(world: authz_world.World, column: str, planted: Planted) -> dict[str, Any]:
    answer = await world.clients[column].lanes.GetLane(
        L.GetLaneRequest(coordinator_id=world.child, lane_id=planted.lane_id)
    )
    return json_format.MessageToDict(answer.lane)


async def grpc_item(world: authz_world.World, column: str, planted: Planted) -> dict[str, Any]:
    answer = await world.clients[column].lanes.GetItem(
        L.GetItemRequest(
            coordinator_id=world.child, lane_id=planted.lane_id, item_id=planted.item_id
        )
    )
    return json_format.MessageToDict(answer.item)


async def rest_get(rest: Rest, world: authz_world.World, column: str, path: str) -> Any:
    token = world.tokens[column]
    answer = await rest.http.get(path, headers={"authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()


def lane_path(world: authz_world.World, planted: Planted) -> str:
    return f"/v1/work-coordinators/{world.child}/lanes/{planted.lane_id}"


def assert_bodies(lane: dict[str, Any], item: dict[str, Any], planted: Planted) -> None:
    marker = planted.marker
    assert lane["inputs"] == {"repo": f"{marker}-lane"}
    assert "inputsRedacted" not in lane
    for shown in (lane["items"][0], item):
        assert shown["inputs"] == {"prompt": f"{marker}-item"}
        assert "inputsRedacted" not in shown
        [attempt] = shown["attempts"]
        assert attempt["status"] == "CHECKPOINTED"
        assert attempt["checkpoint"] == {
            "summary": f"{marker}-summary",
            "filesChanged": [f"{marker}.py"],
            "nextAction": "finish the tests",
        }
        assert "checkpointRedacted" not in attempt


def assert_markers(lane: dict[str, Any], item: dict[str, Any], planted: Planted) -> None:
    assert planted.marker not in json.dumps([lane, item])
    assert lane["inputsRedacted"] is True
    assert "inputs" not in lane
    for shown in (lane["items"][0], item):
        assert shown["inputsRedacted"] is True
        assert "inputs" not in shown
        [attempt] = shown["attempts"]
        assert attempt["checkpointRedacted"] is True
        assert "checkpoint" not in attempt


@pytest.mark.parametrize("column", READS_BODIES)
async def test_those_who_decide_read_the_inputs_and_checkpoints_over_grpc(
    world: authz_world.World, planted: Planted, column: str
) -> None:
    lane = await grpc_lane(world, column, planted)
    item = await grpc_item(world, column, planted)
    assert_bodies(lane, item, planted)


@pytest.mark.parametrize("column", READS_BODIES)
async def test_those_who_decide_read_the_inputs_and_checkpoints_over_rest(
    world: authz_world.World, planted: Planted, rest: Rest, column: str
) -> None:
    path = lane_path(world, planted)
    lane = await rest_get(rest, world, column, path)
    item = await rest_get(rest, world, column, f"{path}/items/{planted.item_id}")
    assert_bodies(lane, item, planted)


@pytest.mark.parametrize("column", SEES_MARKERS)
async def test_viewers_and_work_keys_see_only_that_they_exist_over_grpc(
    world: authz_world.World, planted: Planted, column: str
) -> None:
    lane = await grpc_lane(world, column, planted)
    item = await grpc_item(world, column, planted)
    assert_markers(lane, item, planted)


@pytest.mark.parametrize("column", SEES_MARKERS)
async def test_viewers_and_work_keys_see_only_that_they_exist_over_rest(
    world: authz_world.World, planted: Planted, rest: Rest, column: str
) -> None:
    path = lane_path(world, planted)
    lane = await rest_get(rest, world, column, path)
    item = await rest_get(rest, world, column, f"{path}/items/{planted.item_id}")
    assert_markers(lane, item, planted)


@pytest.mark.parametrize("column", ("P", "A", "V", "R"))
async def test_views_lists_events_and_summaries_never_carry_them(
    world: authz_world.World, planted: Planted, rest: Rest, column: str
) -> None:
    base = f"/v1/work-coordinators/{world.child}"
    texts = [
        json.dumps(await rest_get(rest, world, column, f"{base}/view")),
        json.dumps(await rest_get(rest, world, column, f"{base}/lanes")),
        json.dumps(await rest_get(rest, world, column, f"{base}/events?pageSize=500")),
    ]
    for text in texts:
        assert planted.marker not in text
        assert "inputsRedacted" not in text and "checkpointRedacted" not in text
    summary = await world.clients["G"].coordinators.GetChildSummary(
        W.GetChildSummaryRequest(coordinator_id=world.parent, child_id=world.child)
    )
    assert planted.marker not in str(summary)
