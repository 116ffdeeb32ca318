"""``workcoord webhook …``: the requests it builds and the tables it prints (the secret only
in create's answer)."""

from __future__ import annotations

import argparse

from workcoord.api.v1 import notification_pb2 as N
from workcoord.cli import webhooks
from workcoord.cli.main import build_parser
from workcoord.cli.output import render_table


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["webhook", *argv, "--coordinator", "wc_1"])


def test_create_names_url_events_and_format() -> None:
    args = parse(
        "create", "--url", "https://hooks.test/x", "--event", "HUMAN_NEEDED", "--format", "SLACK"
    )
    request = webhooks._create_request(args)
    assert request == N.CreateWebhookRequest(
        coordinator_id="wc_1",
        webhook=N.Webhook(
            url="https://hooks.test/x", event_types=["HUMAN_NEEDED"], format="SLACK", enabled=True
        ),
    )
    paused = webhooks._create_request(
        parse("create", "--url", "https://h.test/", "--event", "LANE_DONE", "--disabled")
    )
    assert paused.webhook.HasField("enabled") and paused.webhook.enabled is False


def test_update_masks_only_what_it_changes() -> None:
    request = webhooks._update_request(
        parse("update", "wh_1", "--disable", "--event", "LANE_OUTCOMES")
    )
    assert request.webhook_id == "wh_1"
    assert list(request.update_mask.paths) == ["event_types", "enabled"]
    assert request.webhook.enabled is False and request.webhook.HasField("enabled")
    enable = webhooks._update_request(parse("update", "wh_1", "--enable"))
    assert list(enable.update_mask.paths) == ["enabled"] and enable.webhook.enabled is True


def test_deliveries_and_redeliver_parse() -> None:
    args = parse("deliveries", "wh_1")
    assert args.webhook_id == "wh_1"
    args = parse("redeliver", "wh_1", "dl_2")
    assert (args.webhook_id, args.delivery_id) == ("wh_1", "dl_2")


def test_tables_show_the_secret_only_on_create() -> None:
    hook = N.Webhook(
        webhook_id="wh_1", url="https://h.test/", event_types=["HUMAN_NEEDED"], enabled=True
    )
    listed = render_table(N.ListWebhooksResponse(webhooks=[hook]))
    assert "wh_1" in listed and "HUMAN_NEEDED" in listed and "whsec_" not in listed
    created = N.CreateWebhookResponse(webhook=N.Webhook(webhook_id="wh_1", secret="whsec_abc"))
    assert "whsec_abc" in render_table(created)
    table = render_table(
        N.ListDeliveriesResponse(
            deliveries=[N.Delivery(delivery_id="dl_1", event_id="evt_wc_1_7", state="DEAD")]
        )
    )
    assert "dl_1" in table and "DEAD" in table and "evt_wc_1_7" in table
