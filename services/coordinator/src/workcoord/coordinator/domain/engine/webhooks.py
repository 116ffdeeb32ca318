"""Webhooks of a work coordinator (``engine.webhooks``): create, list, update and delete them,
list and redeliver their deliveries (org admins and platform admins; never work keys), and
send what the outbox has due (the recovery leader's ``DeliverWebhooks``).

The signing secret is made here, shown once (``whsec_…``) and sealed at rest with the
installation key (the tracker credentials' AES-GCM sealer, the webhook's id as associated
data); it is opened only to sign a delivery. ``url`` is checked by the SSRF rules when it is
set (INVALID_ARGUMENT naming ``url``) and again at each connection (:mod:`...webhooks.outbound`).
Every change keeps the work coordinator's ``webhook_filters`` (enabled webhooks → the event
types they select) current, so the flush writes the outbox rows with the events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx

from workcoord.kit.clock import Clock
from workcoord.kit.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unimplemented,
)

from ...webhooks import outbound, payloads, schedule, signing
from ...webhooks.delivery import DeliveryResult, DueDelivery, Outbox, SendsDue
from ..auth import Access, Principal, PrincipalKind
from ..inputs import (
    CreateWebhookInput,
    ListDeliveriesInput,
    ListWebhooksInput,
    UpdateWebhookInput,
    WebhookRef,
)
from ..model import (
    Coordinator,
    DigestEntry,
    DigestKind,
    EventType,
    NewEvent,
    PendingAction,
    PendingActionState,
)
from ..notifications import event_id, expand_event_types, is_subscribable
from ..ports import Reader, Tx
from ..results import Page
from ..webhooks import Delivery, DeliveryState, Webhook
from ._base import EngineCore, EngineService, new_id
from .outbox_wake import OutboxWake
from .paging import PageRequest
from .tracker_connections import TrackerConnections

MakeSender = Callable[[Outbox, httpx.AsyncClient, Clock, Collection[str], str], SendsDue]
"""Builds the sender of one ``DeliverWebhooks`` call (the server passes
``webhooks.sender.make_sender``; the domain imports no metrics)."""

__all__ = ["MAX_WEBHOOKS", "REDELIVER_WEBHOOK", "CreatedWebhook", "MakeSender", "WebhookService"]

MAX_WEBHOOKS = 20
MAX_EVENT_TYPES = 64
REDELIVER_WEBHOOK = "REDELIVER_WEBHOOK"
"""The kind of the pending action a DEAD delivery opens (a human redelivers or resolves it)."""
_MUTABLE = ("url", "event_types", "format", "enabled")
_NEXT_ACTION = {
    EventType.APPROVAL_REQUESTED: "approve or deny",
    EventType.ITEM_STOPPED: "resume or cancel the item",
    EventType.ITEM_DEAD_LETTERED: "redrive or cancel the item",
    EventType.LANE_CLOSED_OUT: "read the close-out",
    EventType.PENDING_ACTION_OPENED: "resolve the pending action",
    EventType.ESCALATED: "answer the escalation",
}


@dataclass(frozen=True, slots=True)
class CreatedWebhook:
    """A new webhook and its signing secret (shown this once)."""

    webhook: Webhook
    secret: str


class WebhookService(EngineService):
    """The NotificationService commands, and the sender's outbox."""

    def __init__(self, core: EngineCore, connections: TrackerConnections) -> None:
        super().__init__(core)
        self.connections = connections
        self.written = asyncio.Event()
        # A commit of another replica wakes a waiting sender too (over the bus).
        self.wake = OutboxWake(core, self.written)
        # With nothing due and no wake-up, the outbox is looked at this often (retries falling
        # due, and coordinators past the watched ones).
        self.look_seconds = 1.0
        self._client: httpx.AsyncClient | None = None
        # Set by the server (``webhooks.sender.make_sender``); None: this engine sends nothing.
        self.make_sender: MakeSender | None = None

    # ------------------------------------------------------------------ commands

    async def create(self, principal: Principal, input: CreateWebhookInput) -> CreatedWebhook:
        url = self._check_url(input.url)
        event_types = _event_types(input.event_types)
        format_name = _format(input.format or payloads.STANDARD)
        sealer = await self.connections.sealer()
        async with self.core.command(principal, input.coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            effects,
        ):
            if len(await tx.list_webhooks(input.coordinator_id)) >= MAX_WEBHOOKS:
                raise InvalidArgument.single(
                    "webhook", f"a work coordinator has at most {MAX_WEBHOOKS} webhooks"
                )
            webhook_id = new_id("wh")
            secret = signing.new_secret()
            webhook = Webhook(
                webhook_id=webhook_id,
                coordinator_id=input.coordinator_id,
                url=url,
                event_types=event_types,
                format=format_name,
                enabled=input.enabled,
                secret=sealer.seal(webhook_id, secret),
                create_time=tx.now,
                update_time=tx.now,
            )
            await tx.insert_webhook(webhook)
            await self._changed(tx, coordinator, webhook, "CREATED", principal.name)
            effects.changed = True
        # Before the woken sender looks again (no await since the commit's wake-up).
        self.wake.forget()
        return CreatedWebhook(webhook, secret)

    async def list_webhooks(self, principal: Principal, input: ListWebhooksInput) -> Page[Webhook]:
        request = PageRequest.parse(
            input.page_size, input.page_token, ("ListWebhooks", input.coordinator_id)
        )
        async with self.core.store.read() as reader:
            await self.core.coordinator_for(
                reader, principal, input.coordinator_id, access=Access.CONFIGURE
            )
            found = await reader.list_webhooks(input.coordinator_id)
        after = request.after_id
        rows = [w for w in found if w.webhook_id > after][: request.fetch]
        return request.page(rows, lambda w: [w.webhook_id])

    async def update(self, principal: Principal, input: UpdateWebhookInput) -> Webhook:
        mask = tuple(input.update_mask)
        if not mask or any(m not in _MUTABLE for m in mask):
            raise InvalidArgument.single(
                "update_mask", f"names one or more of {', '.join(_MUTABLE)}"
            )
        url = self._check_url(input.url) if "url" in mask else None
        event_types = _event_types(input.event_types) if "event_types" in mask else None
        format_name = _format(input.format) if "format" in mask else None
        async with self.core.command(principal, input.coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            effects,
        ):
            webhook = await _owned(tx, input.coordinator_id, input.webhook_id)
            if url is not None:
                webhook.url = url
            if event_types is not None:
                webhook.event_types = event_types
            if format_name is not None:
                webhook.format = format_name
            if "enabled" in mask:
                webhook.enabled = input.enabled
                if input.enabled:
                    webhook.failing_since = None
            webhook.update_time = tx.now
            await tx.update_webhook(webhook)
            await self._changed(tx, coordinator, webhook, "UPDATED", principal.name)
            effects.changed = True
        self.wake.forget()
        return webhook

    async def delete(self, principal: Principal, input: WebhookRef) -> None:
        async with self.core.command(principal, input.coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            effects,
        ):
            webhook = await _owned(tx, input.coordinator_id, input.webhook_id)
            await tx.delete_webhook(webhook.webhook_id)
            webhook.enabled = False
            await self._changed(tx, coordinator, webhook, "DELETED", principal.name)
            effects.changed = True
        self.wake.forget()

    async def list_deliveries(
        self, principal: Principal, input: ListDeliveriesInput
    ) -> Page[Delivery]:
        scope = ("ListDeliveries", input.coordinator_id, input.webhook_id)
        request = PageRequest.parse(input.page_size, input.page_token, scope)
        async with self.core.store.read() as reader:
            await self.core.coordinator_for(
                reader, principal, input.coordinator_id, access=Access.CONFIGURE
            )
            await _owned(reader, input.coordinator_id, input.webhook_id)
            before = request.after_revision(2**62)
            found = await reader.list_deliveries(input.webhook_id, before, request.fetch)
        return request.page(found, lambda d: [d.revision])

    async def redeliver(self, principal: Principal, input: WebhookRef) -> Delivery:
        """Send the delivery again (as soon as the sender looks), with the same webhook-id."""
        async with self.core.command(principal, input.coordinator_id, Access.CONFIGURE) as (
            tx,
            _coordinator,
            effects,
        ):
            await _owned(tx, input.coordinator_id, input.webhook_id)
            delivery = await tx.get_delivery(input.delivery_id)
            if delivery is None or delivery.webhook_id != input.webhook_id:
                raise NotFound(f"delivery {input.delivery_id} not found")
            delivery.state = DeliveryState.PENDING
            delivery.next_attempt_time = tx.now
            delivery.update_time = tx.now
            await tx.update_deliveries([delivery])
            effects.changed = True
        self.written.set()
        return delivery

    # ------------------------------------------------------------------ the sender

    async def deliver(self, principal: Principal, wait_seconds: float, public_url: str) -> int:
        """Send every due delivery once (the recovery leader calls this in a loop); with
        nothing due, wait up to ``wait_seconds`` for an outbox row (a commit of this replica, a
        bus notification of another replica's commit on a coordinator with webhooks, or a
        redelivery) or a retry falling due (looked at every ``look_seconds``). How many were
        tried."""
        if principal.kind != PrincipalKind.SERVICE:
            raise PermissionDenied("only the recovery service sends webhook deliveries")
        if self.make_sender is None:
            raise Unimplemented("this coordinator sends no webhook deliveries")
        if self._client is None:
            self._client = httpx.AsyncClient()
        sender = self.make_sender(
            _Outbox(self),
            self._client,
            self.core.clock,
            self.core.outbound_allowed_hosts,
            public_url,
        )
        # Subscribed before the first look: a commit of any replica from here on wakes us.
        await self.wake.sync()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, min(wait_seconds, 60.0))
        while True:
            self.written.clear()
            tried = await sender.send_due()
            remaining = deadline - loop.time()
            if tried or remaining <= 0:
                return tried
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.written.wait(), timeout=min(remaining, self.look_seconds)
                )
            await self.wake.sync()

    async def aclose(self) -> None:
        await self.wake.close()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ------------------------------------------------------------------ helpers

    def _check_url(self, url: str) -> str:
        if not url:
            raise InvalidArgument.single("url", "is required")
        try:
            outbound.check_url(url, self.core.outbound_allowed_hosts)
        except outbound.RefusedUrl as exc:
            raise InvalidArgument.single("url", str(exc).removeprefix("url: ")) from exc
        return url

    async def _changed(
        self, tx: Tx, coordinator: Coordinator, webhook: Webhook, change: str, actor: str
    ) -> None:
        """Keep the coordinator's filters current and say what changed (never the secret)."""
        filters = dict(coordinator.webhook_filters)
        filters.pop(webhook.webhook_id, None)
        if webhook.enabled and change != "DELETED":
            filters[webhook.webhook_id] = sorted(expand_event_types(webhook.event_types))
        coordinator.webhook_filters = filters
        await tx.update_coordinator(coordinator)
        event = NewEvent(
            EventType.COORDINATOR_UPDATED,
            data={
                "webhook": {
                    "webhookId": webhook.webhook_id,
                    "change": change,
                    "enabled": webhook.enabled,
                    "format": webhook.format,
                    "eventTypes": list(webhook.event_types),
                }
            },
        )
        await self.core.append_events(tx, coordinator, [event], actor)


class _Outbox:
    """The stores' outbox rows as the sender's :class:`~...webhooks.sender.Outbox`."""

    def __init__(self, service: WebhookService) -> None:
        self._service = service

    async def due(self, now: datetime, limit: int) -> list[DueDelivery]:
        core = self._service.core
        sealer = await self._service.connections.sealer()
        due: list[DueDelivery] = []
        async with core.store.read() as reader:
            undone = await reader.undone_deliveries(limit * 4)
            webhooks: dict[str, Webhook | None] = {}
            blocked: set[str] = set()
            for delivery in undone:
                if len(due) >= limit:
                    break
                if delivery.webhook_id in blocked:
                    continue
                if delivery.webhook_id not in webhooks:
                    webhooks[delivery.webhook_id] = await reader.get_webhook(delivery.webhook_id)
                webhook = webhooks[delivery.webhook_id]
                when = delivery.next_attempt_time
                if webhook is None or not webhook.enabled or (when is not None and when > now):
                    # The rest of this webhook's deliveries wait behind this one (its order).
                    blocked.add(delivery.webhook_id)
                    continue
                facts = await _facts(reader, delivery)
                if facts is None:
                    blocked.add(delivery.webhook_id)
                    continue
                due.append(
                    DueDelivery(
                        delivery_id=delivery.delivery_id,
                        webhook_id=delivery.webhook_id,
                        url=webhook.url,
                        secret=sealer.open(webhook.webhook_id, webhook.secret),
                        format=webhook.format,
                        attempt=delivery.attempt,
                        facts=facts,
                    )
                )
        return due

    async def record(self, delivery: DueDelivery, result: DeliveryResult) -> None:
        core = self._service.core
        async with core.store.write(delivery.facts.coordinator_id) as tx:
            coordinator = tx.coordinator
            stored = await tx.get_delivery(delivery.delivery_id)
            webhook = await tx.get_webhook(delivery.webhook_id)
            if coordinator is None or stored is None or webhook is None:
                return  # deleted meanwhile
            stored.state = result.state
            stored.attempt = result.attempt
            stored.response_code = result.response_code
            stored.error = result.error[:500]
            stored.next_attempt_time = result.next_attempt_time
            stored.update_time = tx.now
            await tx.update_deliveries([stored])
            events: list[NewEvent] = []
            if result.state == DeliveryState.SUCCEEDED:
                if webhook.failing_since is not None:
                    webhook.failing_since = None
                    await tx.update_webhook(webhook)
            else:
                if webhook.failing_since is None:
                    webhook.failing_since = tx.now
                    await tx.update_webhook(webhook)
                elif schedule.should_disable(webhook.failing_since, tx.now) and webhook.enabled:
                    webhook.enabled = False
                    webhook.update_time = tx.now
                    await tx.update_webhook(webhook)
                    filters = dict(coordinator.webhook_filters)
                    filters.pop(webhook.webhook_id, None)
                    coordinator.webhook_filters = filters
                    await tx.update_coordinator(coordinator)
                    # Its owner is told in the digest (and the day's mail).
                    await tx.insert_digest_entries(
                        [_disabled_entry(tx, coordinator, webhook, result)]
                    )
                    events.append(
                        NewEvent(
                            EventType.COORDINATOR_UPDATED,
                            data={
                                "webhook": {
                                    "webhookId": webhook.webhook_id,
                                    "change": "DISABLED",
                                    "enabled": False,
                                    "reason": "failing for 24 hours",
                                }
                            },
                        )
                    )
            if result.state == DeliveryState.DEAD:
                events.extend(await _open_dead_action(tx, coordinator, stored, delivery))
            if events:
                await core.append_events(tx, coordinator, events, "recovery")


def _disabled_entry(
    tx: Tx, coordinator: Coordinator, webhook: Webhook, result: DeliveryResult
) -> DigestEntry:
    """The digest line of a webhook disabled after 24 h of failures. It names the webhook and
    the last answer, never the URL (a Slack URL is itself a credential) nor the error text."""
    answer = f"HTTP {result.response_code}" if result.response_code else "no answer"
    return DigestEntry(
        entry_id=new_id("dg"),
        coordinator_id=coordinator.coordinator_id,
        day=tx.now.date().isoformat(),
        owner=coordinator.config.digest_owner,
        kind=DigestKind.WEBHOOK_DISABLED,
        time=tx.now,
        reason=(
            f"webhook {webhook.webhook_id} disabled after failing for 24 hours "
            f"(last: {answer}); enable it again once its receiver answers"
        ),
    )


async def _open_dead_action(
    tx: Tx, coordinator: Coordinator, stored: Delivery, delivery: DueDelivery
) -> list[NewEvent]:
    """A DEAD delivery opens an owned pending action (the digest owner's): redeliver it or
    resolve it. It is never retried by the pending-action runner (no ticket to close)."""
    action = PendingAction(
        action_id=new_id("pa"),
        coordinator_id=coordinator.coordinator_id,
        lane_id=delivery.facts.lane_id,
        kind=REDELIVER_WEBHOOK,
        state=PendingActionState.OPEN,
        owner=coordinator.config.digest_owner,
        create_time=tx.now,
        update_time=tx.now,
        attempts=stored.attempt,
        last_error=stored.error,
    )
    await tx.insert_pending_actions([action])
    ref = {
        "actionId": action.action_id,
        "kind": REDELIVER_WEBHOOK,
        "webhookId": stored.webhook_id,
        "deliveryId": stored.delivery_id,
        "eventId": delivery.facts.event_id,
    }
    return [NewEvent(EventType.PENDING_ACTION_OPENED, lane_id=action.lane_id, data=ref)]


async def _facts(reader: Reader, delivery: Delivery) -> payloads.EventFacts | None:
    """What the delivery says of its event (None: the event is gone, e.g. compacted)."""
    events = await reader.list_events(delivery.coordinator_id, delivery.revision - 1, 1, "", "")
    if not events or events[0].revision != delivery.revision:
        return None
    event = events[0]
    coordinator = await reader.get_coordinator(delivery.coordinator_id)
    title = ""
    if event.lane_id:
        lanes = await reader.get_lanes([event.lane_id])
        title = lanes[0].title if lanes else ""
    return payloads.EventFacts(
        event_id=event_id(delivery.coordinator_id, delivery.revision),
        type=str(event.type),
        time=event.time,
        coordinator_id=delivery.coordinator_id,
        org_slug=coordinator.org_slug if coordinator is not None else "",
        revision=delivery.revision,
        lane_id=event.lane_id,
        item_id=event.item_id,
        lane_title=title,
        next_action=_NEXT_ACTION.get(event.type, ""),
    )


async def _owned(reader: Reader, coordinator_id: str, webhook_id: str) -> Webhook:
    webhook = await reader.get_webhook(webhook_id)
    if webhook is None or webhook.coordinator_id != coordinator_id:
        raise NotFound(f"webhook {webhook_id} not found")
    return webhook


def _event_types(names: Sequence[str]) -> list[str]:
    if not names:
        raise InvalidArgument.single("event_types", "name at least one event type or group")
    if len(names) > MAX_EVENT_TYPES:
        raise InvalidArgument.single("event_types", f"at most {MAX_EVENT_TYPES} names")
    unknown = [n for n in names if not is_subscribable(n)]
    if unknown:
        raise InvalidArgument.single(
            "event_types", f"unknown event type or group: {', '.join(unknown[:5])}"
        )
    return list(dict.fromkeys(names))


def _format(name: str) -> str:
    if name not in payloads.FORMATS:
        raise InvalidArgument.single("format", "is STANDARD or SLACK")
    return name
