"""The sender of webhook deliveries: takes what is due from an outbox, POSTs each delivery
signed, and records how it went — in revision order per webhook, retried with backoff, DEAD
after 24 hours.

The outbox is a port (:class:`Outbox`): it hands out, per webhook, the deliveries that are due
in revision order and never one behind an earlier undelivered one, and keeps what
:meth:`Outbox.record` says. A delivery is recorded only after its answer, so a sender stopped
mid-delivery (cancelled, killed) sends that delivery again when it restarts: receivers see
the same ``webhook-id`` twice, and lose nothing.

The engine's outbox adapter (``engine.webhooks``) is the :class:`Outbox` of the stores; the
engine gets :func:`make_sender` from the server (the domain imports no metrics), and runs it
behind ``MaintenanceService/DeliverWebhooks``, which the recovery leader calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import datetime

import httpx

from workcoord.coordinator.domain.webhooks import DeliveryState
from workcoord.coordinator.metrics import WEBHOOK_DELIVERIES, WEBHOOK_LAG
from workcoord.kit.clock import Clock

from . import outbound, payloads, schedule, signing
from .delivery import DeliveryResult, DueDelivery, Outbox

__all__ = ["DeliveryResult", "DueDelivery", "Outbox", "Sender", "make_sender", "result_of"]


def result_of(delivery: DueDelivery, outcome: outbound.Outcome, now: datetime) -> DeliveryResult:
    """The delivery's state after a try that ended with ``outcome`` at ``now``."""
    attempt = delivery.attempt + 1
    if outcome.succeeded:
        return DeliveryResult(DeliveryState.SUCCEEDED, attempt, outcome.response_code)
    retry_at = schedule.next_attempt_time(delivery.facts.time, attempt, now)
    state = DeliveryState.FAILED if retry_at is not None else DeliveryState.DEAD
    return DeliveryResult(state, attempt, outcome.response_code, outcome.error, retry_at)


def _outcome_label(outcome: outbound.Outcome, result: DeliveryResult) -> str:
    if result.state == DeliveryState.SUCCEEDED:
        return "succeeded"
    if result.state == DeliveryState.DEAD:
        return "dead"
    return "refused" if outcome.refused else "failed"


class Sender:
    """Sends what an :class:`Outbox` has due; one webhook's deliveries one after another (its
    order), different webhooks at the same time."""

    def __init__(
        self,
        outbox: Outbox,
        client: httpx.AsyncClient,
        clock: Clock,
        *,
        allowed_hosts: Iterable[str] = (),
        public_url: str = "",
        batch: int = 100,
    ) -> None:
        self._outbox = outbox
        self._client = client
        self._clock = clock
        self._allowed = frozenset(allowed_hosts)
        self._public_url = public_url
        self._batch = batch

    async def send_due(self) -> int:
        """One round: try every due delivery once; how many were tried."""
        due = await self._outbox.due(self._clock.now(), self._batch)
        by_webhook: dict[str, list[DueDelivery]] = {}
        for delivery in due:
            by_webhook.setdefault(delivery.webhook_id, []).append(delivery)
        tried = await asyncio.gather(*(self._send_in_order(q) for q in by_webhook.values()))
        return sum(tried)

    async def _send_in_order(self, queue: Sequence[DueDelivery]) -> int:
        """Send ``queue`` (one webhook's, in revision order) until one fails: the rest wait
        behind it, so the receiver sees the webhook's events in order."""
        tried = 0
        for delivery in queue:
            tried += 1
            result = await self.send(delivery)
            if result.state != DeliveryState.SUCCEEDED:
                break
        return tried

    async def send(self, delivery: DueDelivery) -> DeliveryResult:
        """Try one delivery and record how it went."""
        body = payloads.render(delivery.format, delivery.facts, self._public_url)
        try:
            target = outbound.check_url(delivery.url, self._allowed)
        except outbound.RefusedUrl as exc:
            outcome = outbound.Outcome(False, error=str(exc), refused=True)
        else:
            stamp = int(self._clock.now().timestamp())
            headers = signing.headers(delivery.secret, delivery.facts.event_id, stamp, body)
            outcome = await outbound.post(self._client, target, headers, body)
        now = self._clock.now()
        result = result_of(delivery, outcome, now)
        await self._outbox.record(delivery, result)
        WEBHOOK_DELIVERIES.labels(_outcome_label(outcome, result)).inc()
        if result.state == DeliveryState.SUCCEEDED:
            WEBHOOK_LAG.observe(max((now - delivery.facts.time).total_seconds(), 0.0))
        return result


def make_sender(
    outbox: Outbox,
    client: httpx.AsyncClient,
    clock: Clock,
    allowed_hosts: Iterable[str],
    public_url: str,
) -> Sender:
    """A :class:`Sender` (what the engine is given to build one per ``DeliverWebhooks``)."""
    return Sender(outbox, client, clock, allowed_hosts=allowed_hosts, public_url=public_url)
