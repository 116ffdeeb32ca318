"""What a retried Lease call finds again (what one call granted, under its digest); worker
fences; forgetting a worker."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import AttemptStatus
from workcoord.coordinator.domain.ports import Store

from .records import at, attempt, coordinator, item, seed_coordinator, seed_lane, worker

IT_A = item("it_a", "ln_a", seq=1)
IT_B = item("it_b", "ln_a", seq=2)
IT_C = item("it_c", "ln_a", seq=3)

FENCE = {
    "reason": "malformed placement: bad worker_id",
    "lease_id": "ls_1",
    "item_id": "it_a",
    "lane_id": "ln_a",
    "exclusive": ["resource:gpu-0"],
    "since": at(5).isoformat(),
    "expire_time": at(60).isoformat(),
}


@pytest.mark.port("lease_request_attempts")
async def test_a_lease_request_finds_the_attempts_of_its_latest_call(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store, IT_A, IT_B, IT_C)
    first = [
        replace(attempt("ls_2", IT_A), lease_request="r" * 64, token_nonce="n2"),
        replace(attempt("ls_1", IT_B), lease_request="r" * 64, token_nonce="n1"),
        replace(attempt("ls_9", IT_C), lease_request="s" * 64, token_nonce="n9"),
        attempt("ls_0", item("it_x", "ln_a", seq=4), status=AttemptStatus.COMPLETED),
    ]
    async with store.write("wc_a") as tx:
        await tx.insert_items([item("it_x", "ln_a", seq=4)])
        await tx.insert_attempts(first)
    async with store.read() as reader:
        found = await reader.lease_request_attempts("wc_a", "r" * 64)
        assert found == [first[1], first[0]]  # by lease id, nonces and request kept
        assert await reader.lease_request_attempts("wc_b", "r" * 64) == []
        assert await reader.lease_request_attempts("wc_a", "t" * 64) == []
        # Attempts granted without a request id are never found.
        assert await reader.lease_request_attempts("wc_a", "") == []
    # Spent and reused: the new grant takes the request over (the engine clears the old one's).
    taken_over = [replace(a, lease_request="") for a in first[:2]]
    again = replace(
        attempt("ls_3", IT_C, create_time=at(80)), lease_request="r" * 64, token_nonce="n3"
    )
    async with store.write("wc_a") as tx:
        await tx.update_attempts([replace(first[2], status=AttemptStatus.RELEASED), *taken_over])
        await tx.insert_attempts([again])
    async with store.read() as reader:
        assert await reader.lease_request_attempts("wc_a", "r" * 64) == [again]


@pytest.mark.port("set_worker_fence")
async def test_a_worker_fence_is_set_and_lifted(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    async with store.write("wc_a") as tx:
        await tx.upsert_worker(worker("w_a"))
        await tx.upsert_worker(worker("w_b"))
    async with store.write("wc_b") as tx:
        await tx.upsert_worker(worker("w_a", "wc_b"))
    async with store.write("wc_a") as tx:
        await tx.set_worker_fence("wc_a", "w_a", FENCE)
        await tx.set_worker_fence("wc_a", "w_unknown", FENCE)  # nothing to fence
    async with store.read() as reader:
        assert await reader.get_worker("wc_a", "w_a") == replace(worker("w_a"), fence=FENCE)
        assert [w.fence for w in await reader.list_workers("wc_a", "", 10)] == [FENCE, None]
        assert (await reader.get_worker("wc_b", "w_a")) == worker("w_a", "wc_b")
        assert await reader.get_worker("wc_a", "w_unknown") is None
    async with store.write("wc_a") as tx:
        await tx.set_worker_fence("wc_a", "w_a", None)
    async with store.read() as reader:
        assert await reader.get_worker("wc_a", "w_a") == worker("w_a")


@pytest.mark.port("delete_worker")
async def test_a_forgotten_worker_is_gone(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    async with store.write("wc_a") as tx:
        await tx.upsert_worker(replace(worker("w_a"), fence=FENCE))
        await tx.upsert_worker(worker("w_b"))
    async with store.write("wc_b") as tx:
        await tx.upsert_worker(worker("w_a", "wc_b"))
    async with store.write("wc_a") as tx:
        assert await tx.delete_worker("wc_a", "w_a") is True
        assert await tx.delete_worker("wc_a", "w_a") is False
        assert await tx.delete_worker("wc_a", "w_unknown") is False
    async with store.read() as reader:
        assert await reader.get_worker("wc_a", "w_a") is None
        assert [w.worker_id for w in await reader.list_workers("wc_a", "", 10)] == ["w_b"]
        assert await reader.get_worker("wc_b", "w_a") == worker("w_a", "wc_b")
    # The id may register again, as a new worker.
    async with store.write("wc_a") as tx:
        assert await tx.upsert_worker(worker("w_a")) is True
