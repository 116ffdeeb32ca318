"""An agent's whole job through MCP, over every transport, against the real services.

The HTTP agents reach two gateways in turn (:mod:`.agents`), so these tests also show that a
session needs no gateway affinity.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests.integration.tenancy.world import switch_off
from tests.support import rest
from tests.support.harness import Stack, all_events, event_type, task
from tests.support.mcp_agents import (
    HTTP,
    HTTP_LEGACY,
    STDIO,
    STDIO_MODERN,
    TRANSPORTS,
    Agent,
    error_metadata,
    reason,
)

from .conftest import McpWorld

pytestmark = [pytest.mark.pg, pytest.mark.redis]


def run_identity(stack: Stack) -> dict[str, Any]:
    """A run identity in proto3 JSON, started at the server's current time."""
    return rest.run_identity(stack.clock.now(), engine="claude", pid="4242")


def one_task_lane(title: str) -> dict[str, Any]:
    return {
        "title": title,
        "template": "CUSTOM",
        "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}],
    }


EVIDENCE = {"summary": "parser fixed", "checks": [{"name": "pytest", "status": "PASSED"}]}


async def lease_one(agent: Agent, stack: Stack, worker_id: str, **extra: Any) -> dict[str, Any]:
    leased = await agent.ok(
        "lease_work",
        {
            "coordinatorId": stack.cid,
            "workerId": worker_id,
            "workerClass": "machine",
            "maxItems": 1,
            "leaseSeconds": 30,
            **extra,
        },
    )
    (lease,) = leased["leases"]
    assert isinstance(lease, dict)
    return lease


def fenced(stack: Stack, lease: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The arguments of a fenced write of ``lease``."""
    return {
        "coordinatorId": stack.cid,
        "leaseId": lease["leaseId"],
        "leaseToken": lease["leaseToken"],
        **extra,
    }


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_whole_job_list_lease_start_heartbeat_complete(
    world: McpWorld, transport: str
) -> None:
    stack = world.stack
    async with world.agent(transport) as agent:
        listed = await agent.ok("work_coordinators", {})
        assert [c["coordinatorId"] for c in listed["workCoordinators"]] == [stack.cid]
        created = await agent.ok(
            "create_lane", {"coordinatorId": stack.cid, **one_task_lane("Fix the parser")}
        )
        lane = created["lane"]
        lease = await lease_one(agent, stack, "agent-7")
        assert lease["item"]["laneId"] == lane["laneId"]
        assert lease["status"] == "LEASED"
        started = await agent.ok(
            "start_work", fenced(stack, lease, runIdentity=run_identity(stack))
        )
        assert started["attempt"]["status"] == "RUNNING"
        assert started["attempt"]["runIdentity"]["agentId"] == "agent-7"
        beat = await agent.ok("heartbeat", fenced(stack, lease, progress="tests 40/120"))
        assert beat["leaseExpireTime"]
        done = await agent.ok("complete_work", fenced(stack, lease, evidence=EVIDENCE))
        assert done["attempt"]["status"] == "COMPLETED"
        view = await agent.ok("view", {"coordinatorId": stack.cid})
        (viewed,) = [v for v in view["view"]["lanes"] if v["laneId"] == lane["laneId"]]
        assert [item["state"] for item in viewed["items"]] == ["SUCCEEDED"]
        why = await agent.ok("why", {"coordinatorId": stack.cid, "itemId": lease["item"]["itemId"]})
        assert why["explanation"]["state"] == "SUCCEEDED"

    # Nothing secret comes back beyond the lease token the lease itself handed out.
    for body in (listed, created, started, beat, done, view, why):
        text = json.dumps(body)
        assert lease["leaseToken"] not in text
        assert stack.key_secret not in text
    if transport in (STDIO, STDIO_MODERN):
        log = world.stderr_log.read_text() if world.stderr_log.exists() else ""
        assert stack.key_secret not in log
        assert lease["leaseToken"] not in log
    else:
        # Stateless: no session id was ever issued, and both gateways served the session.
        assert agent.balancer is not None
        assert agent.balancer.session_ids == []
        assert set(agent.balancer.served) == set(world.gateways)


async def test_the_same_job_over_rest_records_the_same_events(world: McpWorld) -> None:
    stack = world.stack
    async with world.agent(HTTP_LEGACY) as agent:
        lane = await agent.ok("create_lane", {"coordinatorId": stack.cid, **one_task_lane("job")})
        mcp_lane = lane["lane"]["laneId"]
        lease = await lease_one(agent, stack, "mcp-worker")
        await agent.ok("start_work", fenced(stack, lease, runIdentity=run_identity(stack)))
        await agent.ok("heartbeat", fenced(stack, lease, progress="half way"))
        await agent.ok("complete_work", fenced(stack, lease, evidence=EVIDENCE))

    base = f"http://{world.gateways[0]}/v1/work-coordinators/{stack.cid}"
    headers = {"Authorization": f"Bearer {stack.key_secret}"}
    async with httpx.AsyncClient(headers=headers, timeout=30.0) as rest:
        created = await rest.post(f"{base}/lanes", json=one_task_lane("job"))
        assert created.status_code == 200, created.text
        rest_lane = created.json()["laneId"]
        leased = await rest.post(
            f"{base}/leases",
            json={
                "workerId": "rest-worker",
                "workerClass": "machine",
                "maxItems": 1,
                "leaseSeconds": 30,
            },
        )
        (rest_lease,) = leased.json()["leases"]
        at = f"{base}/leases/{rest_lease['leaseId']}"
        token = rest_lease["leaseToken"]
        for verb, body in (
            ("start", {"runIdentity": run_identity(stack)}),
            ("heartbeat", {"progress": "half way"}),
            ("complete", {"evidence": EVIDENCE}),
        ):
            answered = await rest.post(f"{at}/{verb}", json={"leaseToken": token, **body})
            assert answered.status_code == 200, answered.text

    events = await all_events(stack.admin, stack.cid)

    def story(lane_id: str) -> list[tuple[str, str, list[str]]]:
        return [
            (event_type(e), e.actor, sorted(e.data.keys())) for e in events if e.lane_id == lane_id
        ]

    mcp_story = story(mcp_lane)
    assert [kind for kind, _, _ in mcp_story] == [
        "LANE_CREATED",
        "ITEM_CREATED",
        "ITEM_QUEUED",
        "ITEM_LEASED",
        "ITEM_STARTED",
        "ITEM_SUCCEEDED",
        "LANE_DONE",
    ]
    assert mcp_story == story(rest_lane)


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_a_stale_token_is_fenced_with_its_cause(world: McpWorld, transport: str) -> None:
    stack = world.stack
    await stack.create_lane(task("a"), task("b"))
    async with world.agent(transport) as agent:
        expiring = await lease_one(agent, stack, "agent-7", leaseSeconds=5)
        await agent.ok("start_work", fenced(stack, expiring, runIdentity=run_identity(stack)))
        stack.clock.advance(timedelta(seconds=30))
        lost = await agent.error("heartbeat", fenced(stack, expiring))
        assert (lost["code"], reason(lost), error_metadata(lost)) == (
            10,
            "LEASE_LOST",
            {"cause": "expired"},
        )
        finished = await lease_one(agent, stack, "agent-7")
        await agent.ok("start_work", fenced(stack, finished, runIdentity=run_identity(stack)))
        await agent.ok("complete_work", fenced(stack, finished, evidence=EVIDENCE))
        late = await agent.error("heartbeat", fenced(stack, finished))
        assert (reason(late), error_metadata(late)) == ("LEASE_LOST", {"cause": "terminal"})
        again = await agent.error("complete_work", fenced(stack, finished, evidence=EVIDENCE))
        assert reason(again) == "LEASE_LOST"


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_off_answers_coordination_disabled_and_on_resumes(
    world: McpWorld, transport: str
) -> None:
    stack = world.stack
    await stack.create_lane(task("a"))
    async with world.agent(transport) as agent:
        await switch_off(stack, "coordinator")
        for tool, arguments in (
            (
                "lease_work",
                {
                    "coordinatorId": stack.cid,
                    "workerId": "w",
                    "workerClass": "machine",
                    "maxItems": 1,
                    "leaseSeconds": 30,
                },
            ),
            ("view", {"coordinatorId": stack.cid}),
            ("create_lane", {"coordinatorId": stack.cid, **one_task_lane("x")}),
        ):
            refused = await agent.error(tool, arguments)
            assert (refused["code"], reason(refused)) == (14, "COORDINATION_DISABLED"), tool
        await switch_off(stack, "coordinator", on=True)
        await lease_one(agent, stack, "w")
