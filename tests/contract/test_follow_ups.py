"""The digest, pending actions, ticket syncs and escalations."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from workcoord.coordinator.domain.model import (
    DigestEntry,
    DigestKind,
    Escalation,
    ItemState,
    LaneState,
    PendingAction,
    PendingActionState,
    Ticket,
)
from workcoord.coordinator.domain.ports import Store

from .records import T0, at, coordinator, item, lane, seed_coordinator, seed_lane


def entry(
    entry_id: str, time: datetime, *, day: str = "2026-01-01", cid: str = "wc_a"
) -> DigestEntry:
    return DigestEntry(
        entry_id=entry_id,
        coordinator_id=cid,
        day=day,
        owner="ops@acme.test",
        kind=DigestKind.DEAD_LETTERED,
        time=time,
        lane_id="ln_a",
        item_id="it_a",
        action_id="pa_a",
        reason="exhausted",
    )


def action(
    action_id: str,
    next_attempt_time: datetime | None,
    *,
    state: PendingActionState = PendingActionState.OPEN,
    cid: str = "wc_a",
) -> PendingAction:
    return PendingAction(
        action_id=action_id,
        coordinator_id=cid,
        lane_id="ln_a",
        kind="CLOSE_TICKET",
        state=state,
        owner="ops@acme.test",
        create_time=T0,
        update_time=at(1),
        ticket_tracker="github",
        ticket_key="acme/parser#12",
        attempts=2,
        next_attempt_time=next_attempt_time,
        last_error="502 from the tracker",
        resolution="",
    )


def escalation(escalation_id: str, item_id: str, created: datetime) -> Escalation:
    return Escalation(
        escalation_id=escalation_id,
        coordinator_id="wc_a",
        lane_id="ln_a",
        item_id=item_id,
        reason="waited too long",
        escalated_to=["ops@acme.test", "wc_parent"],
        open=True,
        create_time=created,
    )


@pytest.mark.port("insert_digest_entries", "digest_entries")
async def test_a_day_of_the_digest_in_time_order(store: Store) -> None:
    entries = [
        entry("de_b", at(5)),
        entry("de_a", at(5)),
        entry("de_0", at(1)),
        entry("de_next_day", at(2), day="2026-01-02"),
        entry("de_other", at(0), cid="wc_b"),
    ]
    async with store.write() as tx:
        await tx.insert_digest_entries(entries)
        await tx.insert_digest_entries([])
    async with store.read() as reader:
        day = await reader.digest_entries("wc_a", "2026-01-01")
        assert [e.entry_id for e in day] == ["de_0", "de_a", "de_b"]
        assert day[1] == entries[1]
        assert await reader.digest_entries("wc_a", "2026-01-03") == []


@pytest.mark.port(
    "insert_pending_actions", "get_pending_action", "list_pending_actions", "update_pending_action"
)
async def test_pending_actions_by_id_and_state(store: Store) -> None:
    actions = [
        action("pa_c", at(5)),
        action("pa_a", at(5), state=PendingActionState.SUCCEEDED),
        action("pa_b", None, state=PendingActionState.RESOLVED),
        action("pa_other", at(5), cid="wc_b"),
    ]
    async with store.write() as tx:
        await tx.insert_pending_actions(actions)
        await tx.insert_pending_actions([])
    changed = replace(actions[0], state=PendingActionState.RESOLVED, resolution="by hand")
    async with store.write() as tx:
        await tx.update_pending_action(changed)
        await tx.update_pending_action(replace(changed, action_id="pa_missing"))  # no-op
    async with store.read() as reader:
        assert await reader.get_pending_action("pa_c") == changed
        assert await reader.get_pending_action("pa_missing") is None

        async def ids(state: PendingActionState | None, after: str, limit: int) -> list[str]:
            found = await reader.list_pending_actions("wc_a", state, after, limit)
            return [a.action_id for a in found]

        assert await ids(None, "", 10) == ["pa_a", "pa_b", "pa_c"]
        assert await ids(None, "pa_a", 1) == ["pa_b"]
        assert await ids(PendingActionState.RESOLVED, "", 10) == ["pa_b", "pa_c"]
        assert await ids(PendingActionState.OPEN, "", 10) == []


@pytest.mark.port("due_pending_actions")
async def test_due_pending_actions_soonest_first(store: Store) -> None:
    async with store.write() as tx:
        await tx.insert_pending_actions(
            [
                action("pa_late", at(50)),
                action("pa_b", at(10)),
                action("pa_a", at(10)),
                action("pa_first", at(2)),
                action("pa_untimed", None),
                action("pa_done", at(1), state=PendingActionState.SUCCEEDED),
                action("pa_other", at(1), cid="wc_b"),
            ]
        )
    async with store.read() as reader:

        async def ids(now: datetime, limit: int) -> list[str]:
            return [a.action_id for a in await reader.due_pending_actions("wc_a", now, limit)]

        # An action without a time is due, after those that have one (PostgreSQL's order).
        assert await ids(at(10), 10) == ["pa_first", "pa_a", "pa_b", "pa_untimed"]
        assert await ids(at(10), 2) == ["pa_first", "pa_a"]
        assert await ids(at(60), 10) == ["pa_first", "pa_a", "pa_b", "pa_late", "pa_untimed"]


@pytest.mark.port("update_ticket", "tickets_to_sync")
async def test_tickets_of_open_lanes_sync_longest_unsynced_first(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    await seed_lane(store)
    await seed_lane(store, record=lane("ln_live", state=LaneState.LIVE))
    await seed_lane(store, record=lane("ln_done", state=LaneState.DONE))
    await seed_lane(store, record=lane("ln_b", "wc_b"))
    tickets = [
        ("wc_a", Ticket("ln_a", "github", "k3", "https://x/3", "OPEN", at(5))),
        ("wc_a", Ticket("ln_live", "github", "k1", "https://x/1", "OPEN", at(2))),
        ("wc_a", Ticket("ln_a", "jira", "k2", "https://x/2")),
        ("wc_a", Ticket("ln_a", "jira", "k0", "https://x/0")),
        ("wc_a", Ticket("ln_done", "github", "k9", "https://x/9")),
        ("wc_b", Ticket("ln_b", "github", "k4", "https://x/4")),
    ]
    async with store.write() as tx:
        for cid, ticket in tickets:
            await tx.insert_ticket(cid, ticket)
    async with store.write() as tx:

        async def keys(limit: int) -> list[str]:
            return [tk.key for tk in await tx.tickets_to_sync("wc_a", limit)]

        assert await keys(10) == ["k0", "k2", "k1", "k3"]
        assert await keys(3) == ["k0", "k2", "k1"]
        synced = Ticket("ln_a", "jira", "k0", "https://ignored", "CLOSED", at(9))
        await tx.update_ticket("wc_a", synced)
        await tx.update_ticket("wc_a", replace(synced, key="k_missing"))  # no-op
        assert await keys(10) == ["k2", "k1", "k3", "k0"]
        # Only what the tracker said is written: the URL stays.
        found = await tx.lane_tickets(["ln_a"])
        assert Ticket("ln_a", "jira", "k0", "https://x/0", "CLOSED", at(9)) in found


@pytest.mark.port("insert_escalations", "open_escalations", "resolve_escalations")
async def test_escalations_open_until_resolved_by_item(store: Store) -> None:
    escalations = [
        escalation("es_b", "it_1", at(2)),
        escalation("es_a", "it_2", at(2)),
        escalation("es_0", "it_3", at(1)),
        replace(escalation("es_other", "it_1", at(0)), coordinator_id="wc_b"),
    ]
    async with store.write() as tx:
        await tx.insert_escalations(escalations)
        await tx.insert_escalations([])
    async with store.write() as tx:
        assert [e.escalation_id for e in await tx.open_escalations("wc_a")] == [
            "es_0",
            "es_a",
            "es_b",
        ]
        await tx.resolve_escalations("wc_a", ["it_1", "it_3"], at(7))
        await tx.resolve_escalations("wc_a", [], at(8))
    async with store.read() as reader:
        assert await reader.open_escalations("wc_a") == [escalations[1]]
        assert [e.escalation_id for e in await reader.open_escalations("wc_b")] == ["es_other"]


@pytest.mark.port("escalation_candidates")
async def test_escalation_candidates_are_ready_items_waiting_too_long(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    await seed_lane(
        store,
        item("it_b", "ln_a", seq=1, ready_time=at(5)),
        item("it_a", "ln_a", seq=2, ready_time=at(5)),
        item("it_0", "ln_a", seq=3, ready_time=at(1)),
        item("it_recent", "ln_a", seq=4, ready_time=at(50)),
        item("it_untimed", "ln_a", seq=5, ready_time=None),
        item("it_held", "ln_a", seq=6, ready_time=at(1), held=True),
        item("it_backoff", "ln_a", seq=7, ready_time=at(1), not_before=at(100)),
        item("it_leased", "ln_a", seq=8, ready_time=at(1), state=ItemState.LEASED),
        item("it_escalated", "ln_a", seq=9, ready_time=at(1)),
    )
    await seed_lane(
        store, item("it_b_other", "ln_b", coordinator_id="wc_b"), record=lane("ln_b", "wc_b")
    )
    async with store.write("wc_a") as tx:
        await tx.insert_escalations([escalation("es_1", "it_escalated", at(2))])
    async with store.read() as reader:

        async def ids(ready_before: datetime, limit: int) -> list[str]:
            found = await reader.escalation_candidates("wc_a", at(60), ready_before, limit)
            return [i.item_id for i in found]

        assert await ids(at(10), 10) == ["it_0", "it_a", "it_b"]
        assert await ids(at(10), 2) == ["it_0", "it_a"]
        assert await ids(at(50), 10) == ["it_0", "it_a", "it_b", "it_recent"]
        assert await ids(at(0), 10) == []
    async with store.write("wc_a") as tx:
        await tx.resolve_escalations("wc_a", ["it_escalated"], at(61))
    async with store.read() as reader:
        found = await reader.escalation_candidates("wc_a", at(60), at(1), 10)
        assert [i.item_id for i in found] == ["it_0", "it_escalated"]


@pytest.mark.port("resolve_escalations", "open_escalations", "insert_escalations")
async def test_a_resolution_is_seen_in_its_transaction_and_closes_only_what_was_open(
    store: Store,
) -> None:
    """The SQL store holds resolutions back (a claim writes them with its flush): a read in the
    same transaction still sees them, and an escalation inserted after a resolution of its
    item stays open, as if the resolution had been written at once."""
    async with store.write() as tx:
        await tx.insert_escalations([escalation("es_1", "it_1", at(1))])
    async with store.write() as tx:
        await tx.resolve_escalations("wc_a", ["it_1"], at(5))
        assert await tx.open_escalations("wc_a") == []
        await tx.insert_escalations([escalation("es_2", "it_1", at(6))])
        assert [e.escalation_id for e in await tx.open_escalations("wc_a")] == ["es_2"]
        await tx.resolve_escalations("wc_a", ["it_9"], at(7))  # none open: nothing happens
    async with store.read() as reader:
        assert [e.escalation_id for e in await reader.open_escalations("wc_a")] == ["es_2"]
    async with store.write() as tx:
        await tx.resolve_escalations("wc_a", ["it_1"], at(8))  # written by the flush alone
    async with store.read() as reader:
        assert await reader.open_escalations("wc_a") == []
