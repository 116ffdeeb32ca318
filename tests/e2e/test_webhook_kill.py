"""kill -9 mid-delivery loses no webhook delivery.

The coordinator POSTs the deliveries (behind ``MaintenanceService/DeliverWebhooks``, which the
recovery leader long-polls), and records one only after its answer. Here the services run as
processes on the real clock; a local receiver accepts the first POST's connection and holds the
request unanswered, so that delivery is in flight, and the others of the webhook wait behind it
(its revision order). Then:

* the coordinator (the process that POSTs) is killed with SIGKILL and started again;
* or the recovery leader (the process that asked for the sending) is killed with SIGKILL and
  started again (a new replica, which takes the leadership over once the old lease lapses).

Either way the held delivery arrives again with the same ``webhook-id`` and a valid signature,
then every other event the webhook wants, in order: none lost, and the only duplicate is the
one in flight at the kill.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.databases import redis_url, xdist_worker
from tests.support.harness import create_coordinator, create_work_key, task
from tests.support.processes import (
    READY_TIMEOUT_SECONDS,
    ServiceProcess,
    free_port,
    grpc_serving,
    service_env,
    wait_ready,
)
from tests.support.webhook_receiver import Receipt, WebhookReceiver
from workcoord.api.v1 import (
    admin_pb2,
    event_pb2,
    lane_pb2,
    notification_pb2,
    work_coordinator_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.coordinator.webhooks import signing

from .harness import create_database, drop_database, migrate_database

pytestmark = [pytest.mark.e2e, pytest.mark.pg, pytest.mark.redis]

LANES_BEFORE_KILL = 4
LANES_AFTER_RESTART = 2
RECEIPT_TIMEOUT_SECONDS = 120.0


@dataclass
class Running:
    coordinator: ServiceProcess
    coordinator_address: str
    recovery: ServiceProcess
    recovery_address: str
    admin_token: str

    @property
    def processes(self) -> list[ServiceProcess]:
        return [self.coordinator, self.recovery]

    def logs(self) -> str:
        return "\n".join(p.log_tail() for p in self.processes)

    def wait_ready(self, process: ServiceProcess) -> None:
        address = self.coordinator_address if process is self.coordinator else self.recovery_address
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        wait_ready(functools.partial(grpc_serving, address), process, deadline, self.logs)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    name = f"workcoord_hookkill_{xdist_worker()}_{secrets.token_hex(4)}"
    database_url = create_database(name)
    processes: list[ServiceProcess] = []
    try:
        migrate_database(database_url)
        admin_token = "wcadm_" + secrets.token_urlsafe(32)
        service_key = "wcsvc_" + secrets.token_urlsafe(32)
        coordinator_address = f"127.0.0.1:{free_port()}"
        recovery_address = f"127.0.0.1:{free_port()}"
        common = {
            "WORKCOORD_SERVICE_KEY": service_key,
            "WORKCOORD_COORDINATOR_ADDRESS": coordinator_address,
            "WORKCOORD_LOG_LEVEL": "INFO",
        }
        coordinator = ServiceProcess(
            name="coordinator",
            args=["serve", "coordinator"],
            env=service_env(
                **common,
                DATABASE_URL=database_url,
                REDIS_URL=redis_url(),
                WORKCOORD_LISTEN_COORDINATOR=coordinator_address,
                WORKCOORD_BOOTSTRAP_ADMIN_TOKEN=admin_token,
                WORKCOORD_WEBHOOK_ALLOWED_HOSTS="127.0.0.1",
            ),
            log_path=tmp_path / "coordinator.log",
        )
        recovery = ServiceProcess(
            name="recovery",
            args=["serve", "recovery"],
            env=service_env(
                **common,
                WORKCOORD_LISTEN_RECOVERY=recovery_address,
                WORKCOORD_RECOVERY_INTERVAL_SECONDS="3600",
                # The shortest lease: a restarted replica leads again soon after a kill.
                WORKCOORD_RECOVERY_LEADERSHIP_SECONDS="3",
            ),
            log_path=tmp_path / "recovery.log",
        )
        system = Running(coordinator, coordinator_address, recovery, recovery_address, admin_token)
        processes = system.processes
        coordinator.start()
        system.wait_ready(coordinator)
        recovery.start()
        system.wait_ready(recovery)
        yield system
        exits = {p.name: p.stop() for p in reversed(processes) if p.alive()}
        assert all(code == 0 for code in exits.values()), f"{exits}\n{system.logs()}"
    finally:
        for process in processes:
            if process.alive():
                process.kill()
        drop_database(name)


async def lane_created_ids(admin: WorkcoordClient, coordinator_id: str) -> list[str]:
    """The ``webhook-id`` of every LANE_CREATED event so far, in revision order."""
    events = await admin.coordinators.ListEvents(
        work_coordinator_pb2.ListEventsRequest(coordinator_id=coordinator_id, page_size=500)
    )
    return [
        f"evt_{coordinator_id}_{event.revision}"
        for event in events.events
        if event.type == event_pb2.Event.LANE_CREATED
    ]


async def create_lanes(worker: WorkcoordClient, coordinator_id: str, count: int) -> None:
    for n in range(count):
        await worker.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=coordinator_id,
                lane=lane_pb2.Lane(
                    title=f"lane {n}", template=lane_pb2.Lane.CUSTOM, items=[task("a")]
                ),
            )
        )


def check_receipts(secret: str, receipts: list[Receipt], expected: list[str]) -> None:
    """Every receipt signed with ``secret``; every expected id delivered, in order of first
    arrival; the only duplicate is the first (in flight at the kill)."""
    ids = [signing.verify(secret, r.headers, r.body, int(time.time())) for r in receipts]
    first_seen = list(dict.fromkeys(ids))
    assert first_seen == expected, (ids, expected)
    assert ids[0] == ids[1] == expected[0], ids
    assert ids[1:] == expected, f"a duplicate other than the one in flight: {ids}"


async def deliver_across_a_kill(running: Running, victim: ServiceProcess) -> None:
    # The first POST is held unanswered (in flight); every later one is answered 200.
    async with (
        WebhookReceiver(lambda n: None if n == 0 else 200) as receiver,
        WorkcoordClient(running.coordinator_address, running.admin_token) as admin,
    ):
        await admin.admin.CreateOrg(
            admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug="hooks", display_name="Hooks"))
        )
        coordinator_id = await create_coordinator(admin, "hooks")
        created = await admin.notifications.CreateWebhook(
            notification_pb2.CreateWebhookRequest(
                coordinator_id=coordinator_id,
                webhook=notification_pb2.Webhook(url=receiver.url, event_types=["LANE_CREATED"]),
            )
        )
        secret = created.webhook.secret
        key = await create_work_key(admin, [coordinator_id])
        async with WorkcoordClient(running.coordinator_address, key.secret) as worker:
            await create_lanes(worker, coordinator_id, LANES_BEFORE_KILL)
            # In flight: the receiver has the first POST, unanswered.
            await receiver.wait_for(1, RECEIPT_TIMEOUT_SECONDS)
            before = await lane_created_ids(admin, coordinator_id)
            assert len(before) == LANES_BEFORE_KILL
            victim.kill()
            victim.start()
            running.wait_ready(victim)
            # The held delivery again, then the rest, then what is created after the restart.
            await receiver.wait_for(1 + LANES_BEFORE_KILL, RECEIPT_TIMEOUT_SECONDS)
            await create_lanes(worker, coordinator_id, LANES_AFTER_RESTART)
        expected = await lane_created_ids(admin, coordinator_id)
        assert expected[:LANES_BEFORE_KILL] == before
        assert len(expected) == LANES_BEFORE_KILL + LANES_AFTER_RESTART
        receipts = await receiver.wait_for(1 + len(expected), RECEIPT_TIMEOUT_SECONDS)
        check_receipts(secret, receipts, expected)
        # Each delivery is recorded once its answer is in: SUCCEEDED, one per event.
        request = notification_pb2.ListDeliveriesRequest(
            coordinator_id=coordinator_id, webhook_id=created.webhook.webhook_id
        )
        deadline = time.monotonic() + RECEIPT_TIMEOUT_SECONDS
        while True:
            listed = await admin.notifications.ListDeliveries(request)
            if {d.state for d in listed.deliveries} == {"SUCCEEDED"}:
                break
            assert time.monotonic() < deadline, listed
            await asyncio.sleep(0.05)
        assert sorted(d.event_id for d in listed.deliveries) == sorted(expected)
        assert len(receiver.receipts) == 1 + len(expected), "a duplicate came late"


async def test_killing_the_coordinator_mid_delivery_loses_nothing(running: Running) -> None:
    try:
        await deliver_across_a_kill(running, running.coordinator)
    except BaseException:
        print(running.logs())
        raise


async def test_killing_the_recovery_leader_mid_delivery_loses_nothing(running: Running) -> None:
    try:
        await deliver_across_a_kill(running, running.recovery)
    except BaseException:
        print(running.logs())
        raise
