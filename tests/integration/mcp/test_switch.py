"""MCP and the switch: with coordination switched off (the platform, or the only work coordinator
of the agent's key), ``tools/list`` answers the JSON-RPC error ``COORDINATION_DISABLED: …``
(data: the ``google.rpc.Status`` JSON) and every tool of ``kit/mcp_tools.py`` answers a tool
error whose status is UNAVAILABLE with the reason COORDINATION_DISABLED; a person's token still
lists the tools and reads. Switched back on, the same session lists and works again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.integration.tenancy.world import switch_off
from tests.support.harness import Stack, task
from tests.support.mcp_agents import HTTP, STDIO, Agent, reason
from workcoord.kit.mcp_tools import TOOL_RPCS, mcp_tools

from .conftest import McpWorld
from .test_work import EVIDENCE, fenced, lease_one, one_task_lane, run_identity

pytestmark = [pytest.mark.pg, pytest.mark.redis]

Arguments = Callable[[Stack, dict[str, Any]], dict[str, Any]]

# Valid arguments of every tool (``lease``: a live lease of the agent's key), so that only the
# switch can refuse them.
ARGUMENTS: dict[str, Arguments] = {
    "work_coordinators": lambda stack, lease: {},
    "lease_work": lambda stack, lease: {
        "coordinatorId": stack.cid,
        "workerId": "agent-off",
        "workerClass": "machine",
        "maxItems": 1,
        "leaseSeconds": 30,
    },
    "start_work": lambda stack, lease: fenced(stack, lease, runIdentity=run_identity(stack)),
    "heartbeat": lambda stack, lease: fenced(stack, lease),
    "checkpoint_work": lambda stack, lease: fenced(stack, lease, checkpoint={"summary": "half"}),
    "complete_work": lambda stack, lease: fenced(stack, lease, evidence=EVIDENCE),
    "fail_work": lambda stack, lease: fenced(
        stack, lease, error={"message": "boom", "type": "Boom", "retryable": True}
    ),
    "release_work": lambda stack, lease: fenced(stack, lease),
    "view": lambda stack, lease: {"coordinatorId": stack.cid},
    "why": lambda stack, lease: {"coordinatorId": stack.cid, "itemId": lease["item"]["itemId"]},
    "create_lane": lambda stack, lease: {
        "coordinatorId": stack.cid,
        "lane": one_task_lane("while off"),
    },
    "budget": lambda stack, lease: {"coordinatorId": stack.cid, "laneId": lease["item"]["laneId"]},
}


def test_every_tool_has_arguments() -> None:
    assert set(ARGUMENTS) == set(TOOL_RPCS)


async def _listed(agent: Agent) -> set[str]:
    return {tool.name for tool in (await agent.client.list_tools()).tools}


@pytest.mark.parametrize("switch", ["platform", "coordinator"])
@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_off_withholds_the_tool_list_and_refuses_every_tool(
    world: McpWorld, transport: str, switch: str
) -> None:
    stack = world.stack
    await stack.create_lane(task("a"), task("b"))
    async with (
        world.agent(transport) as agent,
        world.agent(transport, token=stack.admin_token) as person,
    ):
        assert await _listed(agent) == set(TOOL_RPCS)
        lease = await lease_one(agent, stack, "agent-on")
        await switch_off(stack, switch)
        try:
            with pytest.raises(MCPError) as withheld:
                await agent.client.list_tools()
            assert withheld.value.message.startswith("COORDINATION_DISABLED: ")
            assert reason(withheld.value.data) == "COORDINATION_DISABLED"
            for tool in mcp_tools():
                refused = await agent.error(tool.name, ARGUMENTS[tool.name](stack, lease))
                assert (refused["code"], reason(refused)) == (14, "COORDINATION_DISABLED"), tool
            # A person still sees the tools and the state, but works no more.
            assert await _listed(person) == set(TOOL_RPCS)
            await person.ok("why", ARGUMENTS["why"](stack, lease))
            refused = await person.error("lease_work", ARGUMENTS["lease_work"](stack, lease))
            assert reason(refused) == "COORDINATION_DISABLED"
        finally:
            await switch_off(stack, switch, on=True)

        # Back on: the same session lists the tools, and the lease held before is still good.
        assert await _listed(agent) == set(TOOL_RPCS)
        listed = await agent.ok("work_coordinators", {})
        assert [c["coordinatorId"] for c in listed["workCoordinators"]] == [stack.cid]
        await agent.ok("start_work", ARGUMENTS["start_work"](stack, lease))
        await agent.ok("complete_work", ARGUMENTS["complete_work"](stack, lease))
