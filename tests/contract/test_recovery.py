"""Recovery as set operations: a batch of expired leases ended at once, their items' retries
and dead-letters written at once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import (
    AttemptStatus,
    DeadLetterReason,
    Item,
    ItemState,
    RetryPolicy,
)
from workcoord.coordinator.domain.ports import EXPIRED_ITEM_FIELDS, Store

from .records import at, attempt, coordinator, item, lane, seed_coordinator, seed_lane

IT_A = replace(item("it_a", "ln_a", seq=1), current_lease_id="ls_a")
IT_B = replace(item("it_b", "ln_a", seq=2), current_lease_id="ls_b")
IT_C = item("it_c", "ln_a", seq=3, worker_class="person")


def loaded(record: Item) -> Item:
    """What end_expired_leases loads of an item: EXPIRED_ITEM_FIELDS, the rest defaults."""
    return Item(**{name: getattr(record, name) for name in EXPIRED_ITEM_FIELDS})


@pytest.mark.port("end_expired_leases")
async def test_expired_leases_end_in_expiry_order_with_their_items(store: Store) -> None:
    await seed_coordinator(store)
    seeded_lane = await seed_lane(store, IT_A, IT_B, IT_C)
    await seed_coordinator(store, coordinator("wc_b"))
    other = item("it_z", "ln_z", coordinator_id="wc_b")
    await seed_lane(store, other, record=lane("ln_z", "wc_b"))
    async with store.write("wc_a") as tx:
        await tx.insert_attempts(
            [
                attempt("ls_late", IT_C, expire_time=at(30), exclusive_key="gpu:1"),
                attempt("ls_b", IT_B, expire_time=at(10), exclusive_key="repo:parser,gpu:0"),
                attempt("ls_a", IT_A, expire_time=at(10), status=AttemptStatus.RUNNING),
                attempt("ls_old", IT_A, expire_time=at(5), status=AttemptStatus.FAILED),
            ]
        )
    async with store.write("wc_b") as tx:
        await tx.insert_attempts([attempt("ls_z", other, expire_time=at(1))])
    async with store.write("wc_a") as tx:
        assert await tx.end_expired_leases("wc_a", at(9), 10) == []
        first = await tx.end_expired_leases("wc_a", at(20), 1)
        assert [e.attempt.lease_id for e in first] == ["ls_a"]
        rest = await tx.end_expired_leases("wc_a", at(20), 10)
        assert [e.attempt.lease_id for e in rest] == ["ls_b"]
        # Ended: the attempt as now stored, its item as stored, its lane's retry policy.
        ended = rest[0]
        assert ended.attempt == replace(
            attempt("ls_b", IT_B, expire_time=at(10), exclusive_key="repo:parser,gpu:0"),
            status=AttemptStatus.DEAD,
            end_time=at(20),
        )
        assert ended.item == loaded(IT_B)
        assert ended.lane_retry_policy == seeded_lane.retry_policy
        assert await tx.get_attempt("ls_b") == ended.attempt
        # Its holds are free; a lease not yet expired keeps its own.
        keys = ["repo:parser", "gpu:0", "gpu:1"]
        assert await tx.live_exclusive_holders("wc_a", keys) == {"gpu:1": "ls_late"}
        assert await tx.end_expired_leases("wc_a", at(20), 10) == []
    async with store.read() as reader:
        statuses = {a.lease_id: a.status for a in await reader.item_attempts(["it_a", "it_c"])}
        assert statuses == {
            "ls_a": AttemptStatus.DEAD,
            "ls_old": AttemptStatus.FAILED,
            "ls_late": AttemptStatus.LEASED,
        }
        assert [a.lease_id for a in await reader.live_attempts("wc_b", None)] == ["ls_z"]


@pytest.mark.port("end_expired_leases")
async def test_an_expired_lease_of_a_lane_without_its_own_policy(store: Store) -> None:
    await seed_coordinator(store)
    plain = replace(lane("ln_a"), retry_policy=RetryPolicy())
    await seed_lane(store, IT_A, record=plain)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([attempt("ls_a", IT_A, expire_time=at(10))])
    async with store.write("wc_a") as tx:
        [ended] = await tx.end_expired_leases("wc_a", at(10), 5)
        assert ended.item == loaded(IT_A)
        assert ended.lane_retry_policy == RetryPolicy()


@pytest.mark.port("write_retries")
async def test_retries_and_dead_letters_write_only_their_columns(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store, IT_A, IT_B, IT_C)
    retried = replace(
        IT_A,
        state=ItemState.QUEUED,
        not_before=at(40),
        ready_time=at(40),
        dead_letter_reason=None,
        current_lease_id="",
        update_time=at(30),
    )
    dead = replace(
        IT_B,
        state=ItemState.DEAD,
        dead_letter_reason=DeadLetterReason.EXHAUSTED,
        current_lease_id="",
        update_time=at(30),
    )
    # Columns a retry never changes are not written, even if the record says otherwise.
    stale = replace(retried, title="changed", attempt_count=9, inputs={"other": True})
    async with store.write("wc_a") as tx:
        await tx.write_retries([stale, dead, replace(IT_C, item_id="it_missing")])
        await tx.write_retries([])
        assert await tx.get_item("it_a") == retried
    async with store.read() as reader:
        assert await reader.get_item("it_a") == retried
        assert await reader.get_item("it_b") == dead
        assert await reader.get_item("it_c") == IT_C
        assert await reader.get_item("it_missing") is None
