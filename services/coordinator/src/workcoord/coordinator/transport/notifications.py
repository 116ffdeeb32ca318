"""``NotificationService``: a work coordinator's webhooks and their deliveries. The signing
secret comes out once, in CreateWebhook's answer."""

from __future__ import annotations

from workcoord.api.v1 import notification_pb2, notification_pb2_grpc
from workcoord.coordinator.domain.inputs import (
    CreateWebhookInput,
    ListDeliveriesInput,
    ListWebhooksInput,
    UpdateWebhookInput,
    WebhookRef,
)

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller
from .mapping.webhooks import delivery_to_pb, webhook_to_pb

__all__ = ["NotificationServicer"]

N = notification_pb2


class NotificationServicer(EngineServicer, notification_pb2_grpc.NotificationServiceServicer):
    async def CreateWebhook(
        self, request: N.CreateWebhookRequest, context: Context
    ) -> N.CreateWebhookResponse:
        w = request.webhook
        enabled = w.enabled if w.HasField("enabled") else True
        command = CreateWebhookInput(
            coordinator_id=request.coordinator_id,
            url=w.url,
            event_types=tuple(w.event_types),
            format=w.format,
            enabled=enabled,
        )
        created = await self.engine.webhooks.create(caller().principal, command)
        return N.CreateWebhookResponse(webhook=webhook_to_pb(created.webhook, created.secret))

    async def ListWebhooks(
        self, request: N.ListWebhooksRequest, context: Context
    ) -> N.ListWebhooksResponse:
        listing = ListWebhooksInput(request.coordinator_id, request.page_size, request.page_token)
        page = await self.engine.webhooks.list_webhooks(caller().principal, listing)
        return m.page_to_pb(N.ListWebhooksResponse, "webhooks", page, webhook_to_pb)

    async def UpdateWebhook(
        self, request: N.UpdateWebhookRequest, context: Context
    ) -> N.UpdateWebhookResponse:
        w = request.webhook
        paths = list(request.update_mask.paths) or m.populated_paths(w)
        command = UpdateWebhookInput(
            coordinator_id=request.coordinator_id,
            webhook_id=request.webhook_id,
            update_mask=tuple(paths),
            url=w.url,
            event_types=tuple(w.event_types),
            format=w.format,
            enabled=w.enabled,
        )
        updated = await self.engine.webhooks.update(caller().principal, command)
        return N.UpdateWebhookResponse(webhook=webhook_to_pb(updated))

    async def DeleteWebhook(
        self, request: N.DeleteWebhookRequest, context: Context
    ) -> N.DeleteWebhookResponse:
        ref = WebhookRef(request.coordinator_id, request.webhook_id)
        await self.engine.webhooks.delete(caller().principal, ref)
        return N.DeleteWebhookResponse()

    async def ListDeliveries(
        self, request: N.ListDeliveriesRequest, context: Context
    ) -> N.ListDeliveriesResponse:
        listing = ListDeliveriesInput(
            request.coordinator_id, request.webhook_id, request.page_size, request.page_token
        )
        page = await self.engine.webhooks.list_deliveries(caller().principal, listing)
        return m.page_to_pb(N.ListDeliveriesResponse, "deliveries", page, delivery_to_pb)

    async def Redeliver(self, request: N.RedeliverRequest, context: Context) -> N.RedeliverResponse:
        ref = WebhookRef(request.coordinator_id, request.webhook_id, request.delivery_id)
        delivery = await self.engine.webhooks.redeliver(caller().principal, ref)
        return N.RedeliverResponse(delivery=delivery_to_pb(delivery))
