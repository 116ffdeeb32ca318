"""Lanes, their blockers and tickets, and items: readiness and claim order."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from workcoord.coordinator.domain.model import Blocker, ItemState, LaneState, Ticket
from workcoord.coordinator.domain.ports import ClaimCursor, ClaimScan, Store

from .records import T0, at, coordinator, item, lane, seed_coordinator, seed_lane


@pytest.mark.port("insert_lane", "get_lane")
async def test_a_lane_round_trips_with_its_spec(store: Store) -> None:
    await seed_coordinator(store)
    stored = await seed_lane(store, record=lane("ln_a", request_id="req-1"))
    async with store.write("wc_a") as tx:
        assert await tx.get_lane("ln_a") == stored
        assert await tx.get_lane("ln_x") is None


@pytest.mark.port("list_lanes")
async def test_lanes_list_newest_first_with_a_cursor(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    lanes = [
        lane("ln_1", create_time=at(1)),
        lane("ln_2", create_time=at(2), state=LaneState.DONE),
        lane("ln_3", create_time=at(2)),  # same time as ln_2: the id breaks the tie
        lane("ln_4", create_time=at(3)),
        lane("ln_other", "wc_b", create_time=at(9)),
    ]
    for record in lanes:
        await seed_lane(store, record=record)
    async with store.read() as reader:

        async def ids(
            state: LaneState | None, after: tuple[datetime, str] | None, limit: int
        ) -> list[str]:
            return [x.lane_id for x in await reader.list_lanes("wc_a", state, after, limit)]

        assert await ids(None, None, 10) == ["ln_4", "ln_3", "ln_2", "ln_1"]
        assert await ids(None, None, 2) == ["ln_4", "ln_3"]
        assert await ids(None, (at(2), "ln_3"), 10) == ["ln_2", "ln_1"]
        assert await ids(None, (at(2), "ln_2"), 10) == ["ln_1"]
        assert await ids(LaneState.ACTIVE, None, 10) == ["ln_4", "ln_3", "ln_1"]
        assert await ids(LaneState.ACTIVE, (at(3), "ln_4"), 1) == ["ln_3"]


@pytest.mark.port("update_lane")
async def test_update_lane_writes_the_lane_and_moves_its_version(store: Store) -> None:
    await seed_coordinator(store)
    stored = await seed_lane(store)
    changed = replace(
        stored,
        state=LaneState.CLOSED_OUT,
        paused=False,
        paused_time=None,
        close_reason="second FAIL",
        fail_rounds=2,
        worker_classes={"build": "claude"},
        placement=None,
        receipt=None,
        update_time=at(40),
    )
    async with store.write("wc_a") as tx:
        await tx.update_lane(changed)
    assert changed.version == stored.version + 1
    async with store.read() as reader:
        assert await reader.get_lane("ln_a") == changed


@pytest.mark.port("insert_blocker", "lane_blockers", "update_blocker")
async def test_blockers_of_lanes(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store)
    await seed_lane(store, record=lane("ln_b"))
    blockers = [
        Blocker("bl_2", "ln_a", "needs a key", True, at(2)),
        Blocker("bl_1", "ln_a", "waits on infra", True, at(2)),
        Blocker("bl_0", "ln_a", "earliest", True, at(1)),
        Blocker("bl_9", "ln_b", "other lane", True, at(0)),
    ]
    async with store.write("wc_a") as tx:
        for blocker in blockers:
            await tx.insert_blocker("wc_a", blocker)
    resolved = replace(blockers[0], open=False, resolve_time=at(5), reason="ignored")
    async with store.write("wc_a") as tx:
        await tx.update_blocker(resolved)
    async with store.read() as reader:
        found = await reader.lane_blockers(["ln_a"])
        assert [b.blocker_id for b in found] == ["bl_0", "bl_1", "bl_2"]
        # Only the state is written: the reason stays.
        assert found[2] == replace(blockers[0], open=False, resolve_time=at(5))
        assert [b.blocker_id for b in await reader.lane_blockers(["ln_a", "ln_b"])] == [
            "bl_9",
            "bl_0",
            "bl_1",
            "bl_2",
        ]
        assert await reader.lane_blockers([]) == []


@pytest.mark.port("insert_ticket", "lane_tickets")
async def test_tickets_of_lanes(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store)
    await seed_lane(store, record=lane("ln_b"))
    tickets = [
        Ticket("ln_a", "jira", "PAR-2", "https://jira/PAR-2"),
        Ticket("ln_a", "github", "acme/parser#12", "https://github/12", "OPEN", at(3)),
        Ticket("ln_a", "jira", "PAR-1"),
        Ticket("ln_b", "github", "PAR-1"),
        Ticket("ln_a", "github", "PAR-1"),
    ]
    async with store.write("wc_a") as tx:
        for ticket in tickets:
            await tx.insert_ticket("wc_a", ticket)
    async with store.read() as reader:
        found = await reader.lane_tickets(["ln_a", "ln_b"])
        assert [(tk.key, tk.tracker, tk.lane_id) for tk in found] == [
            ("PAR-1", "github", "ln_a"),
            ("PAR-1", "github", "ln_b"),
            ("PAR-1", "jira", "ln_a"),
            ("PAR-2", "jira", "ln_a"),
            ("acme/parser#12", "github", "ln_a"),
        ]
        assert tickets[1] in found and tickets[0] in found
        assert await reader.lane_tickets([]) == []


@pytest.mark.port(
    "insert_items",
    "get_item",
    "items_by_ids",
    "lane_items",
    "lane_item_states",
    "lane_with_state_counts",
    "update_items",
)
async def test_items_round_trip_and_list_by_lane(store: Store) -> None:
    await seed_coordinator(store)
    items = [item("it_b", "ln_a", seq=2), item("it_a", "ln_a", seq=3), item("it_c", "ln_a", seq=1)]
    await seed_lane(store, *items)
    await seed_lane(store, item("it_z", "ln_b", seq=4), record=lane("ln_b"))
    async with store.write("wc_a") as tx:
        assert await tx.get_item("it_a") == items[1]
        assert await tx.get_item("it_x") is None
        assert await tx.items_by_ids(["it_c", "it_x", "it_a", "it_c"]) == [items[1], items[2]]
        assert await tx.items_by_ids([]) == []
        assert [i.item_id for i in await tx.lane_items(["ln_a"])] == ["it_c", "it_b", "it_a"]
        assert [i.item_id for i in await tx.lane_items(["ln_b", "ln_a"])] == [
            "it_c",
            "it_b",
            "it_a",
            "it_z",
        ]
        assert await tx.lane_items([]) == []
        changed = [
            replace(items[0], state=ItemState.SUCCEEDED, not_before=at(9), evidence=None),
            replace(items[1], state=ItemState.DEAD, dead_letter_reason=None, held=True),
            replace(items[0], item_id="it_missing"),  # no-op
        ]
        await tx.update_items(changed)
        await tx.update_items([])
        # Within the transaction the updated states count with the lane.
        found, counts = await tx.lane_with_state_counts("ln_a")
        assert found is not None and found.lane_id == "ln_a"
        assert counts == {ItemState.DEAD: 1, ItemState.SUCCEEDED: 1, ItemState.QUEUED: 1}
        assert await tx.lane_with_state_counts("ln_x") == (None, {})
        await tx.update_items([replace(items[2], state=ItemState.SUCCEEDED)])
        assert (await tx.lane_with_state_counts("ln_a"))[1] == {
            ItemState.DEAD: 1,
            ItemState.SUCCEEDED: 2,
        }
    await seed_lane(store, record=lane("ln_e"))
    async with store.read() as reader:
        assert await reader.lane_with_state_counts("ln_e") == (await reader.get_lane("ln_e"), {})
        assert await reader.lane_with_state_counts("ln_b") == (
            await reader.get_lane("ln_b"),
            {ItemState.QUEUED: 1},
        )
        assert await reader.get_item("it_b") == changed[0]
        assert await reader.get_item("it_a") == changed[1]
        assert await reader.get_item("it_missing") is None
        assert await reader.lane_item_states("ln_a") == {
            "it_a": ItemState.DEAD,
            "it_b": ItemState.SUCCEEDED,
            "it_c": ItemState.SUCCEEDED,
        }
        assert await reader.lane_item_states("ln_x") == {}


@pytest.mark.port("waiting_items")
async def test_waiting_items_of_a_lane_in_sequence(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(
        store,
        item("it_1", "ln_a", seq=3, state=ItemState.WAITING),
        item("it_2", "ln_a", seq=1, state=ItemState.WAITING),
        item("it_3", "ln_a", seq=2, state=ItemState.QUEUED),
    )
    async with store.read() as reader:
        assert [i.item_id for i in await reader.waiting_items("ln_a")] == ["it_2", "it_1"]
        assert await reader.waiting_items("ln_x") == []


@pytest.mark.port("queued_items")
async def test_queued_items_of_a_coordinator_in_sequence(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(
        store,
        item("it_1", "ln_a", seq=3),
        item("it_2", "ln_a", seq=1, not_before=at(100), held=True),
        item("it_3", "ln_a", seq=2, state=ItemState.WAITING),
        item("it_4", "ln_a", seq=4, state=ItemState.STOPPED),
    )
    async with store.read() as reader:
        assert [i.item_id for i in await reader.queued_items("wc_a")] == ["it_2", "it_1"]
        assert await reader.queued_items("wc_b") == []


async def _claimable_world(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    await seed_lane(
        store,
        item("it_low_1", "ln_a", seq=1, priority=1),
        item("it_high", "ln_a", seq=5, priority=9),
        item("it_low_2", "ln_a", seq=3, priority=1),
        item("it_mid", "ln_a", seq=4, priority=5),
        item("it_held", "ln_a", seq=2, priority=9, held=True),
        item("it_later", "ln_a", seq=6, priority=9, not_before=at(100)),
        item("it_due", "ln_a", seq=7, priority=0, not_before=at(10)),
        item("it_waiting", "ln_a", seq=8, priority=9, state=ItemState.WAITING),
        item("it_leased", "ln_a", seq=9, priority=9, state=ItemState.LEASED),
        item("it_person", "ln_a", seq=10, priority=9, worker_class="person"),
    )
    await seed_lane(
        store,
        item("it_elsewhere", "ln_b", coordinator_id="wc_b", seq=1, priority=9),
        record=lane("ln_b", "wc_b"),
    )


@pytest.mark.port("claim_candidates")
async def test_claim_candidates_are_ready_items_by_priority_then_fifo(store: Store) -> None:
    await _claimable_world(store)
    async with store.write("wc_a") as tx:

        async def ids(after: ClaimCursor | None, limit: int) -> list[str]:
            found = await tx.claim_candidates(ClaimScan("wc_a", ("codex",), at(10), after, limit))
            return [i.item_id for i in found.items]

        assert await ids(None, 10) == ["it_high", "it_mid", "it_low_1", "it_low_2", "it_due"]
        assert await ids(None, 2) == ["it_high", "it_mid"]
        assert await ids((5, 0, 4), 10) == ["it_low_1", "it_low_2", "it_due"]
        assert await ids((1, 0, 1), 10) == ["it_low_2", "it_due"]
        found = await tx.claim_candidates(ClaimScan("wc_a", ("codex",), at(9), None, 10))
        assert "it_due" not in [i.item_id for i in found.items]
        assert found.after == (1, 0, 3)
        person = await tx.claim_candidates(ClaimScan("wc_a", ("person",), T0, None, 5))
        assert [i.item_id for i in person.items] == ["it_person"]


@pytest.mark.port("claim_candidates")
async def test_one_claim_ranks_the_asked_classes_together(store: Store) -> None:
    await _claimable_world(store)
    async with store.write("wc_a") as tx:

        async def ids(classes: tuple[str, ...], after: ClaimCursor | None, limit: int) -> list[str]:
            found = await tx.claim_candidates(ClaimScan("wc_a", classes, at(10), after, limit))
            return [i.item_id for i in found.items]

        # The person item (priority 9, seq 10) ranks with the codex ones, not after them.
        both = ("codex", "person")
        assert await ids(both, None, 10) == [
            "it_high",
            "it_person",
            "it_mid",
            "it_low_1",
            "it_low_2",
            "it_due",
        ]
        assert await ids(("person", "codex"), None, 2) == ["it_high", "it_person"]
        # Pages continue across the classes from the cursor.
        assert await ids(both, (9, 0, 5), 2) == ["it_person", "it_mid"]
        # A class nobody has work of adds nothing.
        assert await ids(("codex", "machine"), None, 10) == await ids(("codex",), None, 10)


@pytest.mark.port("has_ready", "next_not_before")
async def test_readiness_of_several_classes(store: Store) -> None:
    await _claimable_world(store)
    async with store.read() as reader:
        assert await reader.has_ready("wc_a", ("machine", "person"), T0) is True
        assert await reader.has_ready("wc_a", ("machine", "agent"), T0) is False
        assert await reader.next_not_before("wc_a", ("person", "codex"), T0) == at(10)
        assert await reader.next_not_before("wc_a", ("person", "machine"), T0) is None


@pytest.mark.port("has_ready", "count_ready", "next_not_before")
async def test_readiness_per_class(store: Store) -> None:
    await _claimable_world(store)
    async with store.read() as reader:
        assert await reader.has_ready("wc_a", ("codex",), T0) is True
        assert await reader.has_ready("wc_a", ("machine",), T0) is False
        assert await reader.has_ready("wc_b", ("codex",), T0) is True
        # Queued items per class, held and backing-off ones included.
        assert await reader.count_ready("wc_a") == {"codex": 7, "person": 1}
        assert await reader.count_ready("wc_missing") == {}
        assert await reader.next_not_before("wc_a", ("codex",), T0) == at(10)
        assert await reader.next_not_before("wc_a", ("codex",), at(10)) == at(100)
        assert await reader.next_not_before("wc_a", ("codex",), at(100)) is None
        assert await reader.next_not_before("wc_a", ("person",), T0) is None
    await seed_coordinator(store, coordinator("wc_c"))
    await seed_lane(
        store,
        item("it_only_held", "ln_c", coordinator_id="wc_c", held=True),
        record=lane("ln_c", "wc_c"),
    )
    async with store.read() as reader:
        assert await reader.has_ready("wc_c", ("codex",), T0) is False


@pytest.mark.port("mark_lanes_served", "claim_candidates")
async def test_within_one_priority_the_lane_served_longest_ago_goes_first(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store, item("it_a1", "ln_a", seq=1), item("it_a2", "ln_a", seq=2))
    await seed_lane(store, item("it_b1", "ln_b", seq=3), record=lane("ln_b"))
    await seed_lane(store, item("it_c1", "ln_c", seq=4), record=lane("ln_c"))
    async with store.write("wc_a") as tx:
        version = (await tx.get_lane("ln_a")).version  # type: ignore[union-attr]
        await tx.mark_lanes_served(["ln_a"], 7)
        await tx.mark_lanes_served(["ln_b"], 5)
        await tx.mark_lanes_served(["ln_gone"], 9)  # no such lane: nothing happens
        page = await tx.claim_candidates(ClaimScan("wc_a", ("codex",), T0, None, 10))
        # Never served (turn 0) first, then the lane served at 5, then at 7, FIFO within.
        assert [i.item_id for i in page.items] == ["it_c1", "it_b1", "it_a1", "it_a2"]
        assert page.after == (0, 7, 2)
        rest = await tx.claim_candidates(ClaimScan("wc_a", ("codex",), T0, (0, 5, 3), 10))
        assert [i.item_id for i in rest.items] == ["it_a1", "it_a2"]
        # A turn is not a change of the lane: its version (etag) stays.
        assert (await tx.get_lane("ln_a")).version == version  # type: ignore[union-attr]
    async with store.read() as reader:
        assert (await reader.get_lane("ln_a")).version == version  # type: ignore[union-attr]


@pytest.mark.port("mark_lanes_served", "claim_candidates", "insert_items", "update_items")
async def test_an_item_entering_the_queue_takes_its_lanes_turn(store: Store) -> None:
    """Whenever an item becomes ready (created, queued, released from a hold) it ranks with its
    lane's turn as it is then, and a lane served later moves all its ready items together."""
    await seed_coordinator(store)
    await seed_lane(store, item("it_a1", "ln_a", seq=1))
    await seed_lane(store, item("it_b1", "ln_b", seq=2), record=lane("ln_b"))
    await seed_lane(store, record=lane("ln_c"))
    async with store.write("wc_a") as tx:
        await tx.mark_lanes_served(["ln_a"], 7)

    async def ids(after: ClaimCursor | None = None) -> list[str]:
        async with store.write("wc_a") as tx:
            found = await tx.claim_candidates(ClaimScan("wc_a", ("codex",), T0, after, 10))
            return [i.item_id for i in found.items]

    waiting = item("it_b2", "ln_b", seq=4, state=ItemState.WAITING)
    async with store.write("wc_a") as tx:
        await tx.insert_items([item("it_a2", "ln_a", seq=3), waiting])
        await tx.insert_items([item("it_c1", "ln_c", seq=5, priority=3)])
    async with store.write("wc_a") as tx:
        await tx.update_items([replace(waiting, state=ItemState.QUEUED)])
    # Priority first (ln_c's item, whatever its lane's turn), then ln_b (never served), then
    # ln_a (served at 7) with the item created after that turn.
    assert await ids() == ["it_c1", "it_b1", "it_b2", "it_a1", "it_a2"]
    assert await ids((0, 0, 4)) == ["it_a1", "it_a2"]
    async with store.write("wc_a") as tx:
        await tx.mark_lanes_served(["ln_b", "ln_c"], 9)
    assert await ids() == ["it_c1", "it_a1", "it_a2", "it_b1", "it_b2"]
    # Held and released again: back in the queue with the lane's turn (9), not a stale one.
    async with store.write("wc_a") as tx:
        (b1,) = await tx.items_by_ids(["it_b1"])
        await tx.update_items([replace(b1, held=True)])
    assert await ids() == ["it_c1", "it_a1", "it_a2", "it_b2"]
    async with store.write("wc_a") as tx:
        await tx.mark_lanes_served(["ln_a"], 8)
        await tx.update_items([replace(b1, held=False)])
    assert await ids() == ["it_c1", "it_a1", "it_a2", "it_b1", "it_b2"]
    assert await ids((0, 8, 3)) == ["it_b1", "it_b2"]


@pytest.mark.port("count_awaiting_human")
async def test_items_awaiting_a_person(store: Store) -> None:
    await seed_coordinator(store)
    approval = ItemState.AWAITING_APPROVAL
    await seed_lane(
        store,
        replace(item("it_ship", "ln_a", seq=1, state=approval), update_time=at(30)),
        replace(item("it_ship2", "ln_a", seq=2, state=approval), update_time=at(5)),
        item("it_stop", "ln_a", seq=3, state=ItemState.STOPPED),
        item("it_ready", "ln_a", seq=4),
    )
    async with store.read() as reader:
        assert await reader.count_awaiting_human("wc_a") == {
            "AWAITING_APPROVAL": (2, at(5)),
            "STOPPED": (1, at(1)),
        }
        assert await reader.count_awaiting_human("wc_missing") == {}
