"""Attempt deadlines in the store: an item's own max_run_duration, an attempt's deadline and the
coordinator's per-class defaults are kept exactly, and recovery ends a lease capped at its
deadline (plus one lease period) like any expired lease, whether or not it was heartbeated."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from workcoord.coordinator.domain import stops
from workcoord.coordinator.domain.model import AttemptStatus
from workcoord.coordinator.domain.ports import Store

from .records import at, attempt, coordinator, item, seed_coordinator, seed_lane


@pytest.mark.port("get_coordinator")
async def test_the_coordinators_max_run_durations_are_kept(store: Store) -> None:
    await seed_coordinator(store)
    async with store.read() as reader:
        found = await reader.get_coordinator("wc_a")
    assert found is not None
    assert found.config.max_run_seconds == coordinator().config.max_run_seconds


@pytest.mark.port("attempt_with_item")
async def test_an_items_bound_and_its_attempts_deadline_are_kept(store: Store) -> None:
    await seed_coordinator(store)
    own = replace(item("it_own", "ln_a", seq=1), current_lease_id="ls_own", max_run_seconds=90)
    inherits = replace(item("it_inh", "ln_a", seq=2), max_run_seconds=None)
    await seed_lane(store, own, inherits)
    leased = attempt("ls_own", own)
    leased.deadline_time = stops.attempt_deadline(own, coordinator().config, leased.create_time)
    assert leased.deadline_time == leased.create_time + timedelta(seconds=90)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([leased])
    async with store.write("wc_a") as tx:
        found, found_item = await tx.attempt_with_item("ls_own")
        assert found == leased
        assert found_item is not None and found_item.max_run_seconds == 90
        # A heartbeat past the deadline: the lease is held no longer than one lease period
        # after it, and the update is kept.
        assert found is not None
        found.lease_expire_time = stops.capped_expiry(at(500), found)
        await tx.update_attempts([found])
        [other] = await tx.items_by_ids(["it_inh"])
    async with store.read() as reader:
        stored = await reader.get_attempt("ls_own")
    assert stored is not None
    assert stored.lease_expire_time == at(90 + 60)
    assert other.max_run_seconds is None


@pytest.mark.port("end_expired_leases")
async def test_recovery_ends_a_lease_at_its_deadline_plus_one_lease_period(store: Store) -> None:
    await seed_coordinator(store)
    work = replace(item("it_a", "ln_a"), current_lease_id="ls_a", max_run_seconds=60)
    await seed_lane(store, work)
    leased = replace(
        attempt("ls_a", work, status=AttemptStatus.RUNNING, expire_time=at(10_000)),
        deadline_time=at(60),
    )
    leased.lease_expire_time = stops.capped_expiry(leased.lease_expire_time, leased)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([leased])
    async with store.write("wc_a") as tx:
        assert await tx.end_expired_leases("wc_a", at(119), 10) == []
        [ended] = await tx.end_expired_leases("wc_a", at(120), 10)
    assert ended.attempt.lease_id == "ls_a"
    assert ended.attempt.status == AttemptStatus.DEAD
    assert ended.attempt.deadline_time == at(60)
