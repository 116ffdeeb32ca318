"""What the view cache reads: lane stamps, lanes by id, a work coordinator's tickets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import LaneState, Ticket
from workcoord.coordinator.domain.ports import LaneStamp, Store

from .records import at, coordinator, lane, seed_coordinator, seed_lane


@pytest.mark.port("lane_stamps")
async def test_lane_stamps_follow_list_lanes_order_and_cursor(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    records = [
        lane("ln_a", create_time=at(1)),
        lane("ln_b", create_time=at(2), state=LaneState.DONE),
        lane("ln_c", create_time=at(2)),
        lane("ln_z", "wc_b", create_time=at(3)),
    ]
    for record in records:
        await seed_lane(store, record=record)
    async with store.write("wc_a") as tx:
        moved = replace(records[0])
        await tx.update_lane(moved)
    async with store.read() as reader:
        stamps = await reader.lane_stamps("wc_a", None, 10)
        listed = await reader.list_lanes("wc_a", None, None, 10)
        assert (
            [s.lane_id for s in stamps] == [x.lane_id for x in listed] == ["ln_c", "ln_b", "ln_a"]
        )
        assert stamps[0] == LaneStamp("ln_c", at(2), records[2].version)
        assert stamps[2] == LaneStamp("ln_a", at(1), moved.version)
        assert moved.version == records[0].version + 1
        assert [s.lane_id for s in await reader.lane_stamps("wc_a", (at(2), "ln_c"), 10)] == [
            "ln_b",
            "ln_a",
        ]
        assert [s.lane_id for s in await reader.lane_stamps("wc_a", None, 1)] == ["ln_c"]
        assert await reader.lane_stamps("wc_missing", None, 10) == []


@pytest.mark.port("get_lanes")
async def test_lanes_by_id(store: Store) -> None:
    await seed_coordinator(store)
    for lane_id in ("ln_b", "ln_a"):
        await seed_lane(store, record=lane(lane_id))
    async with store.read() as reader:
        found = await reader.get_lanes(["ln_b", "ln_x", "ln_a"])
        assert found == [lane("ln_a"), lane("ln_b")]
        assert await reader.get_lanes([]) == []


@pytest.mark.port("coordinator_tickets")
async def test_a_coordinators_tickets_in_lane_tickets_order(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    await seed_lane(store)
    await seed_lane(store, record=lane("ln_b"))
    await seed_lane(store, record=lane("ln_z", "wc_b"))
    tickets = [
        Ticket("ln_a", "jira", "PAR-2", "https://jira/PAR-2"),
        Ticket("ln_a", "github", "acme/parser#12", "https://github/12", "OPEN", at(3)),
        Ticket("ln_b", "github", "PAR-1"),
    ]
    async with store.write("wc_a") as tx:
        for ticket in tickets:
            await tx.insert_ticket("wc_a", ticket)
    async with store.write("wc_b") as tx:
        await tx.insert_ticket("wc_b", Ticket("ln_z", "jira", "Z-1"))
    async with store.read() as reader:
        found = await reader.coordinator_tickets("wc_a")
        assert found == await reader.lane_tickets(["ln_a", "ln_b"])
        assert [tk.key for tk in found] == ["PAR-1", "PAR-2", "acme/parser#12"]
        assert tickets[1] in found
        assert [tk.key for tk in await reader.coordinator_tickets("wc_b")] == ["Z-1"]
        assert await reader.coordinator_tickets("wc_missing") == []
