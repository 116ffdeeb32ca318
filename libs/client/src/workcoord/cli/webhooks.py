"""``workcoord webhook create|list|update|delete|deliveries|redeliver``: a work coordinator's
webhooks and their deliveries. The signing secret (``whsec_…``) is printed once, by
``create``; nothing shows it again."""

from __future__ import annotations

import argparse

from google.protobuf import field_mask_pb2

from workcoord.api.v1 import notification_pb2
from workcoord.cli.common import (
    add_client_flags,
    add_command_group,
    add_paging_flags,
    request_of,
    set_call,
)

__all__ = ["register"]

N = notification_pb2
_FORMATS = ("STANDARD", "SLACK")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``webhook``."""
    sub = add_command_group(
        commands,
        "webhook_command",
        "webhook",
        help="webhooks: signed deliveries of the work coordinator's events",
    )
    create = sub.add_parser("create", help="add a webhook (prints its secret, once)")
    create.add_argument("--url", required=True, help="https (or an allowed host's) URL")
    create.add_argument(
        "--event",
        dest="event_types",
        action="append",
        required=True,
        metavar="TYPE",
        help="an event type or group (HUMAN_NEEDED, LANE_OUTCOMES); repeat for several",
    )
    create.add_argument("--format", default="STANDARD", choices=_FORMATS)
    create.add_argument("--disabled", action="store_true", help="create it paused")
    set_call(create, _create_request, lambda c: c.notifications.CreateWebhook)

    list_ = sub.add_parser("list", help="list the webhooks (never their secrets)")
    add_paging_flags(list_)
    set_call(
        list_,
        request_of(N.ListWebhooksRequest, "coordinator_id", paged=True),
        lambda c: c.notifications.ListWebhooks,
    )

    update = sub.add_parser("update", help="change a webhook's url, events, format or state")
    update.add_argument("webhook_id", metavar="WEBHOOK_ID")
    update.add_argument("--url", default=None)
    update.add_argument("--event", dest="event_types", action="append", default=None)
    update.add_argument("--format", default=None, choices=_FORMATS)
    state = update.add_mutually_exclusive_group()
    state.add_argument("--enable", dest="enabled", action="store_true", default=None)
    state.add_argument("--disable", dest="enabled", action="store_false")
    set_call(update, _update_request, lambda c: c.notifications.UpdateWebhook)

    delete = sub.add_parser("delete", help="delete a webhook and its deliveries")
    delete.add_argument("webhook_id", metavar="WEBHOOK_ID")
    set_call(
        delete,
        request_of(N.DeleteWebhookRequest, "coordinator_id", "webhook_id"),
        lambda c: c.notifications.DeleteWebhook,
    )

    deliveries = sub.add_parser("deliveries", help="list a webhook's deliveries, newest first")
    deliveries.add_argument("webhook_id", metavar="WEBHOOK_ID")
    add_paging_flags(deliveries)
    set_call(
        deliveries,
        request_of(N.ListDeliveriesRequest, "coordinator_id", "webhook_id", paged=True),
        lambda c: c.notifications.ListDeliveries,
    )

    redeliver = sub.add_parser("redeliver", help="send a delivery again (same webhook-id)")
    redeliver.add_argument("webhook_id", metavar="WEBHOOK_ID")
    redeliver.add_argument("delivery_id", metavar="DELIVERY_ID")
    set_call(
        redeliver,
        request_of(N.RedeliverRequest, "coordinator_id", "webhook_id", "delivery_id"),
        lambda c: c.notifications.Redeliver,
    )
    add_client_flags((create, list_, update, delete, deliveries, redeliver), coordinator=True)


def _create_request(args: argparse.Namespace) -> N.CreateWebhookRequest:
    return N.CreateWebhookRequest(
        coordinator_id=args.coordinator_id,
        webhook=N.Webhook(
            url=args.url,
            event_types=args.event_types,
            format=args.format,
            enabled=not args.disabled,
        ),
    )


def _update_request(args: argparse.Namespace) -> N.UpdateWebhookRequest:
    webhook = N.Webhook()
    paths: list[str] = []
    if args.url is not None:
        webhook.url = args.url
        paths.append("url")
    if args.event_types is not None:
        webhook.event_types.extend(args.event_types)
        paths.append("event_types")
    if args.format is not None:
        webhook.format = args.format
        paths.append("format")
    if args.enabled is not None:
        webhook.enabled = args.enabled
        paths.append("enabled")
    return N.UpdateWebhookRequest(
        coordinator_id=args.coordinator_id,
        webhook_id=args.webhook_id,
        webhook=webhook,
        update_mask=field_mask_pb2.FieldMask(paths=paths),
    )
