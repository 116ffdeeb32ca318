"""Webhook deliveries as a receiver sees them: Standard Webhooks signatures, the STANDARD and
SLACK bodies with the page link, the SSRF rules at set time and at connect time, one POST to a
real local HTTP receiver, and the retry schedule."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from workcoord.coordinator.domain.notifications import (
    HUMAN_NEEDED_EVENTS,
    expand_event_types,
    is_subscribable,
)
from workcoord.coordinator.webhooks import outbound, payloads, schedule, signing

FACTS = payloads.EventFacts(
    event_id="evt_01",
    type="APPROVAL_REQUESTED",
    time=datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
    coordinator_id="wc_1",
    org_slug="acme",
    revision=42,
    lane_id="lane_7",
    item_id="item_9",
    lane_title="Ship the thing",
    next_action="APPROVE",
)


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1 answering every POST with ``status``."""

    status: int = 200
    extra_headers: str = ""
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")[1:]
        headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines if ln)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.received.append((headers, body))
        self.arrived.set()
        writer.write(
            f"HTTP/1.1 {self.status} X\r\ncontent-length: 2\r\n{self.extra_headers}"
            "connection: close\r\n\r\nok".encode()
        )
        await writer.drain()
        writer.close()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    server = await asyncio.start_server(found.handle, "127.0.0.1", 0)
    found.port = server.sockets[0].getsockname()[1]
    async with server:
        yield found


def test_groups_expand_to_event_types() -> None:
    assert "APPROVAL_REQUESTED" in HUMAN_NEEDED_EVENTS
    chosen = expand_event_types(["HUMAN_NEEDED", "LANE_OUTCOMES", "ITEM_LEASED"])
    assert {"APPROVAL_REQUESTED", "LANE_DONE", "ITEM_LEASED"} <= chosen
    assert "ITEM_SUCCEEDED" not in chosen
    assert is_subscribable("HUMAN_NEEDED") and is_subscribable("ITEM_LEASED")
    assert not is_subscribable("NOT_AN_EVENT")


def test_signature_verifies_and_tampering_does_not() -> None:
    secret = signing.new_secret()
    assert secret.startswith("whsec_")
    body = b'{"a":1}'
    now = int(time.time())
    headers = signing.headers(secret, "evt_01", now, body)
    assert signing.verify(secret, headers, body, now) == "evt_01"
    with pytest.raises(signing.SignatureError):
        signing.verify(secret, headers, b'{"a":2}', now)
    with pytest.raises(signing.SignatureError):
        signing.verify(signing.new_secret(), headers, body, now)
    with pytest.raises(signing.SignatureError):
        signing.verify(secret, headers, body, now + signing.TOLERANCE_SECONDS + 1)


def test_signature_matches_the_standard_webhooks_example() -> None:
    # The test vector of the Standard Webhooks reference libraries.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    signature = signing.sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_bodies_carry_the_page_link_and_no_inputs() -> None:
    standard = json.loads(payloads.render("STANDARD", FACTS, "https://wc.example/"))
    url = "https://wc.example/o/acme/work-coordinator#c=wc_1&lane=lane_7&item=item_9"
    assert standard["type"] == "APPROVAL_REQUESTED"
    assert standard["timestamp"] == "2026-12-01T12:00:00Z"
    assert standard["data"]["url"] == url
    assert standard["data"]["revision"] == 42
    assert set(standard["data"]) == {
        "coordinatorId",
        "revision",
        "laneId",
        "itemId",
        "laneTitle",
        "nextAction",
        "url",
    }
    slack = json.loads(payloads.render("SLACK", FACTS, "https://wc.example"))
    assert url in slack["text"] and "Ship the thing" in slack["text"]
    assert slack["blocks"][1]["elements"][0]["url"] == url
    with pytest.raises(ValueError):
        payloads.render("XML", FACTS, "")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://hooks.example/x", "https"),
        ("https://127.0.0.1/x", "loopback"),
        ("https://10.1.2.3/x", "private"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[::1]/x", "loopback"),
        ("https://[::ffff:192.168.0.1]/x", "private"),
        ("https://localhost/x", "local"),
        ("https://user:pw@hooks.example/x", "credentials"),
        ("ftp://hooks.example/x", "https"),
        ("https:///nohost", "https"),
    ],
)
def test_set_time_refusals(url: str, why: str) -> None:
    with pytest.raises(outbound.RefusedUrl, match=why):
        outbound.check_url(url, frozenset())


def test_listed_hosts_may_be_local_and_plain_http() -> None:
    allowed = outbound.allowed_hosts(" 127.0.0.1 , Hooks.Internal ")
    assert allowed == {"127.0.0.1", "hooks.internal"}
    assert outbound.check_url("http://127.0.0.1:8080/x", allowed).listed
    assert not outbound.check_url("https://hooks.example/x", allowed).listed


async def test_connect_time_refuses_a_name_resolving_to_loopback() -> None:
    # A name that passed the set-time check but resolves to a loopback address.
    target = outbound.Target("https://localhost/x", "https", "localhost", 443, listed=False)
    with pytest.raises(outbound.RefusedUrl, match="loopback"):
        await outbound.resolve_allowed(target)
    async with httpx.AsyncClient() as client:
        outcome = await outbound.post(client, target, {}, b"{}")
    assert not outcome.succeeded and "loopback" in outcome.error


async def test_a_signed_delivery_reaches_a_local_receiver(receiver: Receiver) -> None:
    secret = signing.new_secret()
    target = outbound.check_url(f"http://127.0.0.1:{receiver.port}/hook", {"127.0.0.1"})
    body = payloads.render("STANDARD", FACTS, "")
    now = int(time.time())
    async with httpx.AsyncClient() as client:
        outcome = await outbound.post(
            client, target, signing.headers(secret, "evt_01", now, body), body
        )
    assert outcome.succeeded and outcome.response_code == 200
    headers, received = receiver.received[0]
    assert signing.verify(secret, headers, received, int(time.time())) == "evt_01"
    assert json.loads(received)["data"]["url"].startswith("/o/acme/work-coordinator#c=wc_1")


async def test_errors_and_redirects_are_failures(receiver: Receiver) -> None:
    target = outbound.check_url(f"http://127.0.0.1:{receiver.port}/hook", {"127.0.0.1"})
    async with httpx.AsyncClient() as client:
        receiver.status = 500
        failed = await outbound.post(client, target, {"webhook-id": "evt_01"}, b"{}")
        receiver.status = 302
        receiver.extra_headers = "location: http://10.0.0.1/\r\n"
        redirected = await outbound.post(client, target, {"webhook-id": "evt_01"}, b"{}")
    assert (failed.succeeded, failed.response_code) == (False, 500)
    assert (redirected.succeeded, redirected.response_code) == (False, 302)
    assert len(receiver.received) == 2  # the redirect was not followed


async def test_an_unreachable_receiver_is_a_failure() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    target = outbound.check_url(f"http://127.0.0.1:{port}/hook", {"127.0.0.1"})
    async with httpx.AsyncClient() as client:
        outcome = await outbound.post(client, target, {}, b"{}")
    assert not outcome.succeeded and outcome.error == "ConnectError"


def test_retry_schedule() -> None:
    assert [schedule.retry_delay(n).total_seconds() for n in (1, 2, 3, 13)] == [1, 2, 4, 3600]
    created = datetime(2026, 12, 1, tzinfo=UTC)
    soon = created + timedelta(minutes=5)
    assert schedule.next_attempt_time(created, 3, soon) == soon + timedelta(seconds=4)
    late = created + timedelta(hours=23, minutes=30)
    assert schedule.next_attempt_time(created, 20, late) is None
    assert schedule.should_disable(created, created + timedelta(hours=24))
    assert not schedule.should_disable(created, created + timedelta(hours=23))
    assert not schedule.should_disable(None, late)
