"""Webhooks end to end through REST, with local receivers: a lane's ship approval posts a
signed STANDARD delivery and a SLACK message carrying the page that decides it; a 500-answering
receiver gets retries with the same ``webhook-id``, then the delivery is DEAD with an owned
pending action and the webhook disabled; a sender stopped mid-delivery sends it again after a
restart; the SSRF rules refuse private targets; work keys are refused."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import httpx
import pytest

from tests.support.harness import start_coordinator_for, start_gateway_for
from tests.support.rest import JSON, expect_status, ok
from tests.support.webhook_receiver import WebhookReceiver
from workcoord.coordinator.domain.auth import RECOVERY
from workcoord.coordinator.webhooks import signing
from workcoord.kit.settings import RecoverySettings
from workcoord.recovery.server import start_recovery

from .system import LaneSystem, forbidden, standard_lane

pytestmark = [pytest.mark.pg, pytest.mark.redis]


async def create_webhook(system: LaneSystem, **webhook: object) -> JSON:
    created: JSON = ok(await system.admin.post(f"{system.base}/webhooks", json=webhook))
    webhook_made: JSON = created["webhook"]
    return webhook_made


async def deliveries(system: LaneSystem, webhook_id: str) -> list[JSON]:
    page = ok(await system.admin.get(f"{system.base}/webhooks/{webhook_id}/deliveries"))
    found: list[JSON] = page.get("deliveries", [])
    return found


async def await_approval(system: LaneSystem, title: str = "Ship the parser") -> JSON:
    lane = await system.create_lane(standard_lane(title))
    await system.build_and_review(lane["laneId"], ["PASS"])
    ship = await system.item_by_key(lane["laneId"], "ship")
    assert ship["state"] == "AWAITING_APPROVAL", ship
    return ship


def stamp(system: LaneSystem) -> int:
    """Now on the system's clock (deliveries are signed with it), for verifying."""
    return int(system.clock.now().timestamp())


def body_of(receipt_body: bytes) -> JSON:
    parsed: JSON = json.loads(receipt_body)
    return parsed


async def test_ship_approval_posts_signed_standard_and_slack(system: LaneSystem) -> None:
    async with WebhookReceiver() as standard, WebhookReceiver() as slack:
        hook = await create_webhook(system, url=standard.url, eventTypes=["HUMAN_NEEDED"])
        chat = await create_webhook(
            system, url=slack.url, eventTypes=["APPROVAL_REQUESTED"], format="SLACK"
        )
        secret = hook["secret"]
        assert secret.startswith("whsec_") and chat["secret"].startswith("whsec_")
        assert hook["enabled"] is True and hook["format"] == "STANDARD"
        listed = ok(await system.admin.get(f"{system.base}/webhooks"))["webhooks"]
        assert {w["webhookId"] for w in listed} == {hook["webhookId"], chat["webhookId"]}
        assert all("secret" not in w for w in listed), listed

        ship = await await_approval(system)
        [receipt] = await standard.wait_for(1)
        webhook_id = signing.verify(secret, receipt.headers, receipt.body, stamp(system))
        body = body_of(receipt.body)
        assert body["type"] == "APPROVAL_REQUESTED"
        data = body["data"]
        assert webhook_id == f"evt_{system.cid}_{data['revision']}"
        assert data["laneId"] == ship["laneId"] and data["itemId"] == ship["itemId"]
        assert data["laneTitle"] == "Ship the parser"
        assert data["nextAction"] == "approve or deny"
        assert f"/o/{system.org}/work-coordinator#c={system.cid}" in data["url"]
        assert f"lane={ship['laneId']}" in data["url"]
        assert "inputs" not in json.dumps(body)

        [message] = await slack.wait_for(1)
        signing.verify(chat["secret"], message.headers, message.body, stamp(system))
        assert message.headers["webhook-id"] == webhook_id
        text = body_of(message.body)
        assert "Ship the parser" in text["text"] and data["url"] in text["text"]
        assert text["blocks"][1]["elements"][0]["url"] == data["url"]

        # The record follows the answer: wait for it (the newest delivery is this event's).
        delivery = await _wait_state(system, hook["webhookId"], "SUCCEEDED", standard)
        assert delivery["eventId"] == webhook_id
        assert delivery["state"] == "SUCCEEDED" and delivery["attempt"] == 1
        assert delivery["responseCode"] == 200
        # The event of the webhook's creation names no secret.
        assert secret not in json.dumps(await system.events())


async def test_500_receiver_gets_retries_with_the_same_webhook_id(system: LaneSystem) -> None:
    failing = {"until": 2}

    def answer(n: int) -> int:
        return 500 if n < failing["until"] else 200

    async with WebhookReceiver(answer) as receiver:
        hook = await create_webhook(system, url=receiver.url, eventTypes=["APPROVAL_REQUESTED"])
        await await_approval(system)
        [first] = await receiver.wait_for(1)
        # Retries wait 1 s, then 2 s (on the coordinator's clock), once the failure is recorded.
        await _wait_state(system, hook["webhookId"], "FAILED", receiver, attempt=1)
        system.clock.advance(timedelta(seconds=2))
        await receiver.wait_for(2)
        await _wait_state(system, hook["webhookId"], "FAILED", receiver, attempt=2)
        system.clock.advance(timedelta(seconds=3))
        third = (await receiver.wait_for(3))[2]
        assert {r.headers["webhook-id"] for r in receiver.receipts} == {first.headers["webhook-id"]}
        signing.verify(hook["secret"], third.headers, third.body, stamp(system))
        delivery = await _wait_state(system, hook["webhookId"], "SUCCEEDED", receiver)
        assert delivery["state"] == "SUCCEEDED" and delivery["attempt"] == 3, delivery

        # Failing for good: after 24 h the delivery is DEAD, an owned pending action opens and
        # the webhook is disabled; a redelivery after re-enabling keeps the webhook-id.
        failing["until"] = 10**6
        await await_approval(system, "Second lane")
        await receiver.wait_for(4)
        await _wait_state(system, hook["webhookId"], "FAILED", receiver, attempt=1)
        system.clock.advance(timedelta(hours=25))
        await receiver.wait_for(5)
        dead = await _wait_state(system, hook["webhookId"], "DEAD", receiver)
        hooks = ok(await system.admin.get(f"{system.base}/webhooks"))["webhooks"]
        assert hooks[0]["enabled"] is False and hooks[0]["failingSince"]
        # Its owner is told in the digest: which webhook, its last answer, never its URL.
        entries = (await system.digest()).get("entries", [])
        [told] = [e for e in entries if e["kind"] == "WEBHOOK_DISABLED"]
        assert hook["webhookId"] in told["reason"] and "HTTP 500" in told["reason"], told
        assert receiver.url not in json.dumps(entries)
        actions = [a for a in await system.pending_actions() if a["kind"] == "REDELIVER_WEBHOOK"]
        assert len(actions) == 1, actions
        types = await system.event_types()
        assert "PENDING_ACTION_OPENED" in types

        failing["until"] = 0
        redelivered = ok(
            await system.admin.post(
                f"{system.base}/webhooks/{hook['webhookId']}/deliveries/"
                f"{dead['deliveryId']}/redeliver",
                json={},
            )
        )
        assert redelivered["state"] == "PENDING"
        ok(
            await system.admin.patch(
                f"{system.base}/webhooks/{hook['webhookId']}",
                json={"enabled": True},
                params={"updateMask": "enabled"},
            )
        )
        again = await receiver.wait_for(6)
        assert again[5].headers["webhook-id"] == dead["eventId"]
        await _wait_state(system, hook["webhookId"], "SUCCEEDED", receiver, dead["deliveryId"])


async def _wait_state(
    system: LaneSystem,
    webhook_id: str,
    state: str,
    receiver: WebhookReceiver,
    delivery_id: str = "",
    attempt: int = 0,
) -> JSON:
    """The newest delivery (or ``delivery_id``) once it reaches ``state`` (the record follows
    the receiver's answer; polled through the API with a generous bound)."""
    for _ in range(200):
        found = await deliveries(system, webhook_id)
        chosen = [d for d in found if d["deliveryId"] == delivery_id] if delivery_id else found
        if chosen and chosen[0]["state"] == state and chosen[0]["attempt"] >= attempt:
            return chosen[0]
        await receiver.wait_for(len(receiver.receipts))
        await system.coordinator.engine.drain()
    raise AssertionError(f"no delivery reached {state}: {found}")


async def test_sender_stopped_mid_delivery_sends_again(system: LaneSystem) -> None:
    # The first request hangs (never answered) until its sender stops; later ones get 200.
    async with WebhookReceiver(lambda n: None if n == 0 else 200) as receiver:
        hook = await create_webhook(system, url=receiver.url, eventTypes=["APPROVAL_REQUESTED"])
        await await_approval(system)
        [held] = await receiver.wait_for(1)
        await system.recovery.stop(0)
        system.recovery = await start_recovery(
            RecoverySettings.model_validate(
                {
                    "listen_recovery": "127.0.0.1:0",
                    "coordinator_address": system.coordinator.address,
                    "service_key": system.service_key,
                    "recovery_interval_seconds": 3600,
                }
            ),
            clock=system.clock,
        )
        system.clock.advance(timedelta(seconds=10))  # a retry, should the first have failed
        again = (await receiver.wait_for(2, timeout=60))[1]
        assert again.headers["webhook-id"] == held.headers["webhook-id"]
        delivered = await _wait_state(system, hook["webhookId"], "SUCCEEDED", receiver)
        assert delivered["eventId"] == held.headers["webhook-id"]


async def test_a_commit_on_another_replica_wakes_the_waiting_sender(
    system: LaneSystem, pg_url: str, redis: str
) -> None:
    # The test is the recovery leader: it calls the sender of replica A and waits; the lane is
    # created through replica B (its own gateway). A looks at the outbox only when woken (no
    # periodic look within the call), so without the bus the call would end empty at its end.
    await system.recovery.stop(0)
    other = await start_coordinator_for(
        pg_url,
        redis,
        system.clock,
        system.admin_token,
        system.service_key,
        webhook_allowed_hosts=["127.0.0.1"],
    )
    other_gateway = await start_gateway_for(other.address)
    webhooks = system.coordinator.engine.webhooks
    webhooks.look_seconds = 3600.0
    try:
        async with (
            WebhookReceiver() as receiver,
            httpx.AsyncClient(
                base_url=f"http://{other_gateway.address}",
                headers={"Authorization": system.worker.headers["authorization"]},
                timeout=30.0,
            ) as through_b,
        ):
            hook = await create_webhook(system, url=receiver.url, eventTypes=["APPROVAL_REQUESTED"])
            sending = asyncio.create_task(webhooks.deliver(RECOVERY, 60.0, ""))
            deadline = time.monotonic() + 60
            while system.cid not in webhooks.wake.watched:
                assert time.monotonic() < deadline and not sending.done(), "never watched"
                await asyncio.sleep(0.01)
            # A lane whose only item waits for approval: a commit that readies no work (it is
            # published for the webhooks all the same).
            approval_only = {
                "title": "Made on B",
                "template": "CUSTOM",
                "items": [
                    {
                        "key": "ship",
                        "kind": "TASK",
                        "workerClass": "machine",
                        "requiresApproval": True,
                    }
                ],
            }
            lane = await system.create_lane(approval_only, client=through_b)
            tried = await asyncio.wait_for(sending, 30)
            assert tried == 1
            [receipt] = receiver.receipts
            signing.verify(hook["secret"], receipt.headers, receipt.body, stamp(system))
            assert body_of(receipt.body)["data"]["laneId"] == lane["laneId"]
    finally:
        await other_gateway.stop()
        await other.stop()


async def test_ssrf_rules_and_bad_input_at_set_time(system: LaneSystem) -> None:
    for url in (
        "http://example.com/hook",
        "https://10.1.2.3/hook",
        "https://169.254.169.254/latest",
        "https://localhost/hook",
        "https://user:pw@example.com/hook",
        "ftp://example.com/",
    ):
        response = await system.admin.post(
            f"{system.base}/webhooks", json={"url": url, "eventTypes": ["HUMAN_NEEDED"]}
        )
        error = expect_status(response, 400, 3, "INVALID_ARGUMENT")
        assert "url" in json.dumps(error), (url, error)
    bad = await system.admin.post(
        f"{system.base}/webhooks", json={"url": "https://example.com/", "eventTypes": ["NOPE"]}
    )
    assert "event_types" in json.dumps(expect_status(bad, 400, 3, "INVALID_ARGUMENT"))
    fmt = await system.admin.post(
        f"{system.base}/webhooks",
        json={"url": "https://example.com/", "eventTypes": ["LANE_OUTCOMES"], "format": "XML"},
    )
    expect_status(fmt, 400, 3, "INVALID_ARGUMENT")
    assert ok(await system.admin.get(f"{system.base}/webhooks")).get("webhooks", []) == []


async def test_work_keys_are_refused(system: LaneSystem) -> None:
    body = {"url": "https://example.com/hook", "eventTypes": ["HUMAN_NEEDED"]}
    forbidden(await system.worker.post(f"{system.base}/webhooks", json=body))
    forbidden(await system.worker.get(f"{system.base}/webhooks"))
    hook = await create_webhook(system, **body)
    forbidden(await system.worker.delete(f"{system.base}/webhooks/{hook['webhookId']}"))
    forbidden(await system.worker.get(f"{system.base}/webhooks/{hook['webhookId']}/deliveries"))
    ok(await system.admin.delete(f"{system.base}/webhooks/{hook['webhookId']}"))
    assert ok(await system.admin.get(f"{system.base}/webhooks")).get("webhooks", []) == []
