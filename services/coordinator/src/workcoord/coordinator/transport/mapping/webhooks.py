"""Webhooks and their deliveries, as the API shows them: a webhook's secret only in the
answer of its creation."""

from __future__ import annotations

from workcoord.api.v1 import notification_pb2
from workcoord.coordinator.domain.notifications import event_id
from workcoord.coordinator.domain.webhooks import Delivery, Webhook

from .scalars import ts

__all__ = ["delivery_to_pb", "webhook_to_pb"]


def webhook_to_pb(webhook: Webhook, secret: str = "") -> notification_pb2.Webhook:
    """The webhook as the API shows it: ``secret`` is the plain one, given only on creation
    (the stored, sealed one never leaves)."""
    return notification_pb2.Webhook(
        webhook_id=webhook.webhook_id,
        coordinator_id=webhook.coordinator_id,
        url=webhook.url,
        event_types=list(webhook.event_types),
        format=webhook.format,
        enabled=webhook.enabled,
        secret=secret,
        create_time=ts(webhook.create_time),
        update_time=ts(webhook.update_time),
        failing_since=ts(webhook.failing_since),
    )


def delivery_to_pb(delivery: Delivery) -> notification_pb2.Delivery:
    return notification_pb2.Delivery(
        delivery_id=delivery.delivery_id,
        event_id=event_id(delivery.coordinator_id, delivery.revision),
        attempt=delivery.attempt,
        state=delivery.state.value,
        response_code=delivery.response_code,
        error=delivery.error,
        next_attempt_time=ts(delivery.next_attempt_time),
        revision=delivery.revision,
        event_type=delivery.event_type,
        create_time=ts(delivery.create_time),
        update_time=ts(delivery.update_time),
    )
