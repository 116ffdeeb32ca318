"""The records of webhooks and of their deliveries (the outbox).

A webhook's ``secret`` is stored as given to the store: sealing it at rest with the
installation key is the caller's (not built yet: see docs/security.md). A work coordinator
carries ``webhook_filters`` (webhook id → the event types it selects, enabled webhooks only):
read with the coordinator's lock by every write, it tells the store which appended events go
into the outbox without reading the webhooks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime


class DeliveryState(enum.StrEnum):
    PENDING = "PENDING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    DEAD = "DEAD"


DONE_DELIVERY_STATES = frozenset({DeliveryState.SUCCEEDED, DeliveryState.DEAD})


@dataclass(slots=True)
class Webhook:
    webhook_id: str
    coordinator_id: str
    url: str
    event_types: list[str]
    format: str
    enabled: bool
    secret: str
    create_time: datetime
    update_time: datetime
    failing_since: datetime | None = None


@dataclass(slots=True)
class Delivery:
    """One event to one webhook: written with the event, then kept up to date by the sender."""

    delivery_id: str
    webhook_id: str
    coordinator_id: str
    revision: int
    event_type: str
    state: DeliveryState
    attempt: int
    create_time: datetime
    update_time: datetime
    response_code: int = 0
    error: str = ""
    next_attempt_time: datetime | None = None
