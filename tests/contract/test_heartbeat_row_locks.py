"""A Heartbeat extends a lease WITHOUT the work coordinator's lock (``store.extend()``, and
a single heartbeat in ``store.write()`` with no coordinator). What keeps it exact is the
attempt's row: every write transaction reads an attempt to write it under that row's lock
(``FOR UPDATE`` on PostgreSQL), a round outside a transaction writes only rows still at the
version it read, and recovery re-checks expiry on the row itself. The memory and SQLite stores
serialize all writers, so there the cases run one transaction after the other; on PostgreSQL
the second transaction is proven to wait for the first (``pg_stat_activity``) before the
first commits, so the race is the one a fleet meets."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from workcoord.coordinator.domain.model import AttemptStatus, UsageScope, UsageTotal
from workcoord.coordinator.domain.ports import Store

from .records import at, attempt, item, seed_leased
from .waits import WAIT_SECONDS, waits_for_a_lock

IT_A = item("it_a", "ln_a", seq=1)


async def _seed(store: Store) -> None:
    await seed_leased(store, IT_A, "ls_a", at(10))


@pytest.mark.port("attempt_with_item", "update_attempts", "end_expired_leases")
async def test_a_sweep_behind_a_heartbeat_does_not_end_the_extended_lease(
    store: Store, store_kind: str
) -> None:
    await _seed(store)

    async def sweep() -> list[str]:
        async with store.write("wc_a") as tx:
            return [e.attempt.lease_id for e in await tx.end_expired_leases("wc_a", at(20), 100)]

    swept: asyncio.Task[list[str]] | None = None
    async with store.write() as tx:  # the heartbeat's transaction: no coordinator lock
        found, _ = await tx.attempt_with_item("ls_a")
        assert found is not None and found.live
        await tx.update_attempts([replace(found, lease_expire_time=at(600))])
        if store_kind == "postgres":
            # The sweep's subquery sees the lease expired at 20 s; it must wait for the row.
            swept = asyncio.create_task(sweep())
            await waits_for_a_lock(store)
    ended = await swept if swept is not None else await sweep()
    assert ended == []
    async with store.read() as reader:
        stored = await reader.get_attempt("ls_a")
    assert stored is not None and stored.live and stored.lease_expire_time == at(600)


@pytest.mark.port("get_attempt", "attempt_with_item", "update_attempts")
async def test_a_heartbeat_behind_a_release_reads_the_ended_attempt(
    store: Store, store_kind: str
) -> None:
    await _seed(store)

    async def heartbeat_read() -> AttemptStatus | None:
        async with store.write() as tx:
            found, _ = await tx.attempt_with_item("ls_a")
            return None if found is None else found.status

    read: asyncio.Task[AttemptStatus | None] | None = None
    async with store.write("wc_a") as tx:  # a cancel: reads the attempt to end it
        live = await tx.get_attempt("ls_a")
        assert live is not None and live.live
        ended = replace(live, status=AttemptStatus.RELEASED, end_time=at(5))
        await tx.update_attempts([ended])
        if store_kind == "postgres":
            read = asyncio.create_task(heartbeat_read())
            await waits_for_a_lock(store)
    status = await read if read is not None else await heartbeat_read()
    assert status == AttemptStatus.RELEASED


@pytest.mark.port("get_attempt", "attempts_with_items", "update_attempts")
async def test_a_batch_heartbeats_read_skips_held_rows_and_never_waits(
    store: Store, store_kind: str
) -> None:
    """``skip_locked``: the leases read are keys, unknown ones are left out; on PostgreSQL a
    row another transaction holds is left out too, at once (a lock-free BatchHeartbeat never
    waits for a row while it holds another: docs/architecture.md, "Lock order")."""
    await _seed(store)
    it_b = item("it_b", "ln_a", seq=2)
    async with store.write("wc_a") as tx:
        await tx.insert_items([it_b])
        await tx.insert_attempts([attempt("ls_b", it_b, expire_time=at(10))])
    wanted = ["ls_a", "ls_b", "ls_x"]

    async def batch_read() -> list[str]:
        async with store.write() as tx:  # a BatchHeartbeat's: no coordinator lock
            found = await tx.attempts_with_items(wanted, skip_locked=True)
            assert all(a is not None and a.lease_id == k for k, (a, _) in found.items())
            return list(found)

    read_behind: list[str] | None = None
    async with store.write("wc_a") as tx:  # a Complete of ls_a holds its row
        held = await tx.get_attempt("ls_a")
        assert held is not None
        await tx.update_attempts([replace(held, lease_expire_time=at(30))])
        if store_kind == "postgres":
            read_behind = await asyncio.wait_for(batch_read(), WAIT_SECONDS)
    if read_behind is not None:
        assert read_behind == ["ls_b"]
    assert await batch_read() == ["ls_a", "ls_b"]


@pytest.mark.port("extend", "coordinators_and_attempts", "extend_attempts")
async def test_a_round_writes_only_the_rows_unchanged_since_its_read(
    store: Store, store_kind: str
) -> None:
    """A heartbeat round reads its work coordinators and three leases (and an unknown one),
    and extends the three, each reporting usage. On PostgreSQL the round runs outside a
    transaction and writes at once what is still as it read it: not ls_b,
    which another writer changed since the read, nor ls_c, which another transaction holds
    (without waiting for it); neither's usage is added. The stores that serialize their
    writers write all three."""
    await _seed(store)
    more = [item("it_b", "ln_a", seq=2), item("it_c", "ln_a", seq=3)]
    async with store.write("wc_a") as tx:
        await tx.insert_items(more)
        await tx.insert_attempts([attempt(f"ls_{i.item_id[-1]}", i) for i in more])
    leases = ["ls_a", "ls_b", "ls_c"]
    postgres = store_kind == "postgres"
    async with store.extend() as tx:
        coordinators, found = await tx.coordinators_and_attempts(
            ["wc_a", "wc_missing"], [*leases, "ls_x"]
        )
        assert list(found) == leases  # ls_x is unknown
        known = coordinators["wc_a"]
        assert known is not None and known.coordinator_id == "wc_a"
        assert coordinators["wc_missing"] is None
        if postgres:  # ls_b changes after the round read it
            async with store.write() as other:
                changed = await other.get_attempt("ls_b")
                assert changed is not None
                await other.update_attempts([replace(changed, progress="moved")])
        extended = []
        for lease_id in leases:
            read, _ = found[lease_id]
            assert read is not None
            beat = replace(read, lease_expire_time=at(40), progress=f"beat {lease_id}")
            extended.append((beat, [_spent(lease_id)]))
        if postgres:
            async with store.write() as holder:  # ls_c is held while the round writes
                assert await holder.get_attempt("ls_c") is not None
                written = await asyncio.wait_for(tx.extend_attempts(extended), WAIT_SECONDS)
        else:
            written = await tx.extend_attempts(extended)
    expected = {"ls_a"} if postgres else set(leases)
    assert written == expected
    async with store.read() as reader:
        for lease_id in leases:
            stored = await reader.get_attempt(lease_id)
            assert stored is not None
            if lease_id in expected:
                assert (stored.progress, stored.lease_expire_time) == (f"beat {lease_id}", at(40))
            else:
                assert stored.progress == ("moved" if lease_id == "ls_b" else "tests 40/120")
        added = await reader.usage_totals("wc_a", UsageScope.LANE, "", leases)
    assert sorted(t.key for t in added) == sorted(expected)
    assert all(t.cost_micros == 7 for t in added)


def _spent(key: str) -> UsageTotal:
    return UsageTotal("wc_a", UsageScope.LANE, key, "", input_tokens=3, cost_micros=7)
