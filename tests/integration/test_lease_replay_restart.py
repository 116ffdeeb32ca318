"""A Lease retried with its request id after the coordinator restarted answers the same leases.

The request id is stored with the attempts it granted; the tokens are derived again from a
stored nonce and the lease-token key. Before, a coordinator without a service key drew that key
at random per process, so after a restart the retry could not hand the tokens out again: it
leased afresh and answered ``[]`` while its items stayed held by leases nobody had the tokens
of. Now the key comes from the service key or, without one, from the installation's secret in
the database. Runs on both backends.
"""

from __future__ import annotations

import pytest

from tests.support.harness import Stack, start_coordinator_for, task
from workcoord.api.v1 import worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.coordinator.server import RunningCoordinator


async def _restarted(stack: Stack, service_key: str) -> RunningCoordinator:
    return await start_coordinator_for(
        stack.database_url, stack.redis_url, stack.clock, stack.admin_token, service_key
    )


def _ask(stack: Stack) -> worker_pb2.LeaseRequest:
    return worker_pb2.LeaseRequest(
        coordinator_id=stack.cid,
        worker_id="retrying",
        worker_class="machine",
        max_items=2,
        lease_seconds=60,
        request_id="lease-after-restart",
    )


@pytest.mark.parametrize("service_key", ["the stack's", "none"])
async def test_a_lease_retried_after_a_restart_answers_the_same_leases(
    stack: Stack, service_key: str
) -> None:
    key = stack.service_key if service_key == "the stack's" else ""
    await stack.running.stop(0)  # the stack's own coordinator; the test runs its own
    first_run = await _restarted(stack, key)
    try:
        async with WorkcoordClient(first_run.address, stack.key_secret) as client:
            await stack.create_lane(task("a"), task("b"), client=client)
            first = list((await client.workers.Lease(_ask(stack))).leases)
    finally:
        await first_run.stop(0)
    assert sorted(lease.item.key for lease in first) == ["a", "b"]

    second_run = await _restarted(stack, key)
    try:
        async with WorkcoordClient(second_run.address, stack.key_secret) as client:
            again = list((await client.workers.Lease(_ask(stack))).leases)
            # The tokens answered again are the live ones: a heartbeat with them is accepted.
            for lease in again:
                await client.workers.Heartbeat(
                    worker_pb2.HeartbeatRequest(
                        coordinator_id=stack.cid,
                        lease_id=lease.lease_id,
                        lease_token=lease.lease_token,
                    )
                )
    finally:
        await second_run.stop(0)
    assert [(lease.lease_id, lease.lease_token) for lease in again] == [
        (lease.lease_id, lease.lease_token) for lease in first
    ]
