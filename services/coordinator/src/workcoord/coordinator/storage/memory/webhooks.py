"""Webhooks and their deliveries, in memory: the twin of :mod:`..sql.webhooks`."""

from __future__ import annotations

from collections.abc import Sequence

from workcoord.coordinator.domain.webhooks import DONE_DELIVERY_STATES, Delivery, Webhook

from ._base import MemoryTxBase, copied, insert_new, selected


class WebhooksMemory(MemoryTxBase):
    async def get_webhook(self, webhook_id: str) -> Webhook | None:
        found = self.tables.webhooks.get(webhook_id)
        return copied(found) if found is not None else None

    async def list_webhooks(self, coordinator_id: str) -> list[Webhook]:
        return selected(
            self.tables.webhooks.values(),
            lambda w: w.coordinator_id == coordinator_id,
            lambda w: w.webhook_id,
        )

    async def insert_webhook(self, webhook: Webhook) -> None:
        insert_new(self._w().webhooks, [webhook], lambda w: w.webhook_id, "pk_webhooks")

    async def update_webhook(self, webhook: Webhook) -> None:
        webhooks = self._w().webhooks
        if webhook.webhook_id in webhooks:
            webhooks[webhook.webhook_id] = copied(webhook)

    async def delete_webhook(self, webhook_id: str) -> None:
        tables = self._w()
        tables.webhooks.pop(webhook_id, None)
        tables.deliveries = {
            k: d for k, d in tables.deliveries.items() if d.webhook_id != webhook_id
        }

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        found = self.tables.deliveries.get(delivery_id)
        return copied(found) if found is not None else None

    async def list_deliveries(
        self, webhook_id: str, before_revision: int, limit: int
    ) -> list[Delivery]:
        return selected(
            self.tables.deliveries.values(),
            lambda d: d.webhook_id == webhook_id and d.revision < before_revision,
            lambda d: -d.revision,
            limit,
        )

    async def undone_deliveries(self, limit: int) -> list[Delivery]:
        return selected(
            self.tables.deliveries.values(),
            lambda d: d.state not in DONE_DELIVERY_STATES,
            lambda d: (d.webhook_id, d.revision),
            limit,
        )

    async def update_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        stored = self._w().deliveries
        for delivery in deliveries:
            if delivery.delivery_id in stored:
                stored[delivery.delivery_id] = copied(delivery)
