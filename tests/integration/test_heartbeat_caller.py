"""A heartbeat's caller, admitted from the principal cache without reading the credentials
epoch first (``EPOCH_CONFIRMED_BY_METHOD``), is confirmed in the heartbeat round's own
transaction: a change to the credential made anywhere still applies on the very next call."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update

from tests.support.harness import ALL_CAPABILITIES, Stack, create_work_key, expect_error, task
from workcoord.api.v1 import worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.coordinator.storage import schema
from workcoord.kit.errors import NotFound, Unauthenticated
from workcoord.kit.secrets import hash_secret


async def _key_with_lease(stack: Stack) -> tuple[str, WorkcoordClient, worker_pb2.Lease]:
    made = await create_work_key(stack.admin, [stack.cid], ALL_CAPABILITIES, org=stack.org)
    client = stack.client(made.secret)
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease(client=client)
    assert hash_secret(made.secret) in stack.running.engine.principals  # cached by the Lease
    return made.key_id, client, lease


def _beat(stack: Stack, lease: worker_pb2.Lease) -> worker_pb2.HeartbeatRequest:
    return worker_pb2.HeartbeatRequest(
        coordinator_id=stack.cid, lease_id=lease.lease_id, lease_token=lease.lease_token
    )


async def _set_key(stack: Stack, key_id: str, **values: object) -> None:
    """Change the key in the database directly, behind the coordinator's back."""
    async with stack.running.store.engine.begin() as conn:
        await conn.execute(
            update(schema.work_keys).where(schema.work_keys.c.key_id == key_id).values(**values)
        )


async def test_a_cached_callers_heartbeats_go_on_while_nothing_changes(stack: Stack) -> None:
    _, client, lease = await _key_with_lease(stack)
    first = await client.workers.Heartbeat(_beat(stack, lease))
    stack.clock.advance(5)
    second = await client.workers.Heartbeat(_beat(stack, lease))
    assert second.lease_expire_time.ToDatetime() > first.lease_expire_time.ToDatetime()
    batch = await client.workers.BatchHeartbeat(
        worker_pb2.BatchHeartbeatRequest(coordinator_id=stack.cid, requests=[_beat(stack, lease)])
    )
    assert batch.results[0].status.code == 0


async def test_a_key_revoked_anywhere_fails_its_next_heartbeat(stack: Stack) -> None:
    key_id, client, lease = await _key_with_lease(stack)
    before = await client.workers.Heartbeat(_beat(stack, lease))
    await _set_key(stack, key_id, revoke_time=stack.clock.now())
    stack.clock.advance(5)
    await expect_error(client.workers.Heartbeat(_beat(stack, lease)), Unauthenticated)
    await expect_error(
        client.workers.BatchHeartbeat(
            worker_pb2.BatchHeartbeatRequest(
                coordinator_id=stack.cid, requests=[_beat(stack, lease)]
            )
        ),
        Unauthenticated,
    )
    # Nothing was extended: the lease still expires when the last answered heartbeat said.
    assert await _expiry(stack, lease) == before.lease_expire_time.ToDatetime()


async def _expiry(stack: Stack, lease: worker_pb2.Lease) -> datetime:
    attempts = schema.attempts
    async with stack.running.store.engine.connect() as conn:
        found = await conn.scalar(
            select(attempts.c.lease_expire_time).where(attempts.c.lease_id == lease.lease_id)
        )
    assert isinstance(found, datetime)
    return found.replace(tzinfo=None)


async def test_a_key_narrowed_anywhere_is_refused_at_its_next_heartbeat(stack: Stack) -> None:
    key_id, client, lease = await _key_with_lease(stack)
    await client.workers.Heartbeat(_beat(stack, lease))
    await _set_key(stack, key_id, coordinator_ids=[])
    await expect_error(client.workers.Heartbeat(_beat(stack, lease)), NotFound)
