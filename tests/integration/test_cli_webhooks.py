"""``workcoord webhook …`` against the real coordinator: create (the secret printed once),
list (never the secret), update, deliveries, delete, and a refused URL named by its field."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.support.harness import Stack
from workcoord.cli.main import main


async def _cli(
    stack: Stack, capsys: pytest.CaptureFixture[str], *argv: str, expect: int = 0
) -> Any:
    # main() runs its own event loop: give it a thread.
    code = await asyncio.to_thread(
        main,
        [
            *argv,
            "--coordinator",
            stack.cid,
            "--address",
            stack.address,
            "--token",
            stack.admin_token,
        ],
    )
    out, err = capsys.readouterr()
    assert code == expect, err
    if expect:
        return err
    return json.loads(out) if out.strip() else {}


async def test_an_admin_manages_webhooks_from_the_cli(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "https://hooks.example.test/workcoord"
    created = await _cli(
        stack, capsys, "webhook", "create", "--url", url, "--event", "HUMAN_NEEDED", "-o", "json"
    )
    webhook = created.get("webhook", created)
    secret = webhook["secret"]
    assert secret.startswith("whsec_")
    webhook_id = webhook["webhookId"]
    assert webhook["url"] == url and webhook["enabled"] is True

    listed = await _cli(stack, capsys, "webhook", "list", "-o", "json")
    assert [w["webhookId"] for w in listed["webhooks"]] == [webhook_id]
    assert secret not in json.dumps(listed)

    updated = await _cli(stack, capsys, "webhook", "update", webhook_id, "--disable", "-o", "json")
    assert updated.get("webhook", updated)["enabled"] is False

    deliveries = await _cli(stack, capsys, "webhook", "deliveries", webhook_id, "-o", "json")
    assert deliveries.get("deliveries", []) == []

    err = await _cli(
        stack,
        capsys,
        "webhook",
        "create",
        "--url",
        "http://10.0.0.7/x",
        "--event",
        "LANE_DONE",
        expect=1,
    )
    assert "INVALID_ARGUMENT" in err and "url" in err, err

    await _cli(stack, capsys, "webhook", "delete", webhook_id)
    after = await _cli(stack, capsys, "webhook", "list", "-o", "json")
    assert after.get("webhooks", []) == []
