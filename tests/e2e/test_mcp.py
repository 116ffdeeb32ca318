"""An agent configured with one line does its whole job through MCP, against the three services
as separate processes: the gateway's ``/mcp`` (with the work key in a header), and
``workcoord mcp`` on stdio (with the key and the coordinator address in its environment)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.support.mcp_agents import HTTP, STDIO, Agent, http_agent, reason, stdio_agent
from tests.support.rest import run_identity

from .harness import System
from .rest import EXAMPLE_LANE, Tenant

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.pg,
    pytest.mark.redis,
    pytest.mark.xdist_group(name="e2e"),
]


@asynccontextmanager
async def configured_agent(
    system: System, tenant: Tenant, transport: str, log: Path
) -> AsyncIterator[Agent]:
    secret = str(tenant.key["secret"])
    if transport == HTTP:
        gateway = system.gateway_url.removeprefix("http://")
        async with http_agent([gateway], secret) as agent:
            yield agent
        return
    with log.open("a") as errlog:
        async with stdio_agent(system.coordinator_address, secret, errlog) as agent:
            yield agent


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_an_agent_does_its_whole_job_through_mcp(
    system: System, tenant: Tenant, transport: str, tmp_path: Path
) -> None:
    cid = tenant.coordinator_id
    log = tmp_path / "workcoord-mcp.log"
    async with configured_agent(system, tenant, transport, log) as agent:
        listed = await agent.ok("work_coordinators", {})
        assert [c["coordinatorId"] for c in listed["workCoordinators"]] == [cid]
        lane = (await agent.ok("create_lane", {"coordinatorId": cid, **EXAMPLE_LANE}))["lane"]
        leased = await agent.ok(
            "lease_work",
            {
                "coordinatorId": cid,
                "workerId": "agent-7",
                "workerClass": "machine",
                "maxItems": 2,
                "leaseSeconds": 30,
            },
        )
        leases = leased["leases"]
        assert sorted(lease["item"]["key"] for lease in leases) == ["a", "b"]
        for lease in leases:
            fence = {"coordinatorId": cid, "leaseId": lease["leaseId"]}
            fence["leaseToken"] = lease["leaseToken"]
            await agent.ok("start_work", {**fence, "runIdentity": run_identity()})
            await agent.ok("heartbeat", {**fence, "progress": "tests 40/120"})
            done = await agent.ok(
                "complete_work", {**fence, "evidence": {"summary": f"{lease['item']['key']} done"}}
            )
            assert done["attempt"]["status"] == "COMPLETED"
            stale = await agent.error("heartbeat", fence)
            assert reason(stale) == "LEASE_LOST"
        why = await agent.ok("why", {"coordinatorId": cid, "laneId": lane["laneId"]})
        text = json.dumps(why)
        assert all(lease["leaseToken"] not in text for lease in leases)
        view = await agent.ok("view", {"coordinatorId": cid})
        (viewed,) = [v for v in view["view"]["lanes"] if v["laneId"] == lane["laneId"]]
        states = {item["key"]: item["state"] for item in viewed["items"]}
        # c waits for a person: its dependencies are done, so it is ready to lease.
        assert states == {"a": "SUCCEEDED", "b": "SUCCEEDED", "c": "QUEUED"}
        # The lane's private inputs never leave through the view.
        assert "private input" not in json.dumps(view)

    types = [event["type"] for event in tenant.events() if event.get("laneId") == lane["laneId"]]
    assert types.count("ITEM_SUCCEEDED") == 2
    assert types.count("ITEM_STARTED") == 2
