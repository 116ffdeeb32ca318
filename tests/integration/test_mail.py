"""Mail to the digest owner through a real SMTP server (aiosmtpd on loopback): yesterday's digest
once a day, the HUMAN_NEEDED events batched (at most one message every 5 minutes), each with a
link through sign-in to the page; a restarted (or another) mailer sends nothing again, because
the marks are in the coordinator's database."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message
from typing import Any

import grpc.aio
import pytest
from aiosmtpd.controller import Controller

from tests.support.harness import Stack, task
from workcoord.api.v1 import maintenance_pb2_grpc
from workcoord.kit.startup import free_port
from workcoord.recovery.mailer import Mailer, SmtpConfig, SmtpSender

PUBLIC_URL = "https://workcoord.example.test"


class Inbox:
    """What the SMTP server accepted (its handler runs on the server's own thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self._lock:
            self._messages.append(
                (list(envelope.rcpt_tos), message_from_bytes(envelope.original_content))
            )
        return "250 OK"

    def to(self, address: str) -> list[Message]:
        with self._lock:
            return [message for rcpt, message in self._messages if address in rcpt]


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def body(message: Message) -> str:
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


async def test_the_digest_owner_is_mailed_once_and_in_batches(
    stack: Stack, smtp: tuple[Inbox, int]
) -> None:
    inbox, port = smtp
    owner = f"ops@{stack.org}.test"
    config = SmtpConfig(host="127.0.0.1", port=port, implicit_tls=False)
    channel = grpc.aio.insecure_channel(stack.address)

    def mailer() -> Mailer:
        return Mailer(
            maintenance_pb2_grpc.MaintenanceServiceStub(channel),
            service_key=stack.service_key,
            send=SmtpSender(config).send,
            sender="workcoord <workcoord@example.test>",
            public_url=PUBLIC_URL,
        )

    try:
        first = mailer()
        await first.run_once()
        assert inbox.to(owner) == []  # no digest of a day before the work coordinator existed
        stack.clock.advance(24 * 3600)
        await first.run_once()
        [digest] = inbox.to(owner)
        yesterday = (stack.clock.now().date()).fromordinal(stack.clock.now().toordinal() - 1)
        assert digest["Subject"].endswith(f"digest {yesterday.isoformat()} (0 entries)")
        assert digest["To"] == owner
        link = f"{PUBLIC_URL}/sign-in?next=%2Fo%2F{stack.org}%2Fwork-coordinator%23c%3D{stack.cid}"
        assert link in body(digest)
        # The history before the first look was not mailed; nothing more is due now.
        await first.run_once()
        assert len(inbox.to(owner)) == 1

        await stack.create_lane(task("h"), title="Ship the parser")  # needs no person
        stopped = task("p", title="Deploy the API to production")  # a sensitive action
        await stack.create_lane(stopped, title="Deploy it")
        await first.run_once()
        [_, human] = inbox.to(owner)
        assert "ITEM_STOPPED" in human["Subject"]
        text = body(human)
        assert '"Deploy it"' in text and "Ship the parser" not in text
        assert link in text

        # Within five minutes of that mail, more waits for the batch...
        await stack.create_lane(task("q", title="Deploy the web to production"), title="Again")
        await first.run_once()
        assert len(inbox.to(owner)) == 2
        # ...and a restarted mailer (or another replica) sends nothing twice.
        restarted = mailer()
        await restarted.run_once()
        assert len(inbox.to(owner)) == 2
        stack.clock.advance(5 * 60)
        await restarted.run_once()
        [_, _, batch] = inbox.to(owner)
        assert '"Again"' in body(batch) and '"Deploy it"' not in body(batch)
        await first.run_once()
        assert len(inbox.to(owner)) == 3
    finally:
        await channel.close()


async def test_a_refusing_smtp_server_loses_nothing(stack: Stack, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    owner = f"ops@{stack.org}.test"
    channel = grpc.aio.insecure_channel(stack.address)

    def mailer(smtp_port: int) -> Mailer:
        config = SmtpConfig(host="127.0.0.1", port=smtp_port, implicit_tls=False)
        return Mailer(
            maintenance_pb2_grpc.MaintenanceServiceStub(channel),
            service_key=stack.service_key,
            send=SmtpSender(config).send,
            sender="workcoord@example.test",
        )

    try:
        stack.clock.advance(24 * 3600)
        # Nothing listens on that port: the round fails, no mark moves.
        assert await mailer(free_port()).run_once() == 0
        await mailer(port).run_once()
        [digest] = inbox.to(owner)
        assert "digest" in digest["Subject"]
    finally:
        await channel.close()
