"""What MCP refuses, and how: the same validation, errors and authorization as REST and gRPC.

Bad input answers a tool error naming the field, with the very ``google.rpc.Status`` JSON REST
answers for the same input; no credential (or an unknown or revoked one) answers HTTP 401
before the MCP layer; the coordinator authorizes every call.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.support.harness import event_type, task
from tests.support.mcp_agents import HTTP, HTTP_LEGACY, STDIO, error_metadata, reason, violated
from workcoord.api.v1 import admin_pb2, lane_pb2

from .conftest import McpWorld

pytestmark = [pytest.mark.pg, pytest.mark.redis]

Capability = admin_pb2.WorkKey.Capability

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
_MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


async def new_key(world: McpWorld, *capabilities: Any) -> tuple[str, str]:
    """A fresh work key on the stack's coordinator: its id and its secret."""
    response = await world.stack.admin.admin.CreateWorkKey(
        admin_pb2.CreateWorkKeyRequest(
            work_key=admin_pb2.WorkKey(
                display_name="mcp-agent",
                org_slug=world.stack.org,
                coordinator_ids=[world.stack.cid],
                capabilities=list(capabilities or (Capability.READ, Capability.LEASE)),
            )
        )
    )
    return response.key_id, response.secret


# ------------------------------------------------------------------ bad input, as REST


# (what is wrong, the Lease request over MCP, the fields named)
BAD_LEASES: list[tuple[str, dict[str, Any], set[str]]] = [
    ("out of range", {"workerId": "w", "workerClass": "machine", "leaseSeconds": 1}, set()),
    ("unknown field", {"workerId": "w", "workerClass": "machine", "bogus": 1}, {"bogus"}),
    ("wrong type", {"workerId": "w", "workerClass": "machine", "maxItems": "many"}, set()),
    ("missing", {"workerClass": "machine", "maxItems": 1, "leaseSeconds": 30}, {"worker_id"}),
    (
        "not an object",
        {"workerId": "w", "workerClass": "machine", "runIdentity": "me"},
        {"run_identity"},
    ),
]


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_bad_input_names_the_field_exactly_as_rest_does(
    world: McpWorld, transport: str
) -> None:
    stack = world.stack
    url = f"http://{world.gateways[0]}/v1/work-coordinators/{stack.cid}/leases"
    headers = {"Authorization": f"Bearer {stack.key_secret}"}
    async with (
        world.agent(transport) as agent,
        httpx.AsyncClient(headers=headers, timeout=30.0) as rest,
    ):
        for what, body, fields in BAD_LEASES:
            refused = await agent.error("lease_work", {"coordinatorId": stack.cid, **body})
            assert reason(refused) == "INVALID_ARGUMENT", what
            over_rest = await rest.post(url, json=body)
            assert over_rest.status_code == 400, what
            assert refused == over_rest.json(), what
            if fields:
                assert violated(refused) == fields, what
        # The range and type errors name the field too (their wording is json_format's).
        out_of_range = await agent.error(
            "lease_work", {"coordinatorId": stack.cid, **BAD_LEASES[0][1]}
        )
        assert "lease_seconds" in violated(out_of_range)
        wrong_type = await agent.error(
            "lease_work", {"coordinatorId": stack.cid, **BAD_LEASES[2][1]}
        )
        assert violated(wrong_type) == {"max_items"}
        too_big = await agent.error(
            "checkpoint_work",
            {
                "coordinatorId": stack.cid,
                "leaseId": "ls_unknown",
                "leaseToken": "t",
                "checkpoint": {"summary": "x" * 4000, "filesChanged": ["f" * 1000] * 8},
            },
        )
        assert violated(too_big) == {"checkpoint"}
        with pytest.raises(MCPError, match="unknown tool"):
            await agent.call("approve_item", {"coordinatorId": stack.cid})


# ------------------------------------------------------------------ credentials over HTTP


async def test_no_or_an_unknown_credential_answers_401_before_any_session(
    world: McpWorld,
) -> None:
    url = f"http://{world.gateways[0]}/mcp"
    async with httpx.AsyncClient(timeout=30.0) as http:
        for headers in (
            {},
            {"Authorization": "Basic dXNlcjpwYXNz"},
            {"Authorization": "Bearer wck_not_a_key"},
        ):
            answered = await http.post(url, json=_INITIALIZE, headers={**_MCP_HEADERS, **headers})
            assert answered.status_code == 401, headers
            assert answered.headers["www-authenticate"].startswith("Bearer")
            assert "mcp-session-id" not in answered.headers
            body = answered.json()
            assert body["error"]["message"].startswith("UNAUTHENTICATED: ")
            assert reason(body["error"]["data"]) == "UNAUTHENTICATED"
        opened = await http.get(url, headers=_MCP_HEADERS)
        assert opened.status_code == 401
        # Stateless: with a credential, GET (a server stream) and DELETE (a session) are 405.
        credential = {**_MCP_HEADERS, "Authorization": f"Bearer {world.stack.key_secret}"}
        for verb in ("GET", "DELETE"):
            refused = await http.request(verb, url, headers=credential)
            assert (refused.status_code, refused.headers["allow"]) == (405, "POST"), verb
        # With the credential the same request initializes (and still opens no session).
        welcomed = await http.post(
            url,
            json=_INITIALIZE,
            headers={**credential, "X-Request-Id": "req-42"},
        )
        assert welcomed.status_code == 200, welcomed.text
        assert welcomed.headers["x-request-id"] == "req-42"
        assert welcomed.json()["result"]["serverInfo"]["name"] == "workcoord"
        assert "mcp-session-id" not in welcomed.headers

    for legacy in (False, True):
        with pytest.raises(Exception) as caught:
            async with world.agent(HTTP_LEGACY if legacy else HTTP, token="wck_not_a_key"):
                pass
        assert "UNAUTHENTICATED" in _messages(caught.value)


def _messages(error: BaseException) -> str:
    """Every message inside ``error`` (the SDK raises exception groups from its task groups)."""
    if isinstance(error, BaseExceptionGroup):
        return " ".join(_messages(inner) for inner in error.exceptions)
    return str(error)


# ------------------------------------------------------------------ revocation, authorization


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_a_key_revoked_mid_session_is_refused_at_the_next_call(
    world: McpWorld, transport: str
) -> None:
    key_id, secret = await new_key(world)
    args = {"coordinatorId": world.stack.cid}
    async with world.agent(transport, token=secret) as agent:
        await agent.ok("view", args)
        await world.stack.admin.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=key_id))
        if transport == STDIO:
            refused = await agent.error("view", args)
            assert (refused["code"], reason(refused)) == (16, "UNAUTHENTICATED")
        else:
            # Over HTTP the gateway answers 401 before the MCP layer.
            with pytest.raises(MCPError, match="UNAUTHENTICATED"):
                await agent.call("view", args)


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_the_coordinator_authorizes_every_call(world: McpWorld, transport: str) -> None:
    _, read_only = await new_key(world, Capability.READ)
    other = await world.stack.new_coordinator()
    async with world.agent(transport, token=read_only) as agent:
        await agent.ok("view", {"coordinatorId": world.stack.cid})
        denied = await agent.error(
            "lease_work",
            {
                "coordinatorId": world.stack.cid,
                "workerId": "w",
                "workerClass": "machine",
                "maxItems": 1,
                "leaseSeconds": 30,
            },
        )
        assert (denied["code"], reason(denied)) == (7, "PERMISSION_DENIED")
        elsewhere = await agent.error("view", {"coordinatorId": other})
        assert reason(elsewhere) in {"PERMISSION_DENIED", "NOT_FOUND"}
        listed = await agent.ok("work_coordinators", {})
        assert [c["coordinatorId"] for c in listed["workCoordinators"]] == [world.stack.cid]


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_a_key_revoked_while_lease_work_waits_gets_nothing(
    world: McpWorld, transport: str
) -> None:
    """lease_work is the coordinator's Lease: a wait ends with the authority the key has at
    the claim (before, the revoked key was handed the item and its inputs)."""
    stack = world.stack
    key_id, secret = await new_key(world)
    worker_id = f"mcp-poller-{transport}"
    arguments = {
        "coordinatorId": stack.cid,
        "workerId": worker_id,
        "workerClass": "machine",
        "maxItems": 1,
        "leaseSeconds": 30,
        "waitSeconds": 60,
    }
    async with world.agent(transport, token=secret) as agent:
        waiting = asyncio.create_task(agent.call("lease_work", arguments))
        await stack.until_asked(worker_id, waiting)
        await stack.admin.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=key_id))
        lane = await stack.create_lane(task("a", inputs={"deploy_token": "private"}))
        result = await asyncio.wait_for(waiting, 30)
    assert result.is_error, result.structured_content
    assert result.structured_content is not None
    assert reason(result.structured_content) == "UNAUTHENTICATED"
    assert (await stack.get_item(lane.items[0])).state == lane_pb2.Item.QUEUED
    assert "ITEM_LEASED" not in [event_type(e) for e in await stack.events()]


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_an_agent_may_not_create_a_lane_that_ships_without_approval(
    world: McpWorld, transport: str
) -> None:
    """The one policy rule holds over MCP too: the work key's STANDARD lane that would ship
    without a human's approval is refused, naming the field, and nothing is created."""
    stack = world.stack
    lane = {
        "title": "Fix the parser",
        "template": "STANDARD",
        "reviewPolicy": {"shipRequiresApproval": False},
    }
    async with world.agent(transport) as agent:
        refused = await agent.error("create_lane", {"coordinatorId": stack.cid, "lane": lane})
    assert (refused["code"], reason(refused)) == (7, "PERMISSION_DENIED")
    field = "lane.review_policy.ship_requires_approval"
    assert error_metadata(refused)["field"] == field
    assert field in refused["message"]
    listed = await stack.admin.lanes.ListLanes(lane_pb2.ListLanesRequest(coordinator_id=stack.cid))
    assert list(listed.lanes) == []


# ------------------------------------------------------------------ workcoord mcp start-up


async def test_workcoord_mcp_refuses_to_start_without_a_known_credential(
    world: McpWorld,
) -> None:
    for token, exit_code, said in (
        (None, 2, "WORKCOORD_TOKEN"),
        ("wck_not_a_key", 1, "UNAUTHENTICATED"),
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("WORKCOORD_")}
        env["WORKCOORD_ADDRESS"] = world.stack.address
        if token is not None:
            env["WORKCOORD_TOKEN"] = token
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "workcoord.cli.main",
            "mcp",
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(b""), timeout=120)
        assert process.returncode == exit_code, stderr
        assert stdout == b""  # stdout is the protocol's: errors go to stderr
        assert said in stderr.decode()
        if token is not None:
            assert token not in stderr.decode()
