"""What the sender and its outbox exchange: a delivery due now, the outcome of one try, and
the :class:`Outbox` port (plain data: the domain's outbox adapter imports it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from workcoord.coordinator.domain.webhooks import DeliveryState

from . import payloads

__all__ = ["DeliveryResult", "DueDelivery", "Outbox", "SendsDue"]


@dataclass(frozen=True, slots=True)
class DueDelivery:
    """One delivery to try now: the webhook's target and secret, and the event it carries.
    ``attempt`` is how many tries it had before this one."""

    delivery_id: str
    webhook_id: str
    url: str
    secret: str
    format: str
    attempt: int
    facts: payloads.EventFacts


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """What one try leaves: the delivery's new state, its tries so far, the answer and when
    to try again (FAILED only)."""

    state: DeliveryState
    attempt: int
    response_code: int = 0
    error: str = ""
    next_attempt_time: datetime | None = None


class Outbox(Protocol):
    async def due(self, now: datetime, limit: int) -> list[DueDelivery]:
        """At most ``limit`` deliveries due at ``now`` of enabled webhooks, in revision order
        per webhook, none behind an earlier delivery of its webhook that is not done."""
        ...

    async def record(self, delivery: DueDelivery, result: DeliveryResult) -> None:
        """Keep the outcome of one try of ``delivery``."""
        ...


class SendsDue(Protocol):
    async def send_due(self) -> int:
        """One round: try every due delivery once; how many were tried."""
        ...
