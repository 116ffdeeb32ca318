"""A spent budget notifies people, through REST with a local receiver: the BUDGET_EXHAUSTED
event (HUMAN_NEEDED group) is delivered, signed, to a webhook subscribed to HUMAN_NEEDED, and a
RAISE_BUDGET pending action is open for the digest owner; the 80 % warning is its own event
type, not a HUMAN_NEEDED one."""

from __future__ import annotations

import json

import pytest

from tests.support.rest import ok
from tests.support.webhook_receiver import WebhookReceiver
from workcoord.coordinator.webhooks import signing

from .system import LaneSystem

pytestmark = [pytest.mark.pg, pytest.mark.redis]


async def test_a_spent_lane_budget_is_delivered_to_human_needed_webhooks(
    system: LaneSystem,
) -> None:
    async with WebhookReceiver() as receiver:
        created = ok(
            await system.admin.post(
                f"{system.base}/webhooks",
                json={"url": receiver.url, "eventTypes": ["HUMAN_NEEDED"]},
            )
        )
        secret = created["webhook"]["secret"]
        lane = await system.create_lane(
            {
                "title": "Budgeted parser",
                "template": "CUSTOM",
                "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}],
                "budget": {"costMicros": "1000000"},
            }
        )
        lease = await system.take("machine")
        stops = []
        for cost in ("400000", "800000", "1200000"):
            answer = ok(await system.lease_call(lease, "heartbeat", usage={"costMicros": cost}))
            stops.append(answer.get("stop", {}).get("reason"))
        assert stops == [None, None, "BUDGET_EXHAUSTED"]

        [receipt] = await receiver.wait_for(1)
        signing.verify(secret, receipt.headers, receipt.body, int(system.clock.now().timestamp()))
        body = json.loads(receipt.body)
        assert body["type"] == "BUDGET_EXHAUSTED"
        assert body["data"]["laneId"] == lane["laneId"]
        assert body["data"]["laneTitle"] == "Budgeted parser"
        [action] = [a for a in await system.pending_actions("OPEN") if a["kind"] == "RAISE_BUDGET"]
        assert action["laneId"] == lane["laneId"] and action["owner"]
        types = await system.event_types()
        assert "BUDGET_WARNING" in types and "BUDGET_EXHAUSTED" in types
