"""The same flow over gRPC with :class:`WorkcoordClient`, straight to the coordinator process, and
``RecoveryService`` on the recovery process."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.support.harness import identity
from workcoord.api.v1 import (
    admin_pb2,
    lane_pb2,
    recovery_pb2,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import (
    InvalidArgument,
    LeaseLost,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    WorkcoordError,
)

from .harness import ON_THE_SYSTEM, System
from .rest import EXAMPLE_LANE

pytestmark = ON_THE_SYSTEM

_M = Any  # a generated message class (the stubs type them precisely; tests need no more)

# A failed leadership renewal is retried every 5 s; this only ends a hang.
LEADERSHIP_WAIT_SECONDS = 120.0


def parse(message: type[_M], document: dict[str, Any]) -> Any:
    """A request from its proto3 JSON form (the same shapes REST clients send)."""
    parsed = message()
    assert isinstance(parsed, Message)
    json_format.ParseDict(document, parsed)
    return parsed


@dataclass
class GrpcTenant:
    coordinator_id: str
    key_id: str
    key_secret: str
    admin: WorkcoordClient
    worker: WorkcoordClient


@pytest_asyncio.fixture
async def grpc_tenant(system: System) -> AsyncIterator[GrpcTenant]:
    """An org, an ORG work coordinator and a READ/LEASE/WRITE key, created over gRPC."""
    slug = f"grpc-{secrets.token_hex(4)}"
    admin = WorkcoordClient(
        system.coordinator_address, system.admin_token, recovery_address=system.recovery_address
    )
    try:
        await admin.admin.CreateOrg(admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=slug)))
        created = await admin.coordinators.CreateWorkCoordinator(
            parse(
                work_coordinator_pb2.CreateWorkCoordinatorRequest,
                {
                    "workCoordinator": {
                        "scope": "ORG",
                        "digestOwner": "ops@acme.test",
                        "orgSlug": slug,
                        "displayName": "grpc",
                    }
                },
            )
        )
        coordinator = created.work_coordinator
        assert coordinator.revision == 1
        assert dict(coordinator.class_capacity) == {
            "codex": 4,
            "claude": 4,
            "machine": 2,
            "agent": 4,
            "person": 1,
        }
        key = await admin.admin.CreateWorkKey(
            parse(
                admin_pb2.CreateWorkKeyRequest,
                {
                    "workKey": {
                        "displayName": "grpc-fleet",
                        "orgSlug": slug,
                        "coordinatorIds": [coordinator.coordinator_id],
                        "capabilities": ["READ", "LEASE", "WRITE"],
                    }
                },
            )
        )
        worker = WorkcoordClient(system.coordinator_address, key.secret)
        try:
            yield GrpcTenant(coordinator.coordinator_id, key.key_id, key.secret, admin, worker)
        finally:
            await worker.close()
    finally:
        await admin.close()


async def test_lease_start_complete_over_grpc(grpc_tenant: GrpcTenant) -> None:
    tenant = grpc_tenant
    client = tenant.worker
    lane = (
        await client.lanes.CreateLane(
            parse(
                lane_pb2.CreateLaneRequest,
                {"coordinatorId": tenant.coordinator_id, "lane": EXAMPLE_LANE},
            )
        )
    ).lane
    assert lane.state == lane_pb2.Lane.ACTIVE
    by_key = {item.key: item for item in lane.items}

    leased = await client.workers.Lease(
        worker_pb2.LeaseRequest(
            coordinator_id=tenant.coordinator_id,
            worker_id="grpc-machine",
            worker_class="machine",
            max_items=10,
            lease_seconds=30,
        )
    )
    assert sorted(lease.item.key for lease in leased.leases) == ["a", "b"]
    for lease in leased.leases:
        started = await client.workers.Start(
            worker_pb2.StartRequest(
                coordinator_id=tenant.coordinator_id,
                lease_id=lease.lease_id,
                lease_token=lease.lease_token,
                run_identity=identity(pid=31337),
            )
        )
        assert started.attempt.status == lane_pb2.Attempt.RUNNING
        beat = await client.workers.Heartbeat(
            worker_pb2.HeartbeatRequest(
                coordinator_id=tenant.coordinator_id,
                lease_id=lease.lease_id,
                lease_token=lease.lease_token,
                progress="half way",
            )
        )
        assert beat.lease_expire_time.ToDatetime() >= lease.lease_expire_time.ToDatetime()
        await client.workers.Complete(
            worker_pb2.CompleteRequest(
                coordinator_id=tenant.coordinator_id,
                lease_id=lease.lease_id,
                lease_token=lease.lease_token,
                evidence=lane_pb2.Evidence(summary=f"did {lease.item.key}"),
            )
        )

    # The same token again: the attempt is over (typed error, cause terminal).
    first = leased.leases[0]
    with pytest.raises(LeaseLost) as lost:
        await client.workers.Heartbeat(
            worker_pb2.HeartbeatRequest(
                coordinator_id=tenant.coordinator_id,
                lease_id=first.lease_id,
                lease_token=first.lease_token,
            )
        )
    assert lost.value.cause == "terminal"

    got = await client.lanes.GetItem(
        lane_pb2.GetItemRequest(
            coordinator_id=tenant.coordinator_id,
            lane_id=lane.lane_id,
            item_id=by_key["c"].item_id,
        )
    )
    assert got.item.state == lane_pb2.Item.QUEUED

    [person] = (
        await client.workers.Lease(
            worker_pb2.LeaseRequest(
                coordinator_id=tenant.coordinator_id,
                worker_id="grpc-person",
                worker_class="person",
                max_items=1,
                lease_seconds=30,
                run_identity=identity(pid=31337),
            )
        )
    ).leases
    assert person.status == lane_pb2.Attempt.RUNNING
    await client.workers.Complete(
        worker_pb2.CompleteRequest(
            coordinator_id=tenant.coordinator_id,
            lease_id=person.lease_id,
            lease_token=person.lease_token,
            evidence=lane_pb2.Evidence(summary="approved by a person"),
        )
    )
    done = await client.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=tenant.coordinator_id, lane_id=lane.lane_id)
    )
    assert done.lane.state == lane_pb2.Lane.DONE
    item_a = await client.lanes.GetItem(
        lane_pb2.GetItemRequest(
            coordinator_id=tenant.coordinator_id,
            lane_id=lane.lane_id,
            item_id=by_key["a"].item_id,
        )
    )
    [attempt] = item_a.item.attempts
    assert attempt.run_identity.pid == 31337
    assert attempt.principal == f"key:{tenant.key_id}"

    # Events over gRPC: gap-free from 1 to the coordinator's revision.
    events = await client.coordinators.ListEvents(
        work_coordinator_pb2.ListEventsRequest(
            coordinator_id=tenant.coordinator_id, since_revision=0, page_size=500
        )
    )
    revisions = [event.revision for event in events.events]
    assert revisions == list(range(1, len(revisions) + 1))
    assert revisions[-1] == events.revision


async def test_typed_errors_over_grpc(system: System, grpc_tenant: GrpcTenant) -> None:
    tenant = grpc_tenant
    with pytest.raises(InvalidArgument) as invalid:
        await tenant.worker.workers.Lease(
            worker_pb2.LeaseRequest(
                coordinator_id=tenant.coordinator_id,
                worker_id="grpc-machine",
                worker_class="machine",
                max_items=1,
                lease_seconds=301,
            )
        )
    assert [v.field for v in invalid.value.field_violations] == ["lease_seconds"]

    async with WorkcoordClient(system.coordinator_address, None) as anonymous:
        with pytest.raises(Unauthenticated):
            await anonymous.coordinators.GetWorkCoordinator(
                work_coordinator_pb2.GetWorkCoordinatorRequest(coordinator_id=tenant.coordinator_id)
            )
    with pytest.raises(NotFound):
        await tenant.worker.coordinators.GetWorkCoordinator(
            work_coordinator_pb2.GetWorkCoordinatorRequest(coordinator_id="wc_nosuchthing0000000")
        )


async def test_recovery_service_over_grpc(system: System, grpc_tenant: GrpcTenant) -> None:
    tenant = grpc_tenant
    await tenant.worker.lanes.CreateLane(
        parse(
            lane_pb2.CreateLaneRequest,
            {"coordinatorId": tenant.coordinator_id, "lane": EXAMPLE_LANE},
        )
    )
    leased = await tenant.worker.workers.Lease(
        worker_pb2.LeaseRequest(
            coordinator_id=tenant.coordinator_id,
            worker_id="grpc-machine",
            worker_class="machine",
            max_items=1,
            lease_seconds=5,
            run_identity=identity(pid=31337),
        )
    )
    [lease] = leased.leases
    system.advance_clock(6)

    with pytest.raises(LeaseLost) as lost:
        await tenant.worker.workers.Complete(
            worker_pb2.CompleteRequest(
                coordinator_id=tenant.coordinator_id,
                lease_id=lease.lease_id,
                lease_token=lease.lease_token,
                evidence=lane_pb2.Evidence(summary="too late"),
            )
        )
    assert lost.value.cause == "expired"

    reply = await tenant.admin.recovery.Maintain(
        recovery_pb2.MaintainRequest(coordinator_id=tenant.coordinator_id)
    )
    assert reply.report.coordinator_id == tenant.coordinator_id
    assert reply.report.expired_attempts == 1
    assert reply.report.requeued == 1
    assert reply.report.dead_lettered == 0

    # The replica leads again within one renewal period (5 s) of a failed renewal, e.g. while
    # an earlier test restarted the coordinator: wait for that, generously, not for a time.
    status = await tenant.admin.recovery.GetRecoveryStatus(recovery_pb2.GetRecoveryStatusRequest())
    deadline = asyncio.get_running_loop().time() + LEADERSHIP_WAIT_SECONDS
    while not status.status.leader and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
        status = await tenant.admin.recovery.GetRecoveryStatus(
            recovery_pb2.GetRecoveryStatusRequest()
        )
    assert status.status.leader, status.status
    assert status.status.leader_id == status.status.replica_id
    passes = {entry.coordinator_id: entry for entry in status.status.coordinators}
    assert passes[tenant.coordinator_id].report.expired_attempts == 1

    # Recovery forwards the caller's credential; the coordinator decides: a work key may not
    # run maintenance, and no credential is no credential.
    cases: tuple[tuple[str | None, type[WorkcoordError]], ...] = (
        (tenant.key_secret, PermissionDenied),
        (None, Unauthenticated),
    )
    for token, error in cases:
        async with WorkcoordClient(
            system.coordinator_address, token, recovery_address=system.recovery_address
        ) as caller:
            with pytest.raises(error):
                await caller.recovery.Maintain(
                    recovery_pb2.MaintainRequest(coordinator_id=tenant.coordinator_id)
                )
