"""Heartbeats never deadlock with the group commit of worker writes (PostgreSQL).

Worker writes of one work coordinator share one transaction under its lock (group commit);
each member locks its attempts' rows as it fences them, so a group takes rows in the order its
members arrive, and takes usage roll-up rows as members spend. Heartbeats take no coordinator
lock: they lock the rows of the leases they extend, then add their usage. Two orders that
would close a cycle, each set up step by step (a member is held, by an advisory lock this test
owns, just before its fence read; the heartbeat then starts; the member is let go once the
heartbeat waits for a row or is done):

* attempts: a group completes c, then b; a BatchHeartbeat of b and c (lease id order) holds b
  and waits for c while the group's second member waits for b;
* usage: a group's first member adds its usage (the coordinator's roll-up row) and its second
  waits for b, which a Heartbeat with usage holds while it waits for that roll-up row.

PostgreSQL would break either cycle after ``deadlock_timeout`` by failing one transaction (the
heartbeat, or the whole group). Here every call must succeed with the right answer, the
roll-ups must add up, and the invariant checker must pass. A last test runs the same shapes
many times without holding anyone up.

The lock order these rely on is described in docs/architecture.md ("Lock order").
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests.support.databases import delete_redis_keys
from tests.support.harness import Stack, identity, start_stack, task
from tests.support.invariants import check_invariants
from workcoord.api.v1 import worker_pb2
from workcoord.coordinator.domain.inputs import BatchInput, CompleteInput, HeartbeatInput
from workcoord.coordinator.domain.model import Attempt, AttemptStatus, UsageScope
from workcoord.coordinator.domain.results import EntryResult, HeartbeatAnswer
from workcoord.coordinator.domain.specs import Evidence, Usage
from workcoord.coordinator.storage.sql.store import SqlTx
from workcoord.kit.errors import LeaseLost

pytestmark = [pytest.mark.pg, pytest.mark.redis]


@pytest.fixture
async def pg_stack(pg_url: str, redis: str) -> AsyncIterator[Stack]:
    started = await start_stack("postgres", pg_url, redis)
    try:
        yield started
    finally:
        async with started.running.store.read() as reader:
            problems = await check_invariants(reader, started.cid)
        await started.close()
        await delete_redis_keys(started.coordinator_ids, redis)
        assert problems == []


async def running_leases(stack: Stack, count: int) -> list[worker_pb2.Lease]:
    """``count`` (≤ 4) running leases, two per class at most (the default capacity)."""
    classes = ["machine", "agent"]
    await stack.create_lane(
        *(task(f"t{n}-{secrets.token_hex(2)}", classes[n % 2]) for n in range(count))
    )
    leases: list[worker_pb2.Lease] = []
    for cls in classes[: min(count, 2)]:
        wanted = len(range(classes.index(cls), count, 2))
        leases += await stack.lease(cls, max_items=wanted, run_identity=identity(stack.clock))
    assert len(leases) == count
    return leases


class Holder:
    """Holds up the first fence read of one lease on an advisory lock this test owns."""

    def __init__(self, stack: Stack, monkeypatch: pytest.MonkeyPatch, lease_id: str) -> None:
        self.stack = stack
        self.key = random.randrange(1, 2**62)
        self.lease_id = lease_id
        self.armed = True
        self.locker: asyncpg.Connection | None = None
        original = SqlTx.attempt_with_item
        holder = self

        async def held_up(tx: SqlTx, lease_id: str) -> Any:
            if holder.armed and lease_id == holder.lease_id:
                holder.armed = False
                await tx.conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": holder.key})
            return await original(tx, lease_id)

        monkeypatch.setattr(SqlTx, "attempt_with_item", held_up)

    async def __aenter__(self) -> Holder:
        url = make_url(self.stack.database_url).set(drivername="postgresql")
        self.locker = await asyncpg.connect(url.render_as_string(hide_password=False))
        await self.locker.execute("SELECT pg_advisory_lock($1)", self.key)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.locker is not None
        await self.locker.close()

    async def waits(self) -> list[str]:
        """What the backends of this test's database wait for: a row (``transactionid``,
        ``tuple``) or the advisory lock that holds the member up."""
        assert self.locker is not None
        rows = await self.locker.fetch(
            "SELECT wait_event FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return [str(r["wait_event"]) for r in rows]

    async def until(self, what: str, condition: Any, timeout: float = 60.0) -> None:  # noqa: ASYNC109
        deadline = time.monotonic() + timeout
        while not await condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.005)

    async def member_held(self) -> None:
        await self.until("the member to be held", self._advisory_waits)

    async def _advisory_waits(self) -> bool:
        return "advisory" in await self.waits()

    async def row_wait_or_done(self, call: asyncio.Task[Any]) -> None:
        """Until ``call`` is done or some transaction waits for a row (not the advisory)."""

        async def settled() -> bool:
            return call.done() or any(w != "advisory" for w in await self.waits())

        await self.until("the heartbeat to wait for a row or finish", settled)

    async def release(self) -> None:
        assert self.locker is not None
        await self.locker.execute("SELECT pg_advisory_unlock($1)", self.key)


def beat(stack: Stack, lease: worker_pb2.Lease, usage: Usage | None = None) -> HeartbeatInput:
    return HeartbeatInput(
        coordinator_id=stack.cid,
        lease_id=lease.lease_id,
        lease_token=lease.lease_token,
        usage=usage,
    )


def done(stack: Stack, lease: worker_pb2.Lease, usage: Usage | None = None) -> CompleteInput:
    return CompleteInput(
        coordinator_id=stack.cid,
        lease_id=lease.lease_id,
        lease_token=lease.lease_token,
        evidence=Evidence(summary="ok"),
        usage=usage,
    )


async def settle(*calls: Awaitable[Any]) -> list[Any]:
    """Every call's outcome; none may have failed (a deadlock fails one as INTERNAL)."""
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert failed == [], failed
    return outcomes


async def coordinator_cost(stack: Stack) -> int:
    async with stack.running.store.read() as reader:
        found = await reader.usage_totals(stack.cid, UsageScope.COORDINATOR, "", [""])
    return found[0].cost_micros if found else 0


async def test_a_batch_heartbeat_across_a_group_in_the_other_order(
    pg_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = pg_stack
    engine = stack.running.engine
    principal = await engine.credentials.authenticate(stack.key_secret)
    b, c = sorted(await running_leases(stack, 2), key=lambda lease: lease.lease_id)
    async with Holder(stack, monkeypatch, b.lease_id) as holder:
        # One group: Complete(c) locks c, then Complete(b) is held before it locks b.
        complete_c = asyncio.create_task(engine.attempts.complete(principal, done(stack, c)))
        complete_b = asyncio.create_task(engine.attempts.complete(principal, done(stack, b)))
        await holder.member_held()
        heartbeats = asyncio.create_task(
            engine.attempts.batch_heartbeat(
                principal,
                BatchInput(coordinator_id=stack.cid, entries=(beat(stack, b), beat(stack, c))),
            )
        )
        await holder.row_wait_or_done(heartbeats)
        await holder.release()
        _, _, results = await settle(complete_c, complete_b, heartbeats)
    assert complete_c.result().status == AttemptStatus.COMPLETED
    assert complete_b.result().status == AttemptStatus.COMPLETED
    answered: list[EntryResult[HeartbeatAnswer]] = results
    assert [r.lease_id for r in answered] == [b.lease_id, c.lease_id]
    # b was extended before the group's Complete of b; c was complete by the time its turn came.
    assert answered[0].error is None and answered[0].value is not None
    assert isinstance(answered[1].error, LeaseLost)


async def test_a_heartbeat_with_usage_across_a_group_that_spent(
    pg_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = pg_stack
    engine = stack.running.engine
    principal = await engine.credentials.authenticate(stack.key_secret)
    a, b = await running_leases(stack, 2)
    async with Holder(stack, monkeypatch, b.lease_id) as holder:
        # One group: Complete(a) adds its usage, then Complete(b) is held before it locks b.
        complete_a = asyncio.create_task(
            engine.attempts.complete(principal, done(stack, a, Usage(cost_micros=100)))
        )
        complete_b = asyncio.create_task(
            engine.attempts.complete(principal, done(stack, b, Usage(cost_micros=30)))
        )
        await holder.member_held()
        heartbeat = asyncio.create_task(
            engine.attempts.heartbeat(principal, beat(stack, b, Usage(cost_micros=20)))
        )
        await holder.row_wait_or_done(heartbeat)
        await holder.release()
        await settle(complete_a, complete_b, heartbeat)
    assert complete_a.result().status == AttemptStatus.COMPLETED
    assert complete_b.result().status == AttemptStatus.COMPLETED
    # Running totals: b reported 20, then 30 in all; a 100.
    assert await coordinator_cost(stack) == 130


async def test_heartbeats_and_group_commits_over_shared_leases_many_rounds(
    pg_stack: Stack,
) -> None:
    """No one held up: each round, Completes of four leases in a shuffled order (one group, or
    a few) race two BatchHeartbeats over overlapping pairs and Heartbeats, all with usage."""
    stack = pg_stack
    engine = stack.running.engine
    principal = await engine.credentials.authenticate(stack.key_secret)
    rng = random.Random(11)
    expected = 0
    for _ in range(40):
        leases = await running_leases(stack, 4)
        rng.shuffle(leases)
        spend = {lease.lease_id: rng.randint(1, 50) for lease in leases}
        expected += sum(spend.values())
        ordered = sorted(leases, key=lambda lease: lease.lease_id)
        pairs = [(ordered[0], ordered[2]), (ordered[1], ordered[3]), (ordered[1], ordered[2])]
        calls: list[Awaitable[Any]] = []
        for lease in leases:
            usage = Usage(cost_micros=spend[lease.lease_id])
            calls.append(engine.attempts.complete(principal, done(stack, lease, usage)))
            calls.append(
                engine.attempts.heartbeat(principal, beat(stack, lease, Usage(cost_micros=1)))
            )
        for pair in pairs:
            entries = tuple(beat(stack, lease, Usage(cost_micros=1)) for lease in pair)
            calls.append(
                engine.attempts.batch_heartbeat(
                    principal, BatchInput(coordinator_id=stack.cid, entries=entries)
                )
            )
        rng.shuffle(calls)
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        # A Heartbeat that came after its lease's Complete is LEASE_LOST; nothing else fails.
        failed = [
            o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, LeaseLost)
        ]
        assert failed == [], failed
        for outcome in outcomes:
            if isinstance(outcome, list):
                errors = [r.error for r in outcome if r.error is not None]
                assert all(isinstance(e, LeaseLost) for e in errors), errors
            elif isinstance(outcome, Attempt):
                assert outcome.status == AttemptStatus.COMPLETED
    # Each lease's final total is its Complete's (heartbeats reported 1 first, never more).
    assert await coordinator_cost(stack) == expected
