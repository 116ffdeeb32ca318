"""Webhooks and their deliveries. Statements: :mod:`.statements.webhooks`; the outbox rows
are inserted by the flush (:mod:`.coordinators`)."""

from __future__ import annotations

from collections.abc import Sequence

from workcoord.coordinator.domain.webhooks import Delivery, Webhook

from ._base import SqlTxBase
from .rows import DELIVERIES, WEBHOOKS
from .statements import webhooks as sql


class WebhooksSql(SqlTxBase):
    async def get_webhook(self, webhook_id: str) -> Webhook | None:
        row = await self._one(sql.GET_WEBHOOK, {"webhook_id": webhook_id})
        return WEBHOOKS.load(row) if row is not None else None

    async def list_webhooks(self, coordinator_id: str) -> list[Webhook]:
        return await self._list(WEBHOOKS, sql.LIST_WEBHOOKS, {"coordinator_id": coordinator_id})

    async def insert_webhook(self, webhook: Webhook) -> None:
        await self._insert(WEBHOOKS, [webhook])

    async def update_webhook(self, webhook: Webhook) -> None:
        await self._update_each(WEBHOOKS, "webhook_id", [webhook])

    async def delete_webhook(self, webhook_id: str) -> None:
        """Remove the webhook and its deliveries."""
        await self.conn.execute(sql.DELETE_DELIVERIES, {"webhook_id": webhook_id})
        await self.conn.execute(sql.DELETE_WEBHOOK, {"webhook_id": webhook_id})

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        row = await self._one(sql.GET_DELIVERY, {"delivery_id": delivery_id})
        return DELIVERIES.load(row) if row is not None else None

    async def list_deliveries(
        self, webhook_id: str, before_revision: int, limit: int
    ) -> list[Delivery]:
        params = {"webhook_id": webhook_id, "before_revision": before_revision, "limit": limit}
        return await self._list(DELIVERIES, sql.LIST_DELIVERIES, params)

    async def undone_deliveries(self, limit: int) -> list[Delivery]:
        return await self._list(DELIVERIES, sql.UNDONE_DELIVERIES, {"limit": limit})

    async def update_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        await self._update_each(DELIVERIES, "delivery_id", deliveries)
