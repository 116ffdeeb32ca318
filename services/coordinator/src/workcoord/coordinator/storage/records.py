"""What both stores derive from the domain's records in the same way: the rows of an append,
the keys a live attempt holds, the worker a first lease request registers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import (
    Attempt,
    Coordinator,
    Event,
    NewEvent,
    Worker,
    served_classes,
)
from workcoord.coordinator.domain.webhooks import Delivery, DeliveryState

__all__ = ["first_sighting", "hold_keys", "numbered_events"]


def event_time(now: datetime, last: datetime | None) -> datetime:
    """The time of events appended at ``now`` after one stamped ``last``: never earlier, so
    event times never decrease with revision (a wall clock stepped back, or a replica's clock
    behind the one that wrote the previous event)."""
    return last if last is not None and last > now else now


def numbered_events(
    coordinator: Coordinator, events: Sequence[NewEvent], actor: str, now: datetime
) -> list[Event]:
    """``events`` as the log's next entries, stamped ``now``: revisions follow the
    coordinator's."""
    return [
        Event(
            coordinator_id=coordinator.coordinator_id,
            revision=coordinator.revision + offset + 1,
            type=e.type,
            time=now,
            lane_id=e.lane_id,
            item_id=e.item_id,
            lease_id=e.lease_id,
            actor=actor,
            data=e.data,
        )
        for offset, e in enumerate(events)
    ]


def hold_keys(attempt: Attempt) -> list[str]:
    """The exclusive keys (and placement resources) an attempt holds while live."""
    return [k for k in attempt.exclusive_key.split(",") if k]


def first_sighting(
    coordinator_id: str,
    worker_id: str,
    worker_class: str,
    principal: str,
    now: datetime,
    worker_classes: Sequence[str] = (),
) -> Worker:
    """A worker first seen asking for work: registered bare, without its inventory, serving
    the classes it asked for."""
    classes = served_classes(worker_class, worker_classes)
    return Worker(
        coordinator_id=coordinator_id,
        worker_id=worker_id,
        worker_class=worker_class,
        worker_classes=list(classes) if len(classes) > 1 else [],
        create_time=now,
        observe_time=now,
        principal=principal,
        last_ask_time=now,
    )


def outbox_deliveries(
    filters: Mapping[str, Mapping[str, Sequence[str]]], events: Sequence[Event]
) -> list[Delivery]:
    """The outbox rows of ``events``: one PENDING delivery per event and enabled webhook that
    selects its type (``filters``: coordinator id → its ``webhook_filters``), due at once."""
    found = []
    for event in events:
        for webhook_id, types in (filters.get(event.coordinator_id) or {}).items():
            if event.type in types:
                found.append(
                    Delivery(
                        delivery_id=f"dlv_{uuid.uuid4().hex}",
                        webhook_id=webhook_id,
                        coordinator_id=event.coordinator_id,
                        revision=event.revision,
                        event_type=event.type.value,
                        state=DeliveryState.PENDING,
                        attempt=0,
                        create_time=event.time,
                        update_time=event.time,
                        next_attempt_time=event.time,
                    )
                )
    return found
