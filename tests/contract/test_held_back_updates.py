"""A write transaction reads its own updates: every read that scans items or attempts, and
every set write over them, sees the item and attempt updates made before it in the same
transaction. (The SQL store holds those updates back to write them together; this is what
its explicit ``write_held_back`` points guarantee. Reads by id are covered with the records.)"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from sqlalchemy import event

from workcoord.coordinator.domain.model import AttemptStatus, ItemState
from workcoord.coordinator.domain.ports import ClaimScan, Store
from workcoord.coordinator.storage.sql import SqlStore

from .records import at, attempt, item, lane, seed_coordinator, seed_lane, worker

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


@pytest.mark.port("mark_lanes_served", "resolve_escalations", "update_items", "claim_candidates")
async def test_a_claims_turns_and_resolutions_ride_in_the_flush(store: Store) -> None:
    """The claim's last writes — the lanes' turns and the escalations it resolves — are held
    back with the item updates: on PostgreSQL the flush writes all of them (and the items) in
    ONE statement; on every store a later transaction sees them written."""
    await seed_coordinator(store)
    await seed_lane(store, IT_A, IT_B)
    await seed_lane(store, item("it_b1", "ln_b", seq=3), record=lane("ln_b"))
    inner = getattr(store, "inner", None)
    statements: list[str] = []
    engine = inner.engine.sync_engine if isinstance(inner, SqlStore) else None

    def note(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    async with store.write("wc_a") as tx:
        if engine is not None:
            event.listen(engine, "before_cursor_execute", note)
        try:
            await tx.update_items([replace(IT_A, state=ItemState.LEASED)])
            await tx.mark_lanes_served(["ln_a"], 4)
            await tx.resolve_escalations("wc_a", ["it_a"], at(3))
            assert statements == []  # nothing written yet
        finally:
            flushed_at = len(statements)
    if engine is not None:
        event.remove(engine, "before_cursor_execute", note)
        written = [s for s in statements[flushed_at:] if not s.startswith(("COMMIT", "ROLLBACK"))]
        if inner is not None and inner.dialect == "postgresql":
            assert len(written) == 1, written
    async with store.write("wc_a") as tx:
        page = await tx.claim_candidates(ClaimScan("wc_a", ("codex",), at(0), None, 10))
        # ln_b was never served (turn 0): it goes before ln_a, served at 4.
        assert [i.item_id for i in page.items] == ["it_b1", "it_b"]


@pytest.mark.port("claim_candidates", "attempts_with_items", "update_items", "update_attempts")
async def test_records_the_hot_reads_loaded_are_written_in_every_column_they_changed(
    store: Store,
) -> None:
    """The SQL store writes only the columns a held-back update changed since the claim's or
    the fence's read loaded the row: a change to any column (a JSON document, a scalar, one
    set back to NULL) is written, and the columns nobody changed keep what is stored."""
    await seed_coordinator(store)
    await seed_lane(store, replace(IT_A, inputs={"n": 1}), IT_B)
    running = attempt("ls_b", IT_B)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([running])
    async with store.write("wc_a") as tx:
        (first, *_) = (
            await tx.claim_candidates(ClaimScan("wc_a", ("codex",), at(0), None, 10))
        ).items
        assert first.item_id == "it_a"
        first.inputs = {"n": 2, "more": [1, 2]}
        first.state = ItemState.LEASED
        first.ready_time = None
        found = await tx.attempts_with_items(["ls_b"])
        fenced, its_item = found["ls_b"]
        assert fenced is not None and its_item is not None
        fenced.progress = "half way"
        fenced.usage = {"cost_micros": 5}
        its_item.title = "renamed"
        await tx.update_items([first, its_item])
        await tx.update_attempts([fenced])
    async with store.read() as reader:
        a = await reader.get_item("it_a")
        b = await reader.get_item("it_b")
        stored = await reader.get_attempt("ls_b")
    assert a is not None and b is not None and stored is not None
    assert (a.inputs, a.state, a.ready_time) == ({"n": 2, "more": [1, 2]}, ItemState.LEASED, None)
    assert (a.title, a.seq) == (IT_A.title, IT_A.seq)
    assert (b.title, b.inputs, b.state) == ("renamed", IT_B.inputs, IT_B.state)
    assert (stored.progress, stored.usage, stored.worker_id) == (
        "half way",
        {"cost_micros": 5},
        "w1",
    )


@pytest.mark.port("insert_attempts", "update_attempts", "attempts_with_items")
async def test_attempts_inserted_read_back_before_and_after_commit(store: Store) -> None:
    """New attempts (which the PostgreSQL store inserts with the flush) read back by id, by
    scan and updated within their transaction, and are stored as last written; a rolled-back
    transaction leaves none."""
    await seed_coordinator(store)
    await seed_lane(store, IT_A, IT_B, IT_C)
    new = attempt("ls_new", IT_A)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([new, attempt("ls_other", IT_B)])
        assert await tx.get_attempt("ls_new") == new
        assert (await tx.attempts_with_items(["ls_new"]))["ls_new"] == (new, IT_A)
        started = replace(new, status=AttemptStatus.RUNNING, start_time=at(1))
        await tx.update_attempts([started])
        assert await tx.attempt_with_item("ls_new") == (started, IT_A)
        live = await tx.live_attempts("wc_a", "codex")
        assert [(a.lease_id, a.status) for a in live] == [
            ("ls_new", AttemptStatus.RUNNING),
            ("ls_other", AttemptStatus.LEASED),
        ]
        await tx.update_attempts([replace(started, progress="half")])
    async with store.read() as reader:
        assert await reader.get_attempt("ls_new") == replace(started, progress="half")
        assert await reader.get_attempt("ls_other") is not None
    with pytest.raises(RuntimeError):
        async with store.write("wc_a") as tx:
            await tx.insert_attempts([attempt("ls_gone", IT_C)])
            raise RuntimeError("roll back")
    async with store.read() as reader:
        assert await reader.get_attempt("ls_gone") is None


@pytest.mark.port("insert_attempts", "update_items", "update_attempts")
async def test_rows_written_together_keep_each_value_shared_or_not(store: Store) -> None:
    """Many rows written in one statement (PostgreSQL sends a value every row shares once):
    each row reads back with its own values, whether they are all alike, all differ, or are
    equal in Python but not in JSON (``True`` and ``1``)."""
    items = [item(f"it_{n}", "ln_a", seq=n) for n in range(1, 5)]
    await seed_coordinator(store)
    await seed_lane(store, *items)
    alike: dict[str, object] = {"ok": True}
    # Equal in Python, not in JSON:
    checkpoints: list[dict[str, object]] = [alike, {"ok": 1}, {"ok": True}, {"ok": 1}]
    attempts = [
        replace(attempt(f"ls_{n}", it), checkpoint=checkpoints[n], progress="same")
        for n, it in enumerate(items)
    ]
    updated = [
        replace(it, state=ItemState.LEASED, evidence=alike, attempt_count=n, update_time=at(5))
        for n, it in enumerate(items)
    ]
    async with store.write("wc_a") as tx:
        await tx.insert_attempts(attempts)
        await tx.update_items(updated)
    ended = [
        replace(a, status=AttemptStatus.COMPLETED, end_time=at(9), progress=f"step {n}")
        for n, a in enumerate(attempts)
    ]
    async with store.write("wc_a") as tx:
        await tx.update_attempts(ended)
    async with store.read() as reader:
        read = [await reader.get_attempt(a.lease_id) for a in ended]
        assert read == ended
        # ``==`` holds for True and 1 alike: compare as JSON.
        assert [json.dumps(a.checkpoint) for a in read if a] == [json.dumps(c) for c in checkpoints]
        assert [await reader.get_item(i.item_id) for i in updated] == updated
