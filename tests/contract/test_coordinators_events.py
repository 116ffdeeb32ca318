"""Work coordinators, revisions and the event log; what a transaction guarantees."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import CoordinatorConfig, EventType, MailMarks, NewEvent
from workcoord.coordinator.domain.ports import OrgRecord, Store
from workcoord.kit.clock import ManualClock

from .records import at, coordinator, item, lane, seed_coordinator, seed_events, seed_lane


class Boom(Exception):
    pass


@pytest.mark.port("insert_coordinator", "get_coordinator", "read", "write")
async def test_a_coordinator_round_trips_with_its_configuration(store: Store) -> None:
    stored = await seed_coordinator(store)
    async with store.read() as reader:
        assert await reader.get_coordinator("wc_a") == stored
        assert await reader.get_coordinator("wc_missing") is None


@pytest.mark.port("list_coordinators")
async def test_coordinators_list_by_id_after_a_cursor_and_by_org(store: Store) -> None:
    for cid, org in [("wc_c", "acme"), ("wc_a", "acme"), ("wc_b", "beta")]:
        await seed_coordinator(store, coordinator(cid, org))
    async with store.read() as reader:

        async def ids(after: str, limit: int, orgs: list[str] | None) -> list[str]:
            found = await reader.list_coordinators(after, limit, orgs)
            return [c.coordinator_id for c in found]

        assert await ids("", 10, None) == ["wc_a", "wc_b", "wc_c"]
        assert await ids("wc_a", 10, None) == ["wc_b", "wc_c"]
        assert await ids("", 2, None) == ["wc_a", "wc_b"]
        assert await ids("", 10, ["acme"]) == ["wc_a", "wc_c"]
        assert await ids("wc_a", 10, ["acme"]) == ["wc_c"]
        assert await ids("", 10, []) == []


@pytest.mark.port("update_coordinator")
async def test_update_writes_what_an_admin_changes_and_never_the_revision(store: Store) -> None:
    async with store.write() as tx:
        await tx.insert_coordinator(coordinator(), "req-1")
    changed = replace(
        coordinator(),
        display_name="Renamed",
        enabled=False,
        config=CoordinatorConfig(),
        config_version=4,
        update_time=at(50),
        revision=99,
        mail_marks=MailMarks("2026-11-30", 7, at(40).isoformat()),
    )
    async with store.write("wc_a") as tx:
        await tx.update_coordinator(changed)
        await tx.update_coordinator(replace(changed, coordinator_id="wc_missing"))  # no-op
    async with store.write() as tx:
        assert await tx.get_coordinator("wc_a") == replace(changed, revision=0)
        assert await tx.get_coordinator("wc_missing") is None


@pytest.mark.port("coordinator", "now")
async def test_a_write_for_a_coordinator_holds_its_committed_state(
    store: Store, clock: ManualClock
) -> None:
    stored = await seed_coordinator(store)
    clock.advance(7)
    async with store.write("wc_a") as tx:
        assert tx.coordinator == stored
        assert tx.now == at(7)
    async with store.write("wc_missing") as tx:
        assert tx.coordinator is None
    async with store.write() as tx:
        assert tx.coordinator is None


@pytest.mark.port("append", "list_events")
async def test_event_times_never_decrease_with_revision_when_the_clock_steps_back(
    store: Store, clock: ManualClock
) -> None:
    """Before, each event took its transaction's time: a clock stepped back (or a writer whose
    time was read before it waited for the lock) logged a later revision at an earlier time."""
    await seed_coordinator(store)
    clock.advance(10)
    await seed_events(store, "wc_a", [NewEvent(EventType.LANE_CREATED)])
    clock.set(at(5))  # the wall clock steps back
    await seed_events(store, "wc_a", [NewEvent(EventType.ITEM_QUEUED)])
    async with store.write("wc_a") as tx:
        assert tx.coordinator is not None
        # Two appends in one transaction (a group commit): the second follows the first.
        tx.coordinator.revision = await tx.append(
            tx.coordinator, [NewEvent(EventType.ITEM_LEASED)], "w"
        )
        await tx.append(tx.coordinator, [NewEvent(EventType.ITEM_STARTED)], "w")
    clock.set(at(24))
    await seed_events(store, "wc_a", [NewEvent(EventType.LANE_DONE)])
    async with store.read() as reader:
        events = await reader.list_events("wc_a", 0, 100, "", "")
    assert [e.time for e in events] == [at(10), at(10), at(10), at(10), at(24)]


@pytest.mark.port("append", "list_events")
async def test_append_gives_gap_free_revisions_committed_with_the_change(
    store: Store, clock: ManualClock
) -> None:
    await seed_coordinator(store)
    clock.advance(3)
    async with store.write("wc_a") as tx:
        assert tx.coordinator is not None
        first = [NewEvent(EventType.LANE_CREATED, lane_id="ln_a"), NewEvent(EventType.ITEM_QUEUED)]
        tx.coordinator.revision = await tx.append(tx.coordinator, first, "alice")
        assert tx.coordinator.revision == 2
        more = [
            NewEvent(EventType.ITEM_LEASED, item_id="it_a", lease_id="ls_a", data={"n": [1, 2]})
        ]
        tx.coordinator.revision = await tx.append(tx.coordinator, more, "bob")
        assert tx.coordinator.revision == 3
        assert await tx.append(tx.coordinator, [], "bob") == 3
    async with store.write("wc_a") as tx:
        assert tx.coordinator is not None and tx.coordinator.revision == 3
        assert await tx.append(tx.coordinator, [NewEvent(EventType.LANE_DONE)], "carol") == 4
    async with store.read() as reader:
        events = await reader.list_events("wc_a", 0, 100, "", "")
        coordinator_now = await reader.get_coordinator("wc_a")
    assert coordinator_now is not None and coordinator_now.revision == 4
    assert [e.revision for e in events] == [1, 2, 3, 4]
    assert [(e.type, e.actor) for e in events] == [
        (EventType.LANE_CREATED, "alice"),
        (EventType.ITEM_QUEUED, "alice"),
        (EventType.ITEM_LEASED, "bob"),
        (EventType.LANE_DONE, "carol"),
    ]
    leased = events[2]
    assert (leased.coordinator_id, leased.item_id, leased.lease_id, leased.lane_id) == (
        "wc_a",
        "it_a",
        "ls_a",
        "",
    )
    assert leased.data == {"n": [1, 2]} and leased.time == at(3)


@pytest.mark.port("list_events")
async def test_events_filter_by_lane_and_item_and_page_by_revision(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    events = [
        NewEvent(EventType.LANE_CREATED, lane_id="ln_a"),
        NewEvent(EventType.ITEM_QUEUED, lane_id="ln_a", item_id="it_1"),
        NewEvent(EventType.ITEM_QUEUED, lane_id="ln_b", item_id="it_2"),
        NewEvent(EventType.ITEM_LEASED, lane_id="ln_a", item_id="it_1"),
        NewEvent(EventType.LANE_CREATED, lane_id="ln_b"),
    ]
    for cid in ("wc_a", "wc_b"):
        await seed_events(store, cid, events)
    async with store.read() as reader:

        async def revisions(since: int, limit: int, lane_id: str, item_id: str) -> list[int]:
            found = await reader.list_events("wc_a", since, limit, lane_id, item_id)
            assert all(e.coordinator_id == "wc_a" for e in found)
            return [e.revision for e in found]

        assert await revisions(0, 100, "", "") == [1, 2, 3, 4, 5]
        assert await revisions(2, 100, "", "") == [3, 4, 5]
        assert await revisions(0, 2, "", "") == [1, 2]
        assert await revisions(5, 100, "", "") == []
        assert await revisions(0, 100, "ln_a", "") == [1, 2, 4]
        assert await revisions(0, 100, "", "it_1") == [2, 4]
        assert await revisions(2, 100, "ln_a", "it_1") == [4]
        assert await reader.list_events("wc_missing", 0, 100, "", "") == []


@pytest.mark.port("event_lane_ids")
async def test_event_lane_ids_are_the_lanes_of_the_events_after_a_revision(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    events = [
        NewEvent(EventType.LANE_CREATED, lane_id="ln_a"),
        NewEvent(EventType.WORKER_REGISTERED),
        NewEvent(EventType.ITEM_QUEUED, lane_id="ln_b", item_id="it_2"),
        NewEvent(EventType.ITEM_LEASED, lane_id="ln_a", item_id="it_1"),
    ]
    await seed_events(store, "wc_a", events)
    await seed_events(store, "wc_b", [NewEvent(EventType.LANE_CREATED, lane_id="ln_z")])
    async with store.read() as reader:
        assert await reader.event_lane_ids("wc_a", 0, 100) == ["ln_a", "", "ln_b", "ln_a"]
        assert await reader.event_lane_ids("wc_a", 2, 100) == ["ln_b", "ln_a"]
        assert await reader.event_lane_ids("wc_a", 0, 2) == ["ln_a", ""]
        assert await reader.event_lane_ids("wc_a", 4, 100) == []
        assert await reader.event_lane_ids("wc_b", 0, 100) == ["ln_z"]
        assert await reader.event_lane_ids("wc_missing", 0, 100) == []


async def test_an_exception_rolls_back_the_change_and_its_events(store: Store) -> None:
    await seed_coordinator(store)
    with pytest.raises(Boom):
        async with store.write("wc_a") as tx:
            assert tx.coordinator is not None
            await tx.insert_lane(lane("ln_a"))
            await tx.insert_org(OrgRecord("rolled-back", "x", tx.now))
            await tx.append(tx.coordinator, [NewEvent(EventType.LANE_CREATED)], "x")
            raise Boom
    async with store.read() as reader:
        assert await reader.get_lane("ln_a") is None
        assert await reader.get_org("rolled-back") is None
        assert await reader.list_events("wc_a", 0, 10, "", "") == []
        stored = await reader.get_coordinator("wc_a")
    assert stored is not None and stored.revision == 0


async def test_writers_of_one_coordinator_are_serialised(store: Store) -> None:
    """Each writer reads the revision, then appends after it: unless the coordinator's writers
    are serialised, two of them append the same revision (and one fails)."""
    await seed_coordinator(store)
    await seed_lane(store, item("it_a", "ln_a"))

    async def writer(n: int) -> None:
        async with store.write("wc_a") as tx:
            assert tx.coordinator is not None
            for _ in range(3):  # give the others every chance to interleave
                await tx.get_item("it_a")
                await asyncio.sleep(0)
            await tx.append(tx.coordinator, [NewEvent(EventType.ITEM_QUEUED, data={"n": n})], "w")

    await asyncio.gather(*(writer(n) for n in range(6)))
    async with store.read() as reader:
        events = await reader.list_events("wc_a", 0, 100, "", "")
        stored = await reader.get_coordinator("wc_a")
    assert [e.revision for e in events] == [1, 2, 3, 4, 5, 6]
    assert sorted(e.data["n"] for e in events) == [0, 1, 2, 3, 4, 5]
    assert stored is not None and stored.revision == 6


async def test_a_reader_keeps_the_snapshot_of_its_first_read(store: Store) -> None:
    async with store.read() as reader:
        assert await reader.get_org("later") is None
        async with store.write() as tx:
            await tx.insert_org(OrgRecord("later", "x", tx.now))
        assert await reader.get_org("later") is None
    async with store.read() as reader:
        assert await reader.get_org("later") == OrgRecord("later", "x", at(0))


@pytest.mark.port("next_item_seq")
async def test_item_sequence_numbers_are_reserved_in_blocks(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    async with store.write("wc_a") as tx:
        assert await tx.next_item_seq(3) == 1
        assert await tx.next_item_seq(2) == 4
    async with store.write("wc_a") as tx:
        assert await tx.next_item_seq(1) == 6
    async with store.write("wc_b") as tx:
        assert await tx.next_item_seq(1) == 1
    with pytest.raises(Boom):
        async with store.write("wc_a") as tx:
            await tx.next_item_seq(10)
            raise Boom
    async with store.write("wc_a") as tx:
        assert await tx.next_item_seq(1) == 7
