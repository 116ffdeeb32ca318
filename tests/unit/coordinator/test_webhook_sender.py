"""The webhook sender against real local receivers: signed STANDARD and SLACK deliveries of an
approval, retries of a 500 with the same ``webhook-id``, revision order per webhook, DEAD after
24 h, and a sender cancelled mid-delivery that loses nothing (the in-flight delivery comes
again, nothing else twice). The outbox is a list kept by the test (no store implements the
port yet)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import httpx
import pytest
from prometheus_client import REGISTRY

from workcoord.coordinator.domain.webhooks import DeliveryState
from workcoord.coordinator.metrics import DELIVERY_OUTCOMES
from workcoord.coordinator.webhooks import payloads, signing
from workcoord.coordinator.webhooks.sender import (
    DeliveryResult,
    DueDelivery,
    Sender,
)
from workcoord.kit.clock import ManualClock


@dataclass
class ListOutbox:
    """The Outbox port over a list: due = per webhook, the first not-done deliveries in order,
    stopping at one that is not due yet."""

    clock: ManualClock
    deliveries: list[DueDelivery] = field(default_factory=list)
    results: dict[str, DeliveryResult] = field(default_factory=dict)

    async def due(self, now: datetime, limit: int) -> list[DueDelivery]:
        found: list[DueDelivery] = []
        blocked: set[str] = set()
        for delivery in self.deliveries:
            result = self.results.get(delivery.delivery_id)
            if result is not None and result.state in (DeliveryState.SUCCEEDED, DeliveryState.DEAD):
                continue
            if delivery.webhook_id in blocked:
                continue
            if result is not None and result.next_attempt_time and result.next_attempt_time > now:
                blocked.add(delivery.webhook_id)
                continue
            attempt = result.attempt if result is not None else 0
            found.append(replace(delivery, attempt=attempt))
        return found[:limit]

    async def record(self, delivery: DueDelivery, result: DeliveryResult) -> None:
        self.results[delivery.delivery_id] = result


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1; answers ``status``, or holds each request until
    ``release`` is set when ``hold`` is."""

    status: int = 200
    hold: bool = False
    release: asyncio.Event = field(default_factory=asyncio.Event)
    holding: asyncio.Event = field(default_factory=asyncio.Event)
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def ids(self) -> list[str]:
        return [headers["webhook-id"] for headers, _ in self.received]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")[1:]
            headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines if x)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if self.hold:
                self.holding.set()
                await self.release.wait()
            self.received.append((headers, body))
            writer.write(f"HTTP/1.1 {self.status} X\r\ncontent-length: 0\r\n\r\n".encode())
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def receivers() -> AsyncIterator[list[Receiver]]:
    found = [Receiver(), Receiver()]
    servers = []
    for receiver in found:
        server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
        receiver.port = server.sockets[0].getsockname()[1]
        servers.append(server)
    yield found
    for server in servers:
        server.close()


def _facts(
    clock: ManualClock, revision: int, event_type: str = "APPROVAL_REQUESTED"
) -> payloads.EventFacts:
    return payloads.EventFacts(
        event_id=f"evt_{revision}",
        type=event_type,
        time=clock.now(),
        coordinator_id="wc_1",
        org_slug="acme",
        revision=revision,
        lane_id="lane_1",
        item_id="item_ship",
        lane_title="Release 1.2",
        next_action="APPROVE",
    )


def _delivery(
    webhook: str, url: str, secret: str, fmt: str, facts: payloads.EventFacts
) -> DueDelivery:
    return DueDelivery(f"dlv_{webhook}_{facts.revision}", webhook, url, secret, fmt, 0, facts)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as found:
        yield found


async def test_an_approval_posts_a_signed_standard_webhook_and_a_slack_message(
    receivers: list[Receiver], clock: ManualClock, client: httpx.AsyncClient
) -> None:
    standard, slack = receivers
    secrets = signing.new_secret(), signing.new_secret()
    facts = _facts(clock, 7)
    outbox = ListOutbox(clock)
    outbox.deliveries = [
        _delivery("wh_std", standard.url, secrets[0], "STANDARD", facts),
        _delivery("wh_slack", slack.url, secrets[1], "SLACK", facts),
    ]
    sender = Sender(
        outbox, client, clock, allowed_hosts={"127.0.0.1"}, public_url="https://wc.test"
    )
    assert await sender.send_due() == 2
    link = "https://wc.test/o/acme/work-coordinator#c=wc_1&lane=lane_1&item=item_ship"
    now = int(clock.now().timestamp())
    ((headers, body),) = standard.received
    assert signing.verify(secrets[0], headers, body, now) == "evt_7"
    message = json.loads(body)
    assert message["type"] == "APPROVAL_REQUESTED" and message["data"]["url"] == link
    ((headers, body),) = slack.received
    assert signing.verify(secrets[1], headers, body, now) == "evt_7"
    assert link in json.loads(body)["text"]
    assert {r.state for r in outbox.results.values()} == {DeliveryState.SUCCEEDED}
    assert await sender.send_due() == 0  # nothing is sent twice


async def test_a_failing_receiver_gets_retries_with_the_same_id_in_order_then_dead(
    receivers: list[Receiver], clock: ManualClock, client: httpx.AsyncClient
) -> None:
    before = _delivery_counts()
    lag_before = _lag_count()
    receiver = receivers[0]
    receiver.status = 500
    secret = signing.new_secret()
    outbox = ListOutbox(clock)
    outbox.deliveries = [
        _delivery("wh", receiver.url, secret, "STANDARD", _facts(clock, n)) for n in (1, 2)
    ]
    sender = Sender(outbox, client, clock, allowed_hosts={"127.0.0.1"})
    assert await sender.send_due() == 1  # revision 2 waits behind revision 1
    first = outbox.results["dlv_wh_1"]
    assert (first.state, first.attempt, first.response_code) == (DeliveryState.FAILED, 1, 500)
    assert first.next_attempt_time == clock.now() + timedelta(seconds=1)
    assert await sender.send_due() == 0  # not due yet
    clock.advance(1)
    await sender.send_due()
    assert outbox.results["dlv_wh_1"].attempt == 2
    assert receiver.ids() == ["evt_1", "evt_1"]
    receiver.status = 204
    clock.advance(2)
    assert await sender.send_due() == 2
    assert receiver.ids() == ["evt_1", "evt_1", "evt_1", "evt_2"]

    receiver.status = 503
    late = _facts(clock, 3)
    outbox.deliveries.append(_delivery("wh", receiver.url, secret, "STANDARD", late))
    await sender.send_due()
    clock.advance(timedelta(hours=24))
    await sender.send_due()
    assert outbox.results["dlv_wh_3"].state == DeliveryState.DEAD
    counted = {k: v - before[k] for k, v in _delivery_counts().items()}
    assert counted == {"succeeded": 2, "failed": 3, "dead": 1, "refused": 0}
    assert _lag_count() - lag_before == 2  # lag is observed for the 2xx answers only


def _delivery_counts() -> dict[str, float]:
    """``workcoord_webhook_deliveries_total`` by outcome, as /metrics would show it."""
    return {
        outcome: REGISTRY.get_sample_value(
            "workcoord_webhook_deliveries_total", {"outcome": outcome}
        )
        or 0.0
        for outcome in DELIVERY_OUTCOMES
    }


def _lag_count() -> float:
    return REGISTRY.get_sample_value("workcoord_webhook_delivery_lag_seconds_count") or 0.0


async def test_a_sender_cancelled_mid_delivery_loses_nothing(
    receivers: list[Receiver], clock: ManualClock, client: httpx.AsyncClient
) -> None:
    receiver = receivers[0]
    secret = signing.new_secret()
    outbox = ListOutbox(clock)
    outbox.deliveries = [
        _delivery("wh", receiver.url, secret, "STANDARD", _facts(clock, n)) for n in (1, 2, 3)
    ]
    receiver.hold = True
    first = asyncio.create_task(
        Sender(outbox, client, clock, allowed_hosts={"127.0.0.1"}).send_due()
    )
    await receiver.holding.wait()
    first.cancel()  # mid-delivery of evt_1: its answer never reaches the sender
    with pytest.raises(asyncio.CancelledError):
        await first
    receiver.release.set()
    restarted = Sender(outbox, client, clock, allowed_hosts={"127.0.0.1"})
    while await restarted.send_due():
        pass
    ids = receiver.ids()
    assert sorted(set(ids)) == ["evt_1", "evt_2", "evt_3"]
    assert [i for i in ids if i != "evt_1"] == ["evt_2", "evt_3"]  # only the in-flight one twice
    assert {r.state for r in outbox.results.values()} == {DeliveryState.SUCCEEDED}


async def test_a_refused_address_is_never_connected(
    clock: ManualClock, client: httpx.AsyncClient
) -> None:
    outbox = ListOutbox(clock)
    outbox.deliveries = [
        _delivery(
            "wh", "http://127.0.0.1:9/hook", signing.new_secret(), "STANDARD", _facts(clock, 1)
        )
    ]
    await Sender(outbox, client, clock).send_due()  # 127.0.0.1 not allowed
    result = outbox.results["dlv_wh_1"]
    assert result.state == DeliveryState.FAILED and "https" in result.error
