"""Attempts and the exclusive keys they hold; the worker pool."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import AttemptStatus, ItemState
from workcoord.coordinator.domain.ports import Store
from workcoord.kit.clock import ManualClock

from .records import T0, at, attempt, coordinator, item, lane, seed_coordinator, seed_lane, worker

IT_A = item("it_a", "ln_a", seq=1)
IT_B = item("it_b", "ln_a", seq=2)
IT_C = item("it_c", "ln_a", seq=3, worker_class="person")


async def _lane_of_three(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store, IT_A, IT_B, IT_C)


@pytest.mark.port(
    "insert_attempts",
    "get_attempt",
    "attempt_with_item",
    "item_attempts",
    "update_attempts",
)
async def test_attempts_round_trip_and_list_by_item(store: Store) -> None:
    await _lane_of_three(store)
    first = replace(attempt("ls_2", IT_A, status=AttemptStatus.FAILED), error={"message": "x"})
    second = replace(attempt("ls_1", IT_A), attempt=2)
    other = attempt("ls_0", IT_B)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([first, second, other])
        await tx.insert_attempts([])
    async with store.write("wc_a") as tx:
        assert await tx.get_attempt("ls_1") == second
        assert await tx.get_attempt("ls_2") == first
        assert await tx.get_attempt("ls_x") is None
        assert await tx.attempt_with_item("ls_1") == (second, IT_A)
        assert await tx.attempt_with_item("ls_x") == (None, None)
        assert await tx.item_attempts(["it_b", "it_a"]) == [first, second, other]
        assert await tx.item_attempts([]) == []
        spent = {"input_tokens": "1200", "cost_micros": "400000", "model": "opus"}
        ended = replace(
            second, status=AttemptStatus.COMPLETED, end_time=at(9), checkpoint=None, usage=spent
        )
        await tx.update_attempts([ended, replace(other, lease_id="ls_missing")])
        await tx.update_attempts([])
        # Within the transaction, the written records read back (held back or not).
        moved = replace(IT_A, attempt_count=5, state=ItemState.RUNNING)
        await tx.update_items([moved])
        assert await tx.attempt_with_item("ls_1") == (ended, moved)
        assert await tx.get_item("it_a") == moved
        assert (await tx.lane_item_states("ln_a"))[moved.key] == ItemState.RUNNING
    async with store.read() as reader:
        assert await reader.get_attempt("ls_1") == ended  # with its usage
        assert await reader.get_attempt("ls_missing") is None


async def test_lane_counts_after_reading_an_attempt_see_every_change(store: Store) -> None:
    """A Complete reads its attempt, writes its item, then counts its lane's items by state:
    whatever else of the lane changed in between is counted as it is now."""
    await _lane_of_three(store)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([attempt("ls_a", IT_A), attempt("ls_b", IT_B)])
    done = replace(IT_A, state=ItemState.SUCCEEDED)
    async with store.write("wc_a") as tx:
        await tx.attempt_with_item("ls_a")
        await tx.update_items([done])
        lane_a, counts = await tx.lane_with_state_counts("ln_a")
        assert lane_a is not None and lane_a.lane_id == "ln_a"
        assert counts == {ItemState.SUCCEEDED: 1, ItemState.QUEUED: 2}
        # Another item of the lane changes after its attempt was read: counted as it is now.
        await tx.attempt_with_item("ls_b")
        await tx.update_items([replace(IT_C, state=ItemState.DEAD)])
        await tx.update_items([replace(IT_B, state=ItemState.SUCCEEDED)])
        assert (await tx.lane_with_state_counts("ln_a"))[1] == {
            ItemState.SUCCEEDED: 2,
            ItemState.DEAD: 1,
        }
    async with store.write("wc_a") as tx:
        # The lane changed after the attempt was read: read as it is now.
        await tx.attempt_with_item("ls_a")
        lane_now = await tx.get_lane("ln_a")
        assert lane_now is not None
        lane_now.title = "renamed"
        await tx.update_lane(lane_now)
        await tx.update_items([replace(done, attempt_count=2)])
        found, counts = await tx.lane_with_state_counts("ln_a")
        assert found is not None and found.title == "renamed"
        assert counts == {ItemState.SUCCEEDED: 2, ItemState.DEAD: 1}


@pytest.mark.port("worker_and_loads")
async def test_worker_and_loads_read_together(store: Store) -> None:
    """The worker (or None), its own live attempts of the asked classes in lease order, and
    each asked class's number of live attempts (every worker's), as ``get_worker``,
    ``live_attempts`` and ``count_live_attempts`` answer them; a held-back update is seen."""
    await _lane_of_three(store)
    await seed_coordinator(store, coordinator("wc_b"))
    await seed_lane(store, item("it_z", "ln_z", coordinator_id="wc_b"), record=lane("ln_z", "wc_b"))
    pooled = worker("wk_1")
    async with store.write("wc_a") as tx:
        await tx.upsert_worker(pooled)
        await tx.insert_attempts(
            [
                attempt("ls_b", IT_A, create_time=at(2), worker_id="wk_1"),
                attempt("ls_a", IT_B, create_time=at(2), status=AttemptStatus.RUNNING),
                attempt("ls_c", IT_C, create_time=at(1), worker_id="wk_1"),
            ]
        )
    async with store.write("wc_b") as tx:
        z = item("it_z", "ln_z", coordinator_id="wc_b")
        await tx.insert_attempts([attempt("ls_z", z, worker_id="wk_1")])
    async with store.write("wc_a") as tx:
        classes = {a.worker_class for a in await tx.live_attempts("wc_a", None)}
        found, loads = await tx.worker_and_loads("wc_a", "wk_1", sorted(classes))
        assert found == await tx.get_worker("wc_a", "wk_1") == pooled
        assert [a.lease_id for a in loads.own] == ["ls_c", "ls_b"]
        assert loads.own == [
            a for a in await tx.live_attempts("wc_a", None) if a.lease_id != "ls_a"
        ]
        assert loads.live == {c: await tx.count_live_attempts("wc_a", c) for c in classes}
        assert sum(loads.live.values()) == 3
        found, loads = await tx.worker_and_loads("wc_a", "wk_none", sorted(classes))
        assert found is None and loads.own == [] and sum(loads.live.values()) == 3
        found, loads = await tx.worker_and_loads("wc_a", "wk_1", ["machine"])
        assert found == pooled and loads.own == [] and loads.live == {}
        # A held-back update that ends an attempt is seen (written first, or read through).
        live_b = await tx.get_attempt("ls_b")
        assert live_b is not None
        await tx.update_attempts([replace(live_b, status=AttemptStatus.RELEASED)])
        found, loads = await tx.worker_and_loads("wc_a", "wk_1", sorted(classes))
        assert found == pooled and [a.lease_id for a in loads.own] == ["ls_c"]
        assert sum(loads.live.values()) == 2


@pytest.mark.port("live_attempts", "count_live_attempts")
async def test_live_attempts_by_class_in_lease_order(store: Store) -> None:
    await _lane_of_three(store)
    await seed_coordinator(store, coordinator("wc_b"))
    await seed_lane(store, item("it_z", "ln_z", coordinator_id="wc_b"), record=lane("ln_z", "wc_b"))
    async with store.write("wc_a") as tx:
        await tx.insert_attempts(
            [
                attempt("ls_b", IT_A, create_time=at(2)),
                attempt("ls_a", IT_B, create_time=at(2), status=AttemptStatus.RUNNING),
                attempt("ls_c", IT_C, create_time=at(1)),
                attempt("ls_done", IT_A, status=AttemptStatus.RELEASED),
            ]
        )
    async with store.write("wc_b") as tx:
        await tx.insert_attempts([attempt("ls_z", item("it_z", "ln_z", coordinator_id="wc_b"))])
    async with store.read() as reader:
        assert [a.lease_id for a in await reader.live_attempts("wc_a", None)] == [
            "ls_c",
            "ls_a",
            "ls_b",
        ]
        assert [a.lease_id for a in await reader.live_attempts("wc_a", "codex")] == ["ls_a", "ls_b"]
        assert [a.lease_id for a in await reader.live_attempts("wc_a", "machine")] == []
        assert await reader.count_live_attempts("wc_a", "codex") == 2
        assert await reader.count_live_attempts("wc_a", "person") == 1
        assert await reader.count_live_attempts("wc_a", "machine") == 0
        assert await reader.count_live_attempts("wc_b", "codex") == 1


@pytest.mark.port("live_exclusive_holders")
async def test_live_attempts_hold_their_exclusive_keys_until_they_end(store: Store) -> None:
    await _lane_of_three(store)
    holder = attempt("ls_1", IT_A, exclusive_key="repo:parser,gpu:0")
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([holder, attempt("ls_2", IT_B)])
    async with store.write("wc_a") as tx:
        keys = ["repo:parser", "gpu:0", "repo:other"]
        assert await tx.live_exclusive_holders("wc_a", keys) == {
            "repo:parser": "ls_1",
            "gpu:0": "ls_1",
        }
        assert await tx.live_exclusive_holders("wc_b", keys) == {}
        await tx.update_attempts([replace(holder, status=AttemptStatus.RUNNING)])
        assert await tx.live_exclusive_holders("wc_a", ["gpu:0"]) == {"gpu:0": "ls_1"}
        await tx.update_attempts([replace(holder, status=AttemptStatus.CHECKPOINTED)])
        assert await tx.live_exclusive_holders("wc_a", keys) == {}
        # A freed key can be held again.
        await tx.insert_attempts([attempt("ls_3", IT_C, exclusive_key="gpu:0")])
        assert await tx.live_exclusive_holders("wc_a", keys) == {"gpu:0": "ls_3"}


@pytest.mark.port("upsert_worker", "get_worker", "list_workers", "count_workers")
async def test_workers_register_and_refresh(store: Store) -> None:
    await seed_coordinator(store)
    await seed_coordinator(store, coordinator("wc_b"))
    async with store.write("wc_a") as tx:
        assert await tx.upsert_worker(worker("w_b")) is True
        assert await tx.upsert_worker(worker("w_a")) is True
        assert await tx.upsert_worker(worker("w_c")) is True
        assert await tx.upsert_worker(worker("w_a", "wc_b")) is True
    refreshed = replace(
        worker("w_b"), create_time=at(50), observe_time=at(50), labels={}, cpu_count=2
    )
    async with store.write("wc_a") as tx:
        assert await tx.upsert_worker(refreshed) is False
    async with store.write("wc_a") as tx:
        # Refreshing keeps the first registration's time.
        assert await tx.get_worker("wc_a", "w_b") == replace(refreshed, create_time=T0)
        assert await tx.get_worker("wc_a", "w_x") is None
        assert await tx.get_worker("wc_b", "w_b") is None
        assert [w.worker_id for w in await tx.list_workers("wc_a", "", 10)] == [
            "w_a",
            "w_b",
            "w_c",
        ]
        assert [w.worker_id for w in await tx.list_workers("wc_a", "w_a", 1)] == ["w_b"]
        assert await tx.count_workers("wc_a") == 3
        assert await tx.count_workers("wc_b") == 1
        assert await tx.count_workers("wc_x") == 0


@pytest.mark.port("touch_worker_ask")
async def test_a_lease_request_registers_or_touches_its_worker(
    store: Store, clock: ManualClock
) -> None:
    await seed_coordinator(store)
    async with store.write("wc_a") as tx:
        await tx.upsert_worker(worker("w_known"))
    clock.advance(20)
    async with store.write("wc_a") as tx:
        await tx.touch_worker_ask("wc_a", "w_known", "person", "key_other")
        await tx.touch_worker_ask("wc_a", "w_new", "person", "key_new")
    async with store.read() as reader:
        assert await reader.get_worker("wc_a", "w_known") == replace(
            worker("w_known"), observe_time=at(20), last_ask_time=at(20)
        )
        new = await reader.get_worker("wc_a", "w_new")
    assert new is not None
    assert (new.worker_class, new.principal, new.create_time, new.last_ask_time) == (
        "person",
        "key_new",
        at(20),
        at(20),
    )
    assert (new.capabilities, new.toolchains, new.labels, new.cpu_count) == ([], {}, {}, 0)


@pytest.mark.port("upsert_worker", "get_worker", "touch_worker_ask")
async def test_a_worker_keeps_every_class_it_serves(store: Store) -> None:
    await seed_coordinator(store)
    both = replace(worker("w_both"), worker_classes=["machine", "agent"])
    async with store.write("wc_a") as tx:
        await tx.upsert_worker(both)
        await tx.touch_worker_ask("wc_a", "w_asked", "agent", "key_new", ("agent", "person"))
        await tx.touch_worker_ask("wc_a", "w_one", "agent", "key_new")
    async with store.read() as reader:
        assert await reader.get_worker("wc_a", "w_both") == both
        asked = await reader.get_worker("wc_a", "w_asked")
        one = await reader.get_worker("wc_a", "w_one")
    assert asked is not None and one is not None
    assert (asked.worker_class, asked.classes) == ("agent", ("agent", "person"))
    assert (one.worker_classes, one.classes) == ([], ("agent",))


@pytest.mark.port("evict_workers")
async def test_eviction_spares_recent_and_busy_workers(store: Store) -> None:
    await _lane_of_three(store)
    await seed_coordinator(store, coordinator("wc_b"))
    async with store.write("wc_a") as tx:
        for worker_id, seen in [("w_old_b", 1), ("w_old_a", 1), ("w_busy", 1), ("w_recent", 10)]:
            await tx.upsert_worker(worker(worker_id, observed=at(seen)))
        await tx.insert_attempts([attempt("ls_1", IT_A, worker_id="w_busy")])
        await tx.insert_attempts(
            [attempt("ls_2", IT_B, worker_id="w_old_b", status=AttemptStatus.COMPLETED)]
        )
    async with store.write("wc_b") as tx:
        await tx.upsert_worker(worker("w_old_c", "wc_b", observed=at(1)))
    async with store.write("wc_a") as tx:
        assert await tx.evict_workers("wc_a", at(10)) == ["w_old_a", "w_old_b"]
        assert await tx.evict_workers("wc_a", at(10)) == []
    async with store.write() as tx:
        assert [w.worker_id for w in await tx.list_workers("wc_a", "", 10)] == [
            "w_busy",
            "w_recent",
        ]
        assert await tx.count_workers("wc_b") == 1


@pytest.mark.port("attempts_with_items")
async def test_attempts_with_items_reads_many_leases_at_once(store: Store) -> None:
    """The batched fence's read: every lease asked for, stored or held back in the
    transaction, with its item as the transaction sees it; unknown leases (None, None)."""
    await _lane_of_three(store)
    a, b = attempt("ls_a", IT_A), attempt("ls_b", IT_B)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([a, b])
    async with store.write("wc_a") as tx:
        assert await tx.attempts_with_items([]) == {}
        assert await tx.attempts_with_items(["ls_b", "ls_x", "ls_a"]) == {
            "ls_b": (b, IT_B),
            "ls_x": (None, None),
            "ls_a": (a, IT_A),
        }
        ended = replace(a, status=AttemptStatus.COMPLETED, end_time=at(9))
        moved = replace(IT_B, state=ItemState.SUCCEEDED)
        await tx.update_attempts([ended])
        await tx.update_items([moved])
        assert await tx.attempts_with_items(["ls_a", "ls_b"]) == {
            "ls_a": (ended, IT_A),
            "ls_b": (b, moved),
        }
