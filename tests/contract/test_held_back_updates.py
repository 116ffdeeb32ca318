"""A write transaction reads its own updates: every read that scans items or attempts, and
every set write over them, sees the item and attempt updates made before it in the same
transaction. (The SQL store holds those updates back to write them together; this is what
its explicit ``write_held_back`` points guarantee. Reads by id are covered with the records.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import AttemptStatus, ItemState
from workcoord.coordinator.domain.ports import ClaimScan, Store

from .records import at, attempt, item, seed_coordinator, seed_lane, worker

IT_A = item("it_a", "ln_a", seq=1)
IT_B = item("it_b", "ln_a", seq=2)
IT_C = item("it_c", "ln_a", seq=3, worker_class="person")


@pytest.mark.port(
    "items_by_ids",
    "lane_items",
    "waiting_items",
    "queued_items",
    "claim_candidates",
    "has_ready",
    "count_ready",
    "next_not_before",
    "escalation_candidates",
)
async def test_item_scans_see_the_updates_before_them(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store, IT_A, IT_B, IT_C)
    async with store.write("wc_a") as tx:
        await tx.update_items(
            [
                replace(IT_A, state=ItemState.LEASED),
                replace(IT_B, state=ItemState.WAITING),
                replace(IT_C, not_before=at(30)),
            ]
        )
        assert [i.state for i in await tx.items_by_ids(["it_a"])] == [ItemState.LEASED]
        states = {i.item_id: i.state for i in await tx.lane_items(["ln_a"])}
        assert states == {
            "it_a": ItemState.LEASED,
            "it_b": ItemState.WAITING,
            "it_c": ItemState.QUEUED,
        }
        assert [i.item_id for i in await tx.waiting_items("ln_a")] == ["it_b"]
        assert [i.item_id for i in await tx.queued_items("wc_a")] == ["it_c"]
        assert (
            await tx.claim_candidates(ClaimScan("wc_a", ("codex",), at(0), None, 10))
        ).items == []
        assert not await tx.has_ready("wc_a", ("codex",), at(0))
        assert await tx.count_ready("wc_a") == {"person": 1}
        assert await tx.next_not_before("wc_a", ("person",), at(0)) == at(30)
        # Backing off until 30 s: not ready at 10 s, so not a candidate for escalation.
        assert await tx.escalation_candidates("wc_a", at(10), at(0), 10) == []


@pytest.mark.port(
    "item_attempts",
    "live_attempts",
    "count_live_attempts",
    "lease_request_attempts",
    "end_expired_leases",
    "evict_workers",
)
async def test_attempt_scans_and_set_writes_see_the_updates_before_them(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store, IT_A, IT_B, IT_C)
    done = attempt("ls_a", IT_A)
    running = attempt("ls_b", IT_B, expire_time=at(60), worker_id="w2")
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([done, running])
        await tx.upsert_worker(worker("w1", observed=at(0)))
    async with store.write("wc_a") as tx:
        ended = replace(done, status=AttemptStatus.COMPLETED, end_time=at(5))
        # A Heartbeat's new expiry and a Lease's request id, not yet written.
        extended = replace(running, lease_expire_time=at(600), lease_request="rq_1")
        await tx.update_attempts([ended, extended])
        assert [a.status for a in await tx.item_attempts(["it_a"])] == [AttemptStatus.COMPLETED]
        assert [a.lease_id for a in await tx.live_attempts("wc_a", None)] == ["ls_b"]
        assert await tx.count_live_attempts("wc_a", "codex") == 1
        assert await tx.lease_request_attempts("wc_a", "rq_1") == [extended]
        # w1's only attempt ended: it holds no live lease any more.
        assert await tx.evict_workers("wc_a", at(10)) == ["w1"]
        # The extended lease has not expired at 100 s: recovery leaves it alone.
        assert await tx.end_expired_leases("wc_a", at(100), 10) == []
    async with store.read() as reader:
        assert await reader.get_attempt("ls_b") == extended
