"""A worker write whose caller goes away mid-statement never fails the group it shares.

Concurrent worker writes of one work coordinator share one transaction (group commit). Here a
(retried, so idempotent) Start is cancelled (as a client deadline does) while its statement is
running on the shared connection — held there, deterministically, by a PostgreSQL advisory
lock this test owns — and a Complete of another lease has joined the same group behind it. The
Complete must succeed.
Before the fix the cancellation interrupted the statement, the shared connection was left in
PendingRollbackError and the Complete failed with an internal error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests.support.databases import delete_redis_keys
from tests.support.harness import Stack, identity, start_stack, task
from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.domain.inputs import CompleteInput, HeartbeatInput, StartInput
from workcoord.coordinator.domain.model import AttemptStatus
from workcoord.coordinator.domain.specs import Evidence, RunIdentity
from workcoord.coordinator.storage.sql.store import SqlTx

pytestmark = [pytest.mark.pg, pytest.mark.redis]

LOCK_KEY = 731_001


@pytest.fixture
async def pg_stack(pg_url: str, redis: str) -> AsyncIterator[Stack]:
    started = await start_stack("postgres", pg_url, redis)
    try:
        yield started
    finally:
        await started.close()
        await delete_redis_keys(started.coordinator_ids, redis)


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _until(condition: Any, what: str, timeout: float = 60.0) -> None:  # noqa: ASYNC109
    """Wait (generously) until ``await condition()`` is true."""
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_a_cancelled_member_never_fails_the_others(
    pg_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = pg_stack
    await stack.create_lane(task("a"), task("b"))
    leases = await stack.lease(max_items=2, run_identity=identity(stack.clock))
    assert len(leases) == 2
    held, other = leases
    engine = stack.running.engine
    principal = await engine.credentials.authenticate(stack.key_secret)

    original = SqlTx.attempt_with_item

    async def held_up(self: SqlTx, lease_id: str) -> Any:
        if lease_id == held.lease_id:
            # A real statement on the shared connection that waits for the test's lock.
            await self.conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK_KEY})
        return await original(self, lease_id)

    monkeypatch.setattr(SqlTx, "attempt_with_item", held_up)
    locker = await asyncpg.connect(_asyncpg_dsn(stack.database_url))
    try:
        await locker.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)

        async def statement_waiting() -> bool:
            waiting = await locker.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            )
            return bool(waiting)

        # A Heartbeat takes no part in the group commit (its own transaction, no coordinator
        # lock): the cancelled member is a retried Start, a worker write that joins the group.
        async with engine.store.read() as reader:
            stored = await reader.get_attempt(held.lease_id)
        assert stored is not None and stored.run_identity
        started = asyncio.create_task(
            engine.attempts.start(
                principal,
                StartInput(
                    coordinator_id=stack.cid,
                    lease_id=held.lease_id,
                    lease_token=held.lease_token,
                    run_identity=RunIdentity.from_json(stored.run_identity),
                ),
            )
        )
        await _until(statement_waiting, "the Start's statement to wait on the lock")
        complete = asyncio.create_task(
            engine.attempts.complete(
                principal,
                CompleteInput(
                    coordinator_id=stack.cid,
                    lease_id=other.lease_id,
                    lease_token=other.lease_token,
                    evidence=Evidence(summary="ok"),
                ),
            )
        )

        async def joined() -> bool:
            group = engine.worker_writes._open.get(stack.cid)
            return group is not None and group.joined == 2

        await _until(joined, "the Complete to join the Start's group")
        started.cancel()
        with pytest.raises(asyncio.CancelledError):
            await started
        await locker.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
        attempt = await complete
    finally:
        await locker.close()

    assert attempt.status == AttemptStatus.COMPLETED
    item = await stack.get_item(other.item)
    assert item.state == lane_pb2.Item.SUCCEEDED
    # The cancelled Start's lease is intact: the worker can go on with it.
    await engine.drain()
    assert await engine.attempts.heartbeat(
        principal,
        HeartbeatInput(
            coordinator_id=stack.cid, lease_id=held.lease_id, lease_token=held.lease_token
        ),
    )
