"""Mail to the digest owners, sent by the recovery leader over SMTP.

Every :attr:`Mailer.interval_seconds` while this replica leads, :meth:`Mailer.run_once` asks the
coordinator (``GetMailDue``) what each work coordinator's digest owner is due: yesterday's
digest (one message a UTC day) and the HUMAN_NEEDED events since the last one mailed (one
message for all of them, at most every 5 minutes). Each message is sent, then recorded
(``MarkMailSent``); the marks live in the coordinator's database and only move forward, so
another replica taking over, or this one restarting, sends nothing again. Only a crash in the
instant between the SMTP server's acceptance and the mark can repeat one message.

SMTP: ``smtp://host[:587]`` upgrades with STARTTLS and refuses a server that does not offer
it, except on a loopback address (a local relay, the tests), where plain SMTP is accepted;
``smtps://host[:465]`` is TLS from the first byte. Certificates are verified against the
system's CAs (or ``WORKCOORD_TLS_CA_FILE``). The password is read from its file at each
connection. Links go through ``/sign-in?next=`` so they open on the page after signing in.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import smtplib
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import grpc
import grpc.aio

from workcoord.api.v1 import maintenance_pb2
from workcoord.kit.settings import RecoverySettings
from workcoord.kit.wire import bearer_metadata
from workcoord.recovery import metrics

if TYPE_CHECKING:
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub

__all__ = [
    "Mailer",
    "SmtpConfig",
    "SmtpSender",
    "digest_message",
    "human_needed_message",
    "page_link",
]

_log = logging.getLogger(__name__)
_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class SmtpConfig:
    """Where and how to send (from ``WORKCOORD_SMTP_*``)."""

    host: str
    port: int
    implicit_tls: bool
    username: str | None = None
    password_file: Path | None = None
    sender: str = "workcoord <workcoord@localhost>"
    ca_file: Path | None = None

    @classmethod
    def from_settings(cls, settings: RecoverySettings) -> SmtpConfig | None:
        """None when no ``WORKCOORD_SMTP_URL`` is set (no mail)."""
        if settings.smtp_url is None:
            return None
        parts = urlsplit(settings.smtp_url)
        implicit = parts.scheme == "smtps"
        assert parts.hostname is not None  # checked with the settings
        return cls(
            host=parts.hostname,
            port=parts.port or (465 if implicit else 587),
            implicit_tls=implicit,
            username=settings.smtp_username,
            password_file=settings.smtp_password_file,
            sender=settings.smtp_from,
            ca_file=settings.tls_ca_file,
        )

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


class SmtpSender:
    """Sends messages over one SMTP connection per batch (in a thread: smtplib blocks)."""

    def __init__(self, config: SmtpConfig) -> None:
        self.config = config

    async def send(self, messages: Sequence[EmailMessage]) -> None:
        if messages:
            await asyncio.to_thread(self._send, list(messages))

    def _send(self, messages: list[EmailMessage]) -> None:
        config = self.config
        context = ssl.create_default_context(
            cafile=str(config.ca_file) if config.ca_file is not None else None
        )
        client: smtplib.SMTP
        if config.implicit_tls:
            client = smtplib.SMTP_SSL(
                config.host, config.port, timeout=_TIMEOUT_SECONDS, context=context
            )
        else:
            client = smtplib.SMTP(config.host, config.port, timeout=_TIMEOUT_SECONDS)
        with client:
            client.ehlo()
            if not config.implicit_tls:
                if client.has_extn("starttls"):
                    client.starttls(context=context)
                    client.ehlo()
                elif not config.loopback:
                    raise smtplib.SMTPNotSupportedError(
                        f"{config.host} offers no STARTTLS: refusing to send in the clear"
                    )
            if config.username:
                password = ""
                if config.password_file is not None:
                    password = config.password_file.read_text(encoding="utf-8").strip()
                client.login(config.username, password)
            for message in messages:
                client.send_message(message)


SendFunction = Callable[[Sequence[EmailMessage]], Awaitable[None]]


# The page of a work coordinator with no org (GLOBAL): the admin page, as the gateway serves it.
ADMIN_PAGE = "/admin/work-coordinator"


def page_link(public_url: str | None, org_slug: str, coordinator_id: str) -> str:
    """The work coordinator's page, through sign-in (``/sign-in?next=``): its org's page open
    on it, or the admin page for one with no org."""
    page = f"/o/{org_slug}/work-coordinator#c={coordinator_id}" if org_slug else ADMIN_PAGE
    path = f"/sign-in?next={quote(page, safe='')}"
    return f"{public_url.rstrip('/')}{path}" if public_url else path


def _message(sender: str, to: str, subject: str, body: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain="workcoord")
    message.set_content(body)
    return message


def digest_message(
    due: maintenance_pb2.GetMailDueResponse, coordinator_id: str, sender: str, link: str
) -> EmailMessage:
    """The day's digest: one line per entry, and the link to the page."""
    digest = due.digest
    name = due.display_name or coordinator_id
    count = len(digest.entries)
    lines = [f"The digest of {name} for {digest.day} (UTC): {count} entries.", ""]
    for entry in digest.entries:
        what = [entry.time.ToDatetime().strftime("%H:%M"), type(entry).Kind.Name(entry.kind)]
        where = due.lane_titles.get(entry.lane_id) or entry.lane_id
        if where:
            what.append(f"lane {where}")
        if entry.item_id:
            what.append(f"item {entry.item_id}")
        if entry.reason:
            what.append(f"- {entry.reason}")
        lines.append("  " + " ".join(what))
    if not count:
        lines.append("Nothing needed anyone that day.")
    lines += ["", f"Open: {link}"]
    subject = f"[workcoord] {name}: digest {digest.day} ({count} entries)"
    return _message(sender, due.owner, subject, "\n".join(lines) + "\n")


def human_needed_message(
    due: maintenance_pb2.GetMailDueResponse, coordinator_id: str, sender: str, link: str
) -> EmailMessage:
    """The HUMAN_NEEDED events of one batch, oldest first, and the link to decide them."""
    name = due.display_name or coordinator_id
    events = due.human_needed
    lines = [f"{len(events)} thing(s) in {name} wait on a person:", ""]
    for event in events:
        kind = type(event).Type.Name(event.type)
        title = due.lane_titles.get(event.lane_id, "")
        where = f' "{title}"' if title else (f" lane {event.lane_id}" if event.lane_id else "")
        item = f" item {event.item_id}" if event.item_id else ""
        stamp = event.time.ToDatetime().strftime("%Y-%m-%d %H:%M UTC")
        lines.append(f"  {stamp} {kind}{where}{item} (revision {event.revision})")
    lines += ["", f"Decide: {link}"]
    first = type(events[0]).Type.Name(events[0].type)
    more = f" and {len(events) - 1} more" if len(events) > 1 else ""
    subject = f"[workcoord] {name}: {first}{more}"
    return _message(sender, due.owner, subject, "\n".join(lines) + "\n")


class Mailer:
    """The recovery leader's mail round (see the module docstring)."""

    def __init__(
        self,
        maintenance: MaintenanceServiceAsyncStub,
        *,
        service_key: str,
        send: SendFunction,
        sender: str,
        public_url: str | None = None,
        interval_seconds: float = 30.0,
        rpc_timeout_seconds: float = 30.0,
    ) -> None:
        self._maintenance = maintenance
        self._metadata = bearer_metadata(service_key)
        self._send = send
        self._sender = sender
        self._public_url = public_url
        self.interval_seconds = interval_seconds
        self._timeout = rpc_timeout_seconds

    async def run_once(self) -> int:
        """One round over every enabled work coordinator; the messages sent. A failure (the
        coordinator, the SMTP server) is logged and left for the next round."""
        targets = await self._maintenance.ListMaintenanceTargets(
            maintenance_pb2.ListMaintenanceTargetsRequest(),
            metadata=self._metadata,
            timeout=self._timeout,
        )
        if not targets.platform_enabled:
            return 0  # paused while coordination is off; nothing is lost
        sent = 0
        for target in targets.targets:
            try:
                sent += await self._mail_one(target.coordinator_id)
            except (grpc.aio.AioRpcError, OSError, smtplib.SMTPException) as exc:
                metrics.MAIL_MESSAGES.labels("failed").inc()
                _log.warning("mail for %s failed: %s", target.coordinator_id, exc)
        return sent

    async def _mail_one(self, coordinator_id: str) -> int:
        due = await self._maintenance.GetMailDue(
            maintenance_pb2.GetMailDueRequest(coordinator_id=coordinator_id),
            metadata=self._metadata,
            timeout=self._timeout,
        )
        link = page_link(self._public_url, due.org_slug, coordinator_id)
        sent = 0
        if due.owner and due.HasField("digest"):
            await self._send([digest_message(due, coordinator_id, self._sender, link)])
            await self._mark(coordinator_id, digest_day=due.digest.day)
            sent += 1
        if due.owner and due.human_needed:
            await self._send([human_needed_message(due, coordinator_id, self._sender, link)])
            await self._mark(coordinator_id, human_needed_revision=due.human_needed_through)
            sent += 1
        elif due.human_needed_through:
            # Nothing needed a person (or this is the first look): move the mark, mail nothing.
            await self._mark(
                coordinator_id, human_needed_revision=due.human_needed_through, mailed=False
            )
        if sent:
            metrics.MAIL_MESSAGES.labels("sent").inc(sent)
            _log.info("mailed %s message(s) for %s to %s", sent, coordinator_id, due.owner)
        return sent

    async def _mark(
        self,
        coordinator_id: str,
        *,
        digest_day: str = "",
        human_needed_revision: int = 0,
        mailed: bool = True,
    ) -> None:
        await self._maintenance.MarkMailSent(
            maintenance_pb2.MarkMailSentRequest(
                coordinator_id=coordinator_id,
                digest_day=digest_day,
                human_needed_revision=human_needed_revision,
                mailed=mailed,
            ),
            metadata=self._metadata,
            timeout=self._timeout,
        )
