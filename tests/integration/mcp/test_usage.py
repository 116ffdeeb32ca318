"""Usage on worker writes through MCP and REST (the gateway's JSON): running totals as int64
strings, a lower total refused naming the field."""

from __future__ import annotations

import httpx
import pytest

from tests.support.mcp_agents import HTTP, STDIO, violated

from .conftest import McpWorld
from .test_work import EVIDENCE, fenced, lease_one, one_task_lane, run_identity

pytestmark = [pytest.mark.pg, pytest.mark.redis]

FIRST = {"inputTokens": "1200", "outputTokens": "300", "costMicros": "400000", "model": "opus"}
FINAL = {"inputTokens": "2500", "outputTokens": "700", "costMicros": "950000", "model": "opus"}


@pytest.mark.parametrize("transport", [HTTP, STDIO])
async def test_an_agent_reports_usage_with_heartbeat_and_complete(
    world: McpWorld, transport: str
) -> None:
    stack = world.stack
    async with world.agent(transport) as agent:
        await agent.ok("create_lane", {"coordinatorId": stack.cid, **one_task_lane("spend")})
        lease = await lease_one(agent, stack, "agent-usage")
        await agent.ok("start_work", fenced(stack, lease, runIdentity=run_identity(stack)))
        await agent.ok("heartbeat", fenced(stack, lease, usage=FIRST))
        lower = {**FIRST, "outputTokens": "299"}
        refused = await agent.error("heartbeat", fenced(stack, lease, usage=lower))
        assert refused["code"] == 3
        assert violated(refused) == {"usage.output_tokens"}
        done = await agent.ok("complete_work", fenced(stack, lease, evidence=EVIDENCE, usage=FINAL))
        assert done["attempt"]["usage"] == FINAL
        # The view and why show what the lane spent and the work coordinator's day spend.
        lane_id = lease["item"]["laneId"]
        view = (await agent.ok("view", {"coordinatorId": stack.cid}))["view"]
        (spent,) = [u for u in view["laneUsage"] if u["key"] == lane_id]
        assert spent["costMicros"] == FINAL["costMicros"]
        assert int(view["dayUsage"]["costMicros"]) >= int(FINAL["costMicros"])
        why = await agent.ok("why", {"coordinatorId": stack.cid, "laneId": lane_id})
        assert why["explanation"]["usage"]["costMicros"] == FINAL["costMicros"]
        assert why["explanation"]["dayUsage"]["key"] == view["dayUsage"]["key"]


async def test_rest_worker_writes_carry_usage(world: McpWorld) -> None:
    stack = world.stack
    base = f"http://{world.gateways[0]}/v1/work-coordinators/{stack.cid}"
    headers = {"Authorization": f"Bearer {stack.key_secret}"}
    async with httpx.AsyncClient(headers=headers, timeout=30.0) as rest:
        created = await rest.post(f"{base}/lanes", json=one_task_lane("rest spend"))
        assert created.status_code == 200, created.text
        leased = await rest.post(
            f"{base}/leases",
            json={
                "workerId": "rest-w",
                "workerClass": "machine",
                "maxItems": 1,
                "leaseSeconds": 30,
            },
        )
        (lease,) = leased.json()["leases"]
        at = f"{base}/leases/{lease['leaseId']}"
        token = lease["leaseToken"]
        started = await rest.post(
            f"{at}/start", json={"leaseToken": token, "runIdentity": run_identity(stack)}
        )
        assert started.status_code == 200, started.text
        beat = await rest.post(f"{at}/heartbeat", json={"leaseToken": token, "usage": FIRST})
        assert beat.status_code == 200, beat.text
        lower = await rest.post(
            f"{at}/heartbeat",
            json={"leaseToken": token, "usage": {**FIRST, "costMicros": "1"}},
        )
        assert lower.status_code == 400, lower.text
        assert "usage.cost_micros" in lower.text
        negative = await rest.post(
            f"{at}/heartbeat",
            json={"leaseToken": token, "usage": {**FIRST, "inputTokens": "-5"}},
        )
        assert negative.status_code == 400, negative.text
        assert "usage.input_tokens" in negative.text
        failed = await rest.post(
            f"{at}/fail",
            json={
                "leaseToken": token,
                "error": {"message": "boom", "retryable": True},
                "usage": FINAL,
            },
        )
        assert failed.status_code == 200, failed.text
        assert failed.json()["usage"] == FINAL  # the answer is the attempt
        item_at = f"{base}/lanes/{lease['item']['laneId']}/items/{lease['item']['itemId']}"
        item = await rest.get(item_at)
        assert item.status_code == 200, item.text
        assert item.json()["attempts"][0]["usage"] == FINAL
        spent = await rest.get(f"{base}/usage", params={"groupBy": "LANE"})
        assert spent.status_code == 200, spent.text
        body = spent.json()
        assert body["total"]["costMicros"] == "950000"
        assert [g["key"] for g in body["groups"]] == [lease["item"]["laneId"]]
        view = await rest.get(f"{base}/view")
        assert view.status_code == 200, view.text
        shown = view.json()  # the response body is the view
        assert shown["dayUsage"]["costMicros"] == "950000"
        assert shown["laneUsage"] == [body["groups"][0]]
        why = await rest.get(f"{base}/why", params={"itemId": lease["item"]["itemId"]})
        assert why.status_code == 200, why.text
        explained = why.json()  # the response body is the explanation
        assert explained["usage"]["costMicros"] == "950000"
        assert explained["dayUsage"]["costMicros"] == "950000"
        bad = await rest.get(f"{base}/usage", params={"day": "yesterday"})
        assert bad.status_code == 400, bad.text
