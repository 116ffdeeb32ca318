"""kill -9 of the recovery leader: the standby replica takes the leadership over within one
leadership lease (15 s by default) and its first pass sweeps a lease that expired meanwhile.

Two ``workcoord serve recovery`` processes run with their defaults (a pass every 15 s, a 15 s
leadership lease) next to a coordinator on PostgreSQL, on the real clock: what is measured is
the time from the kill to the standby reporting leadership.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc.aio
import pytest

from tests.support.databases import redis_url, xdist_worker
from tests.support.harness import create_coordinator, create_work_key, task
from tests.support.processes import (
    READY_TIMEOUT_SECONDS,
    WAIT_SECONDS,
    ServiceProcess,
    free_port,
    grpc_serving,
    service_env,
    wait_ready,
)
from workcoord.api.v1 import admin_pb2, lane_pb2, recovery_pb2, recovery_pb2_grpc, worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.recovery import DEFAULT_LEADERSHIP_SECONDS

from .harness import create_database, drop_database, migrate_database

pytestmark = [pytest.mark.e2e, pytest.mark.pg, pytest.mark.redis]

# Beyond the lease: the standby asks again a few milliseconds after the lease lapses; the rest
# is a loaded machine's scheduling. Today's code took 30 s or more (a 45 s lease).
SLACK_SECONDS = 8.0


@dataclass
class Replica:
    process: ServiceProcess
    address: str


@dataclass
class RecoveryPair:
    coordinator: ServiceProcess
    coordinator_address: str
    replicas: list[Replica]
    admin_token: str
    service_key: str

    @property
    def processes(self) -> list[ServiceProcess]:
        return [self.coordinator, *(r.process for r in self.replicas)]

    def logs(self) -> str:
        return "\n".join(p.log_tail() for p in self.processes)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[RecoveryPair]:
    name = f"workcoord_failover_{xdist_worker()}_{secrets.token_hex(4)}"
    database_url = create_database(name)
    processes: list[ServiceProcess] = []
    try:
        migrate_database(database_url)
        admin_token = "wcadm_" + secrets.token_urlsafe(32)
        service_key = "wcsvc_" + secrets.token_urlsafe(32)
        coordinator_address = f"127.0.0.1:{free_port()}"
        coordinator = ServiceProcess(
            name="coordinator",
            args=["serve", "coordinator"],
            env=service_env(
                DATABASE_URL=database_url,
                REDIS_URL=redis_url(),
                WORKCOORD_LISTEN_COORDINATOR=coordinator_address,
                WORKCOORD_BOOTSTRAP_ADMIN_TOKEN=admin_token,
                WORKCOORD_SERVICE_KEY=service_key,
            ),
            log_path=tmp_path / "coordinator.log",
        )
        replicas = []
        for n in range(2):
            address = f"127.0.0.1:{free_port()}"
            # The defaults under test: no interval, no leadership lease set.
            process = ServiceProcess(
                name=f"recovery-{n}",
                args=["serve", "recovery"],
                env=service_env(
                    WORKCOORD_LISTEN_RECOVERY=address,
                    WORKCOORD_COORDINATOR_ADDRESS=coordinator_address,
                    WORKCOORD_SERVICE_KEY=service_key,
                    WORKCOORD_LOG_LEVEL="INFO",
                ),
                log_path=tmp_path / f"recovery-{n}.log",
            )
            replicas.append(Replica(process, address))
        running = RecoveryPair(coordinator, coordinator_address, replicas, admin_token, service_key)
        processes = running.processes
        for process in processes:
            process.start()
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        wait_ready(lambda: grpc_serving(coordinator_address), coordinator, deadline, running.logs)
        for replica in replicas:
            wait_ready(
                functools.partial(grpc_serving, replica.address),
                replica.process,
                deadline,
                running.logs,
            )
        yield running
        exits = {p.name: p.stop() for p in reversed(processes) if p.alive()}
        assert all(code == 0 for code in exits.values()), f"{exits}\n{running.logs()}"
        for process in processes:
            assert "Traceback" not in process.log_path.read_text(), running.logs()
    finally:
        for process in processes:
            if process.alive():
                process.kill()
        drop_database(name)


async def status_of(replica: Replica, service_key: str) -> recovery_pb2.RecoveryStatus | None:
    """The replica's ``GetRecoveryStatus`` (None while it does not answer)."""
    async with grpc.aio.insecure_channel(replica.address) as channel:
        stub = recovery_pb2_grpc.RecoveryServiceStub(channel)
        try:
            response = await stub.GetRecoveryStatus(
                recovery_pb2.GetRecoveryStatusRequest(),
                metadata=(("authorization", f"Bearer {service_key}"),),
                timeout=5,
            )
        except grpc.aio.AioRpcError:
            return None
        return response.status


async def poll(what: str, check: Callable[[], Awaitable[bool]], pair: RecoveryPair) -> None:
    """Until ``check()`` holds (a hang guard of ``WAIT_SECONDS``)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not await check():
        assert time.monotonic() < deadline, f"{what}: not in time\n{pair.logs()}"
        await asyncio.sleep(0.05)


async def test_the_standby_takes_over_within_one_lease_of_a_kill_9(pair: RecoveryPair) -> None:
    service_key = pair.service_key
    leaders: list[Replica] = []

    async def one_leads_and_has_passed() -> bool:
        statuses = [await status_of(r, service_key) for r in pair.replicas]
        leaders[:] = [r for r, s in zip(pair.replicas, statuses, strict=True) if s and s.leader]
        return len(leaders) == 1 and any(s and s.passes_total > 0 for s in statuses)

    await poll("a leader", one_leads_and_has_passed, pair)
    [leader] = leaders
    [standby] = [r for r in pair.replicas if r is not leader]
    before = await status_of(standby, service_key)
    assert before is not None and not before.leader and before.passes_total == 0

    async with WorkcoordClient(pair.coordinator_address, pair.admin_token) as admin:
        await admin.admin.CreateOrg(
            admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug="failover", display_name="F"))
        )
        coordinator_id = await create_coordinator(admin, "failover")
        key = await create_work_key(admin, [coordinator_id])
        async with WorkcoordClient(pair.coordinator_address, key.secret) as worker:
            lane = (
                await worker.lanes.CreateLane(
                    lane_pb2.CreateLaneRequest(
                        coordinator_id=coordinator_id,
                        lane=lane_pb2.Lane(
                            title="failover", template=lane_pb2.Lane.CUSTOM, items=[task("a")]
                        ),
                    )
                )
            ).lane

            leader.process.kill()
            killed_at = time.monotonic()
            # A lease taken after the kill, left to expire: only the standby can sweep it.
            leased = await worker.workers.Lease(
                worker_pb2.LeaseRequest(
                    coordinator_id=coordinator_id,
                    worker_id="machine-1",
                    worker_class="machine",
                    max_items=1,
                    lease_seconds=5,
                )
            )
            assert len(leased.leases) == 1

            took_over: list[float] = []

            async def standby_leads() -> bool:
                status = await status_of(standby, service_key)
                if status is not None and status.leader:
                    took_over.append(time.monotonic())
                return bool(took_over)

            await poll("the standby's leadership", standby_leads, pair)
            takeover_seconds = took_over[0] - killed_at
            assert takeover_seconds <= DEFAULT_LEADERSHIP_SECONDS + SLACK_SECONDS, (
                f"the standby took over {takeover_seconds:.1f} s after the kill\n{pair.logs()}"
            )

            async def swept() -> bool:
                item = (
                    await admin.lanes.GetItem(
                        lane_pb2.GetItemRequest(
                            coordinator_id=coordinator_id,
                            lane_id=lane.lane_id,
                            item_id=lane.items[0].item_id,
                        )
                    )
                ).item
                return item.state == lane_pb2.Item.QUEUED and [a.status for a in item.attempts] == [
                    lane_pb2.Attempt.DEAD
                ]

            await poll("the expired lease swept", swept, pair)

    async def standby_has_passed() -> bool:
        status = await status_of(standby, service_key)
        return status is not None and status.leader and status.passes_total >= 1

    # The sweep is the first step of a pass: the pass itself is counted once it is over.
    await poll("the standby's pass counted", standby_has_passed, pair)
    print(f"standby took over {takeover_seconds:.2f} s after kill -9 of the leader")
