"""The tool list an agent sees, over every transport: names, RPC-derived schemas, descriptions."""

from __future__ import annotations

import pytest

from tests.support.mcp_agents import TRANSPORTS
from workcoord.kit.mcp_tools import TOOL_RPCS, mcp_tools

from .conftest import McpWorld

pytestmark = [pytest.mark.pg, pytest.mark.redis]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_tool_list_is_the_table_with_schemas_derived_from_the_requests(
    world: McpWorld, transport: str
) -> None:
    async with world.agent(transport) as agent:
        listed = await agent.client.list_tools()
    by_name = {tool.name: tool for tool in listed.tools}
    assert sorted(by_name) == sorted(TOOL_RPCS)
    for tool in mcp_tools():
        seen = by_name[tool.name]
        assert seen.input_schema == tool.input_schema
        assert seen.description == tool.description
        assert seen.annotations is not None
        assert seen.annotations.read_only_hint is tool.read_only
    lease = by_name["lease_work"].input_schema
    # maxItems and leaseSeconds are required: unsent, their 0 is out of bounds and refused.
    assert lease["required"] == [
        "coordinatorId",
        "workerId",
        "workerClass",
        "maxItems",
        "leaseSeconds",
    ]
    assert (
        lease["properties"]["leaseSeconds"]["minimum"],
        lease["properties"]["leaseSeconds"]["maximum"],
    ) == (5, 300)
    assert lease["additionalProperties"] is False
