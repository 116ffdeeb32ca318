"""Webhooks and the outbox: a webhook round-trips; the events a coordinator's webhook filters
select get one PENDING delivery per webhook in the events' own transaction (and none without
a matching webhook); deliveries list newest first, the undone ones by webhook and revision,
and go with their webhook."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import EventType, NewEvent
from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.domain.webhooks import Delivery, DeliveryState, Webhook

from .records import T0, at, seed_coordinator, seed_events


def _webhook(webhook_id: str, types: list[str]) -> Webhook:
    return Webhook(
        webhook_id=webhook_id,
        coordinator_id="wc_a",
        url="https://hooks.example/x",
        event_types=types,
        format="STANDARD",
        enabled=True,
        secret="whsec_c2VjcmV0",
        create_time=T0,
        update_time=T0,
    )


async def _with_webhooks(store: Store, filters: dict[str, list[str]]) -> None:
    seeded = await seed_coordinator(store)
    async with store.write("wc_a") as tx:
        for webhook_id, types in filters.items():
            await tx.insert_webhook(_webhook(webhook_id, types))
        await tx.update_coordinator(replace(seeded, webhook_filters=filters))


@pytest.mark.port("insert_webhook", "get_webhook", "list_webhooks", "update_webhook")
async def test_a_webhook_round_trips(store: Store) -> None:
    await seed_coordinator(store)
    hook = _webhook("wh_1", ["APPROVAL_REQUESTED"])
    async with store.write("wc_a") as tx:
        await tx.insert_webhook(hook)
        await tx.insert_webhook(_webhook("wh_0", ["LANE_DONE"]))
    async with store.write("wc_a") as tx:
        assert await tx.get_webhook("wh_1") == hook
        assert await tx.get_webhook("wh_x") is None
        changed = replace(hook, enabled=False, failing_since=at(5), update_time=at(5))
        await tx.update_webhook(changed)
    async with store.read() as reader:
        assert [w.webhook_id for w in await reader.list_webhooks("wc_a")] == ["wh_0", "wh_1"]
        assert await reader.get_webhook("wh_1") == changed
        assert await reader.list_webhooks("wc_b") == []


@pytest.mark.port("append", "undone_deliveries", "list_deliveries", "get_delivery")
async def test_selected_events_go_to_the_outbox_with_the_event(store: Store) -> None:
    await _with_webhooks(
        store, {"wh_a": ["APPROVAL_REQUESTED", "LANE_DONE"], "wh_b": ["LANE_DONE"]}
    )
    await seed_events(
        store,
        "wc_a",
        [
            NewEvent(EventType.ITEM_LEASED),
            NewEvent(EventType.APPROVAL_REQUESTED),
            NewEvent(EventType.LANE_DONE),
        ],
    )
    async with store.read() as reader:
        undone = await reader.undone_deliveries(10)
        assert [(d.webhook_id, d.revision, d.event_type) for d in undone] == [
            ("wh_a", 2, "APPROVAL_REQUESTED"),
            ("wh_a", 3, "LANE_DONE"),
            ("wh_b", 3, "LANE_DONE"),
        ]
        assert {d.state for d in undone} == {DeliveryState.PENDING}
        assert all(d.next_attempt_time == d.create_time for d in undone)
        newest = await reader.list_deliveries("wh_a", 2**62, 10)
        assert [d.revision for d in newest] == [3, 2]
        assert [d.revision for d in await reader.list_deliveries("wh_a", 3, 10)] == [2]
        assert await reader.get_delivery(undone[0].delivery_id) == undone[0]
        assert await reader.get_delivery("dlv_x") is None


@pytest.mark.port("append")
async def test_no_outbox_row_without_a_matching_webhook(store: Store) -> None:
    await _with_webhooks(store, {})
    await seed_events(store, "wc_a", [NewEvent(EventType.APPROVAL_REQUESTED)])
    async with store.read() as reader:
        assert await reader.undone_deliveries(10) == []


@pytest.mark.port("update_deliveries", "delete_webhook", "undone_deliveries")
async def test_deliveries_are_updated_and_go_with_their_webhook(store: Store) -> None:
    await _with_webhooks(store, {"wh_a": ["LANE_DONE"], "wh_b": ["LANE_DONE"]})
    await seed_events(store, "wc_a", [NewEvent(EventType.LANE_DONE)])
    async with store.read() as reader:
        first, second = await reader.undone_deliveries(10)
    done: Delivery = replace(first, state=DeliveryState.SUCCEEDED, attempt=1, response_code=204)
    failed = replace(second, state=DeliveryState.FAILED, attempt=1, error="HTTP 500")
    async with store.write("wc_a") as tx:
        await tx.update_deliveries([done, failed])
    async with store.read() as reader:
        assert await reader.undone_deliveries(10) == [failed]
        assert await reader.get_delivery(done.delivery_id) == done
    async with store.write("wc_a") as tx:
        await tx.delete_webhook("wh_b")
    async with store.read() as reader:
        assert await reader.undone_deliveries(10) == []
        assert await reader.get_webhook("wh_b") is None
        assert [d.webhook_id for d in await reader.list_deliveries("wh_a", 2**62, 10)] == ["wh_a"]
