"""Budgets through MCP and REST (the gateway's JSON): an agent's lane with a 1-dollar budget is
told ``stop BUDGET_EXHAUSTED`` on the third 0.40 $ heartbeat, the read-only ``budget`` tool says
what was used and what is left, and a human raising the budget over REST (PATCH with an update
mask) lets the next lease through."""

from __future__ import annotations

import httpx
import pytest

from tests.support.harness import Stack
from tests.support.mcp_agents import HTTP, STDIO

from .conftest import McpWorld
from .test_work import fenced, lease_one, one_task_lane, run_identity

pytestmark = [pytest.mark.pg, pytest.mark.redis]


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_an_agent_is_stopped_by_its_lanes_budget_and_reads_it(
    world: McpWorld, transport: str
) -> None:
    stack = world.stack
    lane = {**one_task_lane("budgeted"), "budget": {"costMicros": "1000000"}}
    async with world.agent(transport) as agent:
        created = await agent.ok("create_lane", {"coordinatorId": stack.cid, **lane})
        lane_id = created["lane"]["laneId"]
        assert created["lane"]["budget"] == {"costMicros": "1000000"}
        lease = await lease_one(agent, stack, f"agent-budget-{transport}")
        await agent.ok("start_work", fenced(stack, lease, runIdentity=run_identity(stack)))
        answers = [
            await agent.ok("heartbeat", fenced(stack, lease, usage={"costMicros": str(cost)}))
            for cost in (400_000, 800_000, 1_200_000)
        ]
        assert [a.get("stop", {}).get("reason") for a in answers] == [
            None,
            None,
            "BUDGET_EXHAUSTED",
        ]
        # An answer with a stop starts with words saying what to do.
        stopped = await agent.call("heartbeat", fenced(stack, lease))
        assert getattr(stopped.content[0], "text", "").startswith("STOP BUDGET_EXHAUSTED")
        budget = await agent.ok("budget", {"coordinatorId": stack.cid, "laneId": lane_id})
        assert budget["lane"]["spent"] is True
        assert budget["lane"]["costUsedMicros"] == "1200000"
        assert budget["lane"]["costLeftMicros"] == "0"
        assert "cost $1.20 / $1.00" in budget["lane"]["message"]
        assert "costLimitMicros" not in budget["workCoordinator"]  # no day budget
        await agent.ok("release_work", fenced(stack, lease, reason="BUDGET_EXHAUSTED"))
        assert (await agent.ok("lease_work", _ask(stack, transport))).get("leases", []) == []

        base = f"http://{world.gateways[0]}/v1/work-coordinators/{stack.cid}"
        async with httpx.AsyncClient(timeout=30.0) as rest:
            human = {"Authorization": f"Bearer {stack.admin_token}"}
            key = {"Authorization": f"Bearer {stack.key_secret}"}
            raise_it = {"budget": {"costMicros": "2000000"}}
            refused = await rest.patch(
                f"{base}/lanes/{lane_id}",
                json=raise_it,
                params={"updateMask": "budget"},
                headers=key,
            )
            assert refused.status_code == 403, refused.text
            assert "lane.budget" in refused.text
            raised = await rest.patch(
                f"{base}/lanes/{lane_id}",
                json=raise_it,
                params={"updateMask": "budget"},
                headers=human,
            )
            assert raised.status_code == 200, raised.text
            assert raised.json()["budget"] == {"costMicros": "2000000"}
            read = await rest.get(f"{base}/budget", params={"laneId": lane_id}, headers=key)
            assert read.status_code == 200, read.text
            assert read.json()["lane"]["costLeftMicros"] == "800000"
            assert "spent" not in read.json()["lane"]  # false: omitted
        again = await agent.ok("lease_work", _ask(stack, transport))
        assert again["leases"][0]["item"]["laneId"] == lane_id


def _ask(stack: Stack, transport: str) -> dict[str, object]:
    return {
        "coordinatorId": stack.cid,
        "workerId": f"agent-budget-{transport}",
        "workerClass": "machine",
        "maxItems": 1,
        "leaseSeconds": 30,
    }
