"""Recovery passes through ``MaintenanceService`` with the service key, and leadership."""

from __future__ import annotations

import secrets

from tests.support.harness import Stack, expect_error, task
from workcoord.api.v1 import event_pb2, lane_pb2, maintenance_pb2
from workcoord.kit.errors import PermissionDenied

State = lane_pb2.Item.State
Status = lane_pb2.Attempt.Status


def of_type(events: list[event_pb2.Event], kind: int) -> list[event_pb2.Event]:
    return [e for e in events if e.type == kind]


async def test_expired_attempts_are_requeued_once_per_pass(stack: Stack) -> None:
    await stack.create_lane(task("a"), task("b"), task("c"))
    leases = await stack.lease(max_items=2, lease_seconds=10)
    for lease in leases:
        await stack.start(lease)
    stack.clock.advance(10)

    report = (await stack.maintain()).report
    assert (report.expired_attempts, report.requeued, report.dead_lettered) == (2, 2, 0)
    assert report.coordinator_id == stack.cid
    events = await stack.events()
    expired = of_type(events, event_pb2.Event.ATTEMPT_EXPIRED)
    assert sorted(e.lease_id for e in expired) == sorted(lease.lease_id for lease in leases)
    assert report.revision == events[-1].revision

    for lease in leases:
        item = await stack.get_item(lease.item)
        assert item.state == State.QUEUED
        assert item.attempt_count == 1
        assert item.attempts[0].status == Status.DEAD
        assert item.HasField("not_before")

    # Right after, nothing more to do: never twice.
    again = (await stack.maintain()).report
    assert (again.expired_attempts, again.requeued, again.dead_lettered) == (0, 0, 0)
    assert again.revision == report.revision
    assert len(await stack.events()) == len(events)


async def test_passes_exhaust_the_budget_exactly_at_maximum_attempts(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"))
    item = lane.items[0]
    reports = []
    for attempt in range(1, 5):
        (lease,) = await stack.lease(lease_seconds=10)
        assert lease.attempt == attempt
        await stack.start(lease)
        stack.clock.advance(10)
        report = (await stack.maintain()).report
        reports.append((report.expired_attempts, report.requeued, report.dead_lettered))
        current = await stack.get_item(item)
        assert current.attempt_count == attempt
        stack.clock.advance(400)  # past any backoff (maximum_interval 300 s)
    assert reports == [(1, 1, 0), (1, 1, 0), (1, 1, 0), (1, 0, 1)]
    final = await stack.get_item(item)
    assert final.state == State.DEAD
    assert final.dead_letter_reason == lane_pb2.Item.EXHAUSTED
    assert [a.status for a in final.attempts] == [Status.DEAD] * 4
    assert await stack.lease() == []
    assert (await stack.maintain()).report.expired_attempts == 0


async def test_a_leased_but_never_started_attempt_expires_too(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease(lease_seconds=5)
    stack.clock.advance(4)
    assert (await stack.maintain()).report.expired_attempts == 0
    stack.clock.advance(1)
    assert (await stack.maintain()).report.expired_attempts == 1
    assert (await stack.get_item(lease.item)).state == State.QUEUED


async def test_heartbeats_keep_an_attempt_out_of_recovery(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start(lease_seconds=10)
    for _ in range(5):
        stack.clock.advance(8)
        await stack.heartbeat(lease)
        assert (await stack.maintain()).report.expired_attempts == 0
    await stack.complete(lease)
    assert (await stack.get_item(lease.item)).state == State.SUCCEEDED


async def test_maintenance_needs_the_service_key(stack: Stack) -> None:
    request = maintenance_pb2.RunMaintenanceRequest(coordinator_id=stack.cid)
    await expect_error(stack.worker.maintenance.RunMaintenance(request), PermissionDenied)
    targets = await stack.service.maintenance.ListMaintenanceTargets(
        maintenance_pb2.ListMaintenanceTargetsRequest()
    )
    assert targets.platform_enabled
    assert stack.cid in {t.coordinator_id for t in targets.targets}


async def test_only_one_leadership_holder_until_expiry(stack: Stack) -> None:
    name = f"recovery-{secrets.token_hex(4)}"

    async def acquire(holder: str) -> maintenance_pb2.Leadership:
        response = await stack.service.maintenance.AcquireLeadership(
            maintenance_pb2.AcquireLeadershipRequest(name=name, holder_id=holder, lease_seconds=30)
        )
        return response.leadership

    first = await acquire("r1")
    assert (first.held, first.holder_id) == (True, "r1")
    second = await acquire("r2")
    assert (second.held, second.holder_id) == (False, "r1")
    stack.clock.advance(20)
    renewed = await acquire("r1")  # the holder renews
    assert renewed.held and renewed.holder_id == "r1"
    stack.clock.advance(20)
    assert (await acquire("r2")).holder_id == "r1"  # renewal pushed expiry out
    stack.clock.advance(11)
    taken = await acquire("r2")
    assert (taken.held, taken.holder_id) == (True, "r2")
    assert taken.term > first.term
    assert (await acquire("r1")).holder_id == "r2"

    released = await stack.service.maintenance.ReleaseLeadership(
        maintenance_pb2.ReleaseLeadershipRequest(name=name, holder_id="r2")
    )
    assert not released.leadership.held
    assert (await acquire("r1")).held

    await expect_error(
        stack.worker.maintenance.AcquireLeadership(
            maintenance_pb2.AcquireLeadershipRequest(name=name, holder_id="x", lease_seconds=30)
        ),
        PermissionDenied,
    )
