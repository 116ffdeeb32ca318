"""The engine's commands on the in-memory store, a manual clock and an in-process bus."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from workcoord.coordinator.checker import check_invariants
from workcoord.coordinator.domain.auth import RECOVERY, Capability
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    AddBlockerInput,
    CancelLaneInput,
    CheckpointInput,
    CompleteInput,
    CreateLaneInput,
    DecideItemInput,
    ExplainInput,
    FailInput,
    GetItemInput,
    HeartbeatInput,
    LeaseInput,
    ListEventsInput,
    ListLanesInput,
    ListWorkersInput,
    PauseLaneInput,
    ReleaseInput,
    ReportWorkerInput,
    ResolveBlockerInput,
    RunMaintenanceInput,
    StartInput,
    UpdateCoordinatorInput,
)
from workcoord.coordinator.domain.model import (
    AttemptStatus,
    DeadLetterReason,
    EventType,
    ItemState,
    LaneState,
    RetryPolicy,
    Worker,
)
from workcoord.coordinator.domain.specs import (
    Checkpoint,
    CoordinatorSpec,
    Decision,
    Evidence,
    Failure,
    GrantedLease,
    LaneDetail,
    LeaseAsk,
    RunIdentity,
)
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import (
    CoordinationDisabled,
    IllegalTransition,
    InvalidArgument,
    LeaseLost,
    NotFound,
    PermissionDenied,
)

from .harness import ADMIN, World, lane_spec, run_identity, snapshot, task, work_key

PRIVATE = "private-input-7f3a"


async def _lease(
    engine: Engine,
    world: World,
    worker_class: str = "codex",
    *,
    max_items: int = 1,
    lease_seconds: int = 60,
    worker_id: str = "w1",
    identity: RunIdentity | None = None,
    wait_seconds: int = 0,
) -> list[GrantedLease]:
    ask = LeaseAsk(worker_id, worker_class, max_items, lease_seconds, wait_seconds, identity)
    return await engine.leasing.lease(world.worker, LeaseInput(coordinator_id=world.cid, ask=ask))


async def _one(engine: Engine, world: World, **kwargs: Any) -> GrantedLease:
    granted = await _lease(engine, world, **kwargs)
    assert len(granted) == 1
    return granted[0]


async def _lane(engine: Engine, world: World, *items: Any, **kwargs: Any) -> LaneDetail:
    return await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(*items, **kwargs))
    )


async def _states(engine: Engine, world: World, lane_id: str) -> dict[str, str]:
    detail = await engine.lanes.get_lane(world.worker, world.cid, lane_id)
    return {i.key: i.state.value for i in detail.items}


async def _events(engine: Engine, world: World) -> list[EventType]:
    events = (
        await engine.reads.list_events(
            world.worker, ListEventsInput(coordinator_id=world.cid, page_size=500)
        )
    ).events
    return [e.type for e in events]


async def _clean(store: MemoryStore, world: World, *private: str) -> None:
    async with store.read() as reader:
        assert await check_invariants(reader, world.cid, private_values=private) == []


# --------------------------------------------------------------------------- lanes


async def test_create_lane_queues_roots_and_waits_dependents(
    engine: Engine, world: World, store: MemoryStore
) -> None:
    detail = await _lane(
        engine, world, task("a"), task("b", depends_on=["a"]), inputs={"secret": PRIVATE}
    )
    assert {i.key: i.state for i in detail.items} == {
        "a": ItemState.QUEUED,
        "b": ItemState.WAITING,
    }
    assert await _events(engine, world) == [
        EventType.COORDINATOR_CREATED,
        EventType.LANE_CREATED,
        EventType.ITEM_CREATED,
        EventType.ITEM_QUEUED,
        EventType.ITEM_CREATED,
    ]
    await _clean(store, world, PRIVATE)


async def test_create_lane_rejects_cycles_unknown_classes_and_standard(
    engine: Engine, world: World
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await _lane(engine, world, task("a", depends_on=["b"]), task("b", depends_on=["a"]))
    assert "cycle" in caught.value.field_violations[0].description
    with pytest.raises(InvalidArgument) as caught:
        await _lane(engine, world, task("a", worker_class="wizard"))
    assert caught.value.field_violations[0].field == "lane.items[0].worker_class"


async def test_create_lane_is_idempotent_by_request_id(engine: Engine, world: World) -> None:
    first = await engine.lanes.create_lane(
        world.worker,
        CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("a")), request_id="req-1"),
    )
    again = await engine.lanes.create_lane(
        world.worker,
        CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("a")), request_id="req-1"),
    )
    assert again.lane.lane_id == first.lane.lane_id
    page = await engine.lanes.list_lanes(
        world.worker, ListLanesInput(coordinator_id=world.cid, page_size=10)
    )
    assert len(page.items) == 1


async def test_sensitive_needs_human_and_approval_items_wait_for_a_human(
    engine: Engine, world: World, store: MemoryStore
) -> None:
    detail = await _lane(
        engine,
        world,
        task("s", title="Deploy the API to production"),
        task("h", needs_human=True),
        task("ap", requires_approval=True),
        task("cls", action_classes=["shell"]),
    )
    by_key = {i.key: i for i in detail.items}
    assert by_key["s"].state == ItemState.STOPPED
    assert by_key["s"].stop_reason == (
        'sensitive action: production deploy: "Deploy the API to production"'
    )
    assert by_key["h"].state == ItemState.STOPPED
    assert by_key["cls"].stop_reason == "action class not allowed: shell"
    assert by_key["ap"].state == ItemState.AWAITING_APPROVAL
    assert await _lease(engine, world) == []
    # A work key can never decide.
    with pytest.raises(PermissionDenied):
        await engine.lanes.decide_item(
            world.worker,
            DecideItemInput(
                coordinator_id=world.cid,
                lane_id=detail.lane.lane_id,
                item_id=by_key["ap"].item_id,
                decision=Decision.APPROVE,
            ),
        )
    approved = await engine.lanes.decide_item(
        world.org_admin,
        DecideItemInput(
            coordinator_id=world.cid,
            lane_id=detail.lane.lane_id,
            item_id=by_key["ap"].item_id,
            decision=Decision.APPROVE,
            note="ok",
        ),
    )
    assert approved.item.state == ItemState.QUEUED
    resumed = await engine.lanes.decide_item(
        world.org_admin,
        DecideItemInput(
            coordinator_id=world.cid,
            lane_id=detail.lane.lane_id,
            item_id=by_key["h"].item_id,
            decision=Decision.RESUME,
        ),
    )
    assert resumed.item.state == ItemState.QUEUED and resumed.item.stop_reason == ""
    with pytest.raises(IllegalTransition):
        await engine.lanes.decide_item(
            world.org_admin,
            DecideItemInput(
                coordinator_id=world.cid,
                lane_id=detail.lane.lane_id,
                item_id=by_key["h"].item_id,
                decision=Decision.RESUME,
            ),
        )
    await _clean(store, world)


async def test_a_resumed_sensitive_item_gets_no_automatic_retry(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    detail = await _lane(engine, world, task("s", title="deploy to production"))
    item = detail.items[0]
    await engine.lanes.decide_item(
        world.org_admin,
        DecideItemInput(
            coordinator_id=world.cid,
            lane_id=detail.lane.lane_id,
            item_id=item.item_id,
            decision=Decision.RESUME,
        ),
    )
    lease = await _one(engine, world, identity=run_identity(clock))
    await engine.attempts.fail(
        world.worker,
        FailInput(
            coordinator_id=world.cid,
            lease_id=lease.attempt.lease_id,
            lease_token=lease.lease_token,
            error=Failure(message="boom", retryable=True),
        ),
    )
    got = await engine.lanes.get_item(
        world.worker,
        GetItemInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, item_id=item.item_id),
    )
    assert got.item.state == ItemState.DEAD
    assert got.item.dead_letter_reason == DeadLetterReason.POLICY


# --------------------------------------------------------------------------- leasing


async def test_lease_start_heartbeat_complete_releases_dependents_and_finishes_the_lane(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await _lane(engine, world, task("a"), task("b", depends_on=["a"]))
    lease = await _one(engine, world, lease_seconds=30)
    assert lease.item.state == ItemState.LEASED
    assert lease.attempt.lease_expire_time == clock.now() + timedelta(seconds=30)
    assert lease.lease_token.startswith("wcl_")
    assert lease.attempt.token_hash != lease.lease_token
    lid, token = lease.attempt.lease_id, lease.lease_token
    with pytest.raises(IllegalTransition):  # complete needs RUNNING
        await engine.attempts.complete(
            world.worker,
            CompleteInput(
                coordinator_id=world.cid,
                lease_id=lid,
                lease_token=token,
                evidence=Evidence(summary="x"),
            ),
        )
    identity = run_identity(clock)
    started = await engine.attempts.start(
        world.worker,
        StartInput(
            coordinator_id=world.cid, lease_id=lid, lease_token=token, run_identity=identity
        ),
    )
    assert started.status == AttemptStatus.RUNNING
    # A retried Start with the same identity is idempotent; another identity is refused.
    await engine.attempts.start(
        world.worker,
        StartInput(
            coordinator_id=world.cid, lease_id=lid, lease_token=token, run_identity=identity
        ),
    )
    with pytest.raises(IllegalTransition):
        await engine.attempts.start(
            world.worker,
            StartInput(
                coordinator_id=world.cid,
                lease_id=lid,
                lease_token=token,
                run_identity=replace(identity, pid=1),
            ),
        )
    clock.advance(20)
    expiry = await engine.attempts.heartbeat(
        world.worker,
        HeartbeatInput(
            coordinator_id=world.cid, lease_id=lid, lease_token=token, progress="half way"
        ),
    )
    assert expiry == clock.now() + timedelta(seconds=30)
    clock.advance(20)  # past the original expiry, within the extended one
    await engine.attempts.complete(
        world.worker,
        CompleteInput(
            coordinator_id=world.cid,
            lease_id=lid,
            lease_token=token,
            evidence=Evidence(summary="done"),
        ),
    )
    assert await _states(engine, world, detail.lane.lane_id) == {"a": "SUCCEEDED", "b": "QUEUED"}
    second = await _one(engine, world, identity=run_identity(clock))
    await engine.attempts.complete(
        world.worker,
        CompleteInput(
            coordinator_id=world.cid,
            lease_id=second.attempt.lease_id,
            lease_token=second.lease_token,
            evidence=Evidence(summary="ok"),
        ),
    )
    lane = await engine.lanes.get_lane(world.worker, world.cid, detail.lane.lane_id)
    assert lane.lane.state == LaneState.DONE
    assert (await _events(engine, world))[-1] == EventType.LANE_DONE
    await _clean(store, world, token, second.lease_token)


async def test_lease_orders_by_priority_then_fifo(engine: Engine, world: World) -> None:
    await _lane(engine, world, task("low", priority=0), task("high", priority=5))
    await _lane(engine, world, task("mid", priority=1), task("low2", priority=0))
    granted = await _lease(engine, world, max_items=4)
    assert [g.item.key for g in granted] == ["high", "mid", "low", "low2"]


async def test_capacity_caps_leases_and_frees_on_completion(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await engine.coordinators.update_coordinator(
        ADMIN,
        UpdateCoordinatorInput(
            coordinator_id=world.cid,
            spec=CoordinatorSpec(
                scope=None, changes={"class_capacity": {"codex": 2, "machine": 1}}
            ),
        ),
    )
    await _lane(engine, world, *(task(f"t{i}") for i in range(4)))
    granted = await _lease(engine, world, max_items=4, identity=run_identity(clock))
    assert len(granted) == 2
    assert await _lease(engine, world, max_items=4) == []
    first = granted[0]
    await engine.attempts.complete(
        world.worker,
        CompleteInput(
            coordinator_id=world.cid,
            lease_id=first.attempt.lease_id,
            lease_token=first.lease_token,
            evidence=Evidence(summary="ok"),
        ),
    )
    assert len(await _lease(engine, world, max_items=4)) == 1
    with pytest.raises(InvalidArgument):
        await _lease(engine, world, worker_class="wizard")
    await _clean(store, world)


async def test_exclusive_keys_admit_one_holder_without_head_of_line_blocking(
    engine: Engine, world: World, store: MemoryStore
) -> None:
    await _lane(
        engine,
        world,
        task("r1", exclusive_key="repo:x", priority=3),
        task("r2", exclusive_key="repo:x", priority=2),
        task("free", priority=1),
        task("gpu", placement={"exclusive": ["gpu0"]}),
        task("gpu2", placement={"exclusive": ["gpu0"]}),
    )
    granted = await _lease(engine, world, max_items=4)
    assert [g.item.key for g in granted] == ["r1", "free", "gpu"]
    assert await _lease(engine, world, max_items=4) == []
    async with store.read() as reader:
        holders = await reader.live_exclusive_holders(world.cid, ["repo:x", "resource:gpu0"])
    assert holders == {
        "repo:x": granted[0].attempt.lease_id,
        "resource:gpu0": granted[2].attempt.lease_id,
    }
    await engine.attempts.release(
        world.worker,
        ReleaseInput(
            coordinator_id=world.cid,
            lease_id=granted[0].attempt.lease_id,
            lease_token=granted[0].lease_token,
            reason="later",
        ),
    )
    again = await _lease(engine, world, max_items=4)
    # r1 is back at the head of the queue (higher priority than r2) and takes the key again.
    assert [g.item.key for g in again] == ["r1"]
    await _clean(store, world)


async def test_placement_by_worker_and_labels(engine: Engine, world: World) -> None:
    await _lane(
        engine,
        world,
        task("pinned", placement={"worker_id": "w2"}),
        task("gpu", placement={"require_labels": {"gpu": "a100"}}),
    )
    assert await _lease(engine, world, worker_id="w1", max_items=2) == []
    await engine.leasing.report_worker(
        world.worker,
        ReportWorkerInput(
            coordinator_id=world.cid,
            worker=Worker(world.cid, "w3", "codex", ADMIN_TIME, ADMIN_TIME, labels={"gpu": "a100"}),
        ),
    )
    assert [g.item.key for g in await _lease(engine, world, worker_id="w3")] == ["gpu"]
    assert [g.item.key for g in await _lease(engine, world, worker_id="w2")] == ["pinned"]


ADMIN_TIME = ManualClock().now()


async def test_a_worker_registered_with_another_class_is_refused(
    engine: Engine, world: World
) -> None:
    await engine.leasing.report_worker(
        world.worker,
        ReportWorkerInput(
            coordinator_id=world.cid,
            worker=Worker(world.cid, "w1", "machine", ADMIN_TIME, ADMIN_TIME),
        ),
    )
    with pytest.raises(InvalidArgument):
        await _lease(engine, world, worker_id="w1", worker_class="codex")


async def test_lease_with_run_identity_starts_at_once_and_refuses_credentials(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    await _lane(engine, world, task("a"))
    with pytest.raises(InvalidArgument) as caught:
        await _lease(
            engine,
            world,
            identity=replace(run_identity(clock), account="ghp_" + "a1B2c3D4" * 5),
        )
    assert caught.value.field_violations[0].field == "run_identity.account"
    with pytest.raises(InvalidArgument):
        future = clock.now() + timedelta(minutes=5)
        await _lease(engine, world, identity=replace(run_identity(clock), started_at=future))
    lease = await _one(engine, world, identity=run_identity(clock))
    assert lease.attempt.status == AttemptStatus.RUNNING
    assert lease.item.state == ItemState.RUNNING


# --------------------------------------------------------------------------- fencing


async def test_fenced_writes_fail_the_instant_the_lease_expires_and_change_nothing(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await _lane(engine, world, task("a"))
    lease = await _one(engine, world, lease_seconds=30, identity=run_identity(clock))
    lid, token = lease.attempt.lease_id, lease.lease_token
    clock.advance(29.999)
    await engine.attempts.heartbeat(
        world.worker, HeartbeatInput(coordinator_id=world.cid, lease_id=lid, lease_token=token)
    )
    clock.advance(30)
    before = await snapshot(store, world.cid)
    writes = [
        engine.attempts.heartbeat(
            world.worker,
            HeartbeatInput(
                coordinator_id=world.cid, lease_id=lid, lease_token=token, progress="late"
            ),
        ),
        engine.attempts.complete(
            world.worker,
            CompleteInput(
                coordinator_id=world.cid,
                lease_id=lid,
                lease_token=token,
                evidence=Evidence(summary="late"),
            ),
        ),
        engine.attempts.fail(
            world.worker,
            FailInput(
                coordinator_id=world.cid,
                lease_id=lid,
                lease_token=token,
                error=Failure(message="x", retryable=True),
            ),
        ),
        engine.attempts.checkpoint(
            world.worker,
            CheckpointInput(
                coordinator_id=world.cid,
                lease_id=lid,
                lease_token=token,
                checkpoint=Checkpoint(summary="late"),
            ),
        ),
        engine.attempts.release(
            world.worker, ReleaseInput(coordinator_id=world.cid, lease_id=lid, lease_token=token)
        ),
        engine.attempts.start(
            world.worker,
            StartInput(
                coordinator_id=world.cid,
                lease_id=lid,
                lease_token=token,
                run_identity=run_identity(clock),
            ),
        ),
    ]
    for write in writes:
        with pytest.raises(LeaseLost) as caught:
            await write
        assert caught.value.cause == "expired"
    assert await snapshot(store, world.cid) == before


async def test_a_wrong_token_or_another_coordinator_is_lease_lost(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await _lane(engine, world, task("a"), task("b"))
    a, b = await _lease(engine, world, max_items=2, identity=run_identity(clock))
    before = await snapshot(store, world.cid)
    with pytest.raises(LeaseLost):
        await engine.attempts.complete(
            world.worker,
            CompleteInput(
                coordinator_id=world.cid,
                lease_id=a.attempt.lease_id,
                lease_token=b.lease_token,
                evidence=Evidence(),
            ),
        )
    with pytest.raises(LeaseLost):
        await engine.attempts.heartbeat(
            world.worker,
            HeartbeatInput(coordinator_id=world.cid, lease_id="ls_nope", lease_token=a.lease_token),
        )
    assert await snapshot(store, world.cid) == before


async def test_after_recovery_requeues_the_old_lease_is_superseded(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await _lane(engine, world, task("a"))
    old = await _one(engine, world, lease_seconds=10, identity=run_identity(clock))
    clock.advance(11)
    report = await engine.maintenance.run_maintenance(
        RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=100)
    )
    assert (report.expired_attempts, report.requeued, report.dead_lettered) == (1, 1, 0)
    clock.advance(10)  # past the 5 s backoff
    new = await _one(engine, world, identity=run_identity(clock))
    assert new.attempt.attempt == 2
    with pytest.raises(LeaseLost) as caught:
        await engine.attempts.heartbeat(
            world.worker,
            HeartbeatInput(
                coordinator_id=world.cid, lease_id=old.attempt.lease_id, lease_token=old.lease_token
            ),
        )
    assert caught.value.cause == "expired"
    await _clean(store, world, old.lease_token, new.lease_token)


# --------------------------------------------------------------------------- fail / retry


async def test_retryable_failures_back_off_then_dead_letter_when_exhausted(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await _lane(engine, world, task("a"), retry_policy=RetryPolicy(maximum_attempts=3))
    delays = []
    for _ in range(3):
        lease = await _one(engine, world, identity=run_identity(clock))
        await engine.attempts.fail(
            world.worker,
            FailInput(
                coordinator_id=world.cid,
                lease_id=lease.attempt.lease_id,
                lease_token=lease.lease_token,
                error=Failure(message="flaky", type="IOError", retryable=True),
            ),
        )
        item = (await engine.lanes.get_lane(world.worker, world.cid, detail.lane.lane_id)).items[0]
        if item.state == ItemState.QUEUED:
            assert item.not_before is not None
            delays.append((item.not_before - clock.now()).total_seconds())
            assert await _lease(engine, world) == []  # backoff gate
            clock.advance(delays[-1])
    assert delays == [5.0, 15.0]
    assert item.state == ItemState.DEAD
    assert item.dead_letter_reason == DeadLetterReason.EXHAUSTED
    assert item.attempt_count == 3
    redriven = await engine.lanes.decide_item(
        world.org_admin,
        DecideItemInput(
            coordinator_id=world.cid,
            lane_id=detail.lane.lane_id,
            item_id=item.item_id,
            decision=Decision.RETRY,
        ),
    )
    assert redriven.item.state == ItemState.QUEUED and redriven.item.attempt_count == 0
    await _clean(store, world)


async def test_a_non_retryable_failure_dead_letters_at_once(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    detail = await _lane(engine, world, task("a"))
    lease = await _one(engine, world, identity=run_identity(clock))
    await engine.attempts.fail(
        world.worker,
        FailInput(
            coordinator_id=world.cid,
            lease_id=lease.attempt.lease_id,
            lease_token=lease.lease_token,
            error=Failure(message="bad"),
        ),
    )
    item = (await engine.lanes.get_lane(world.worker, world.cid, detail.lane.lane_id)).items[0]
    assert item.dead_letter_reason == DeadLetterReason.NON_RETRYABLE


async def test_release_and_checkpoint_do_not_burn_attempts(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await _lane(engine, world, task("a"), retry_policy=RetryPolicy(maximum_attempts=1))
    for _ in range(3):
        lease = await _one(engine, world)
        await engine.attempts.release(
            world.worker,
            ReleaseInput(
                coordinator_id=world.cid,
                lease_id=lease.attempt.lease_id,
                lease_token=lease.lease_token,
                reason="busy",
            ),
        )
    body = Checkpoint(summary="half done " + PRIVATE, files_changed=("a.py",), next_action="go")
    lease = await _one(engine, world, identity=run_identity(clock))
    await engine.attempts.checkpoint(
        world.worker,
        CheckpointInput(
            coordinator_id=world.cid,
            lease_id=lease.attempt.lease_id,
            lease_token=lease.lease_token,
            checkpoint=body,
        ),
    )
    continuation = await _one(engine, world, identity=run_identity(clock))
    assert continuation.attempt.continues_lease_id == lease.attempt.lease_id
    assert continuation.checkpoint == body
    assert continuation.item.attempt_count == 1
    await engine.attempts.complete(
        world.worker,
        CompleteInput(
            coordinator_id=world.cid,
            lease_id=continuation.attempt.lease_id,
            lease_token=continuation.lease_token,
            evidence=Evidence(summary="ok"),
        ),
    )
    item = (await engine.lanes.get_lane(world.worker, world.cid, detail.lane.lane_id)).items[0]
    assert item.state == ItemState.SUCCEEDED
    # The checkpoint body never reaches an event.
    await _clean(store, world, PRIVATE)


async def test_a_blocked_checkpoint_stops_the_item(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    detail = await _lane(engine, world, task("a"))
    lease = await _one(engine, world, identity=run_identity(clock))
    with pytest.raises(InvalidArgument):
        await engine.attempts.checkpoint(
            world.worker,
            CheckpointInput(
                coordinator_id=world.cid,
                lease_id=lease.attempt.lease_id,
                lease_token=lease.lease_token,
                checkpoint=Checkpoint(blocked_reason="bored"),
            ),
        )
    await engine.attempts.checkpoint(
        world.worker,
        CheckpointInput(
            coordinator_id=world.cid,
            lease_id=lease.attempt.lease_id,
            lease_token=lease.lease_token,
            checkpoint=Checkpoint(summary="need a key", blocked_reason="secret"),
        ),
    )
    item = (await engine.lanes.get_lane(world.worker, world.cid, detail.lane.lane_id)).items[0]
    assert item.state == ItemState.STOPPED
    assert item.stop_reason == "checkpoint blocked: secret"
    assert await _lease(engine, world) == []


# --------------------------------------------------------------------------- maintenance


async def test_maintenance_expires_requeues_dead_letters_and_is_service_only(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await _lane(
        engine,
        world,
        *(task(f"t{i}") for i in range(3)),
        retry_policy=RetryPolicy(maximum_attempts=1),
    )
    await _lane(engine, world, task("again"))
    granted = await _lease(engine, world, max_items=4, lease_seconds=10)
    assert len(granted) == 4
    with pytest.raises(PermissionDenied):
        await engine.maintenance.run_maintenance(
            world.worker, RunMaintenanceInput(coordinator_id=world.cid, batch_size=10)
        )
    assert (
        await engine.maintenance.run_maintenance(
            RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=10)
        )
    ).expired_attempts == 0
    clock.advance(10)
    report = await engine.maintenance.run_maintenance(
        RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=2)
    )  # several batches
    assert (report.expired_attempts, report.requeued, report.dead_lettered) == (4, 1, 3)
    again = await engine.maintenance.run_maintenance(
        RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=2)
    )
    assert again.expired_attempts == 0
    await _clean(store, world)


async def test_maintenance_evicts_idle_workers_but_not_busy_ones(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    await _lane(engine, world, task("a"))
    await _one(engine, world, worker_id="busy", lease_seconds=300)
    await _lease(engine, world, worker_id="idle")
    clock.advance(timedelta(days=8))
    # Keep the busy worker's lease alive across the jump by not running recovery first.
    report = await engine.maintenance.run_maintenance(
        RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=10)
    )
    assert report.evicted_workers >= 1
    page = await engine.leasing.list_workers(
        world.worker, ListWorkersInput(coordinator_id=world.cid, page_size=10)
    )
    assert "idle" not in {w.worker_id for w in page.items}


async def test_switching_off_stops_work_and_maintenance(
    engine: Engine, world: World, store: MemoryStore
) -> None:
    await _lane(engine, world, task("a"))
    await engine.coordinators.update_coordinator(
        ADMIN,
        UpdateCoordinatorInput(
            coordinator_id=world.cid, spec=CoordinatorSpec(scope=None, enabled=False)
        ),
    )
    with pytest.raises(CoordinationDisabled):
        await _lease(engine, world)
    report = await engine.maintenance.run_maintenance(
        RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=10)
    )
    assert report.skipped_disabled
    item_id = await _first_item(store, world)
    # A work key learns nothing while off; a person still sees why nothing moves.
    with pytest.raises(CoordinationDisabled):
        await engine.reads.explain(
            world.worker, ExplainInput(coordinator_id=world.cid, item_id=item_id)
        )
    explanation = await engine.reads.explain(
        ADMIN, ExplainInput(coordinator_id=world.cid, item_id=item_id)
    )
    assert explanation.gates[0].gate == "DISABLED"
    await engine.coordinators.update_coordinator(
        ADMIN,
        UpdateCoordinatorInput(
            coordinator_id=world.cid, spec=CoordinatorSpec(scope=None, enabled=True)
        ),
    )
    assert len(await _lease(engine, world)) == 1


async def _first_item(store: MemoryStore, world: World) -> str:
    async with store.read() as reader:
        lanes = await reader.list_lanes(world.cid, None, None, 10)
        items = await reader.lane_items([lanes[0].lane_id])
    return items[0].item_id


# --------------------------------------------------------------------------- explain


async def test_explain_names_each_gate(engine: Engine, world: World, clock: ManualClock) -> None:
    await engine.coordinators.update_coordinator(
        ADMIN,
        UpdateCoordinatorInput(
            coordinator_id=world.cid,
            spec=CoordinatorSpec(
                scope=None, changes={"class_capacity": {"codex": 1, "machine": 1, "agent": 1}}
            ),
        ),
    )
    detail = await _lane(
        engine,
        world,
        task("holder", exclusive_key="repo:x", priority=9),
        task("excl", exclusive_key="repo:x", worker_class="machine"),
        task("dep", depends_on=["holder"]),
        task("cap"),
        task("ap", requires_approval=True),
        task("stop", needs_human=True),
        task("placed", worker_class="machine", placement={"worker_id": "w-special"}),
        task("idle", worker_class="agent"),
    )
    holder = await _one(engine, world)
    ids = {i.key: i.item_id for i in detail.items}

    async def gates(key: str) -> list[str]:
        explanation = await engine.reads.explain(
            world.worker, ExplainInput(coordinator_id=world.cid, item_id=ids[key])
        )
        return [g.gate for g in explanation.gates]

    assert await gates("holder") == []
    assert await gates("excl") == ["EXCLUSIVE"]
    assert await gates("dep") == ["DEPENDENCIES"]
    cap = await engine.reads.explain(
        world.worker, ExplainInput(coordinator_id=world.cid, item_id=ids["cap"])
    )
    assert [g.gate for g in cap.gates] == ["CAPACITY"]
    assert cap.gates[0].lease_ids == [holder.attempt.lease_id]
    assert cap.next_action == "wait: codex 1/1"
    assert await gates("ap") == ["APPROVAL"]
    assert await gates("stop") == ["STOPPED"]
    assert await gates("idle") == ["NOBODY_ASKING"]
    assert await gates("placed") == ["PLACEMENT"]
    assert await _lease(engine, world, worker_class="machine", worker_id="w-other") == []
    assert await gates("placed") == ["PLACEMENT"]
    granted = await _lease(engine, world, worker_class="machine", worker_id="w-special")
    assert [g.item.key for g in granted] == ["placed"]
    await engine.lanes.pause_lane(
        world.worker,
        PauseLaneInput(
            coordinator_id=world.cid, lane_id=detail.lane.lane_id, reason="hold on", pause=True
        ),
    )
    lane = await engine.reads.explain(
        world.worker, ExplainInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id)
    )
    assert [g.gate for g in lane.gates] == ["PAUSED"]
    assert lane.next_action == "paused"
    await engine.lanes.pause_lane(
        world.worker,
        PauseLaneInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, pause=False),
    )
    await engine.lanes.add_blocker(
        world.worker,
        AddBlockerInput(
            coordinator_id=world.cid, lane_id=detail.lane.lane_id, reason="waiting on vendor"
        ),
    )
    lane = await engine.reads.explain(
        world.worker, ExplainInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id)
    )
    assert lane.gates[0].gate == "BLOCKED" and "waiting on vendor" in lane.gates[0].detail
    with pytest.raises(InvalidArgument):
        await engine.reads.explain(world.worker, ExplainInput(coordinator_id=world.cid))
    with pytest.raises(NotFound):
        await engine.reads.explain(
            world.worker, ExplainInput(coordinator_id=world.cid, item_id="it_missing")
        )


async def test_backoff_gate(engine: Engine, world: World, clock: ManualClock) -> None:
    detail = await _lane(engine, world, task("a"))
    lease = await _one(engine, world, identity=run_identity(clock))
    await engine.attempts.fail(
        world.worker,
        FailInput(
            coordinator_id=world.cid,
            lease_id=lease.attempt.lease_id,
            lease_token=lease.lease_token,
            error=Failure(message="x", retryable=True),
        ),
    )
    explanation = await engine.reads.explain(
        world.worker, ExplainInput(coordinator_id=world.cid, item_id=detail.items[0].item_id)
    )
    assert explanation.gates[0].gate == "BACKOFF"


async def test_paused_and_blocked_lanes_are_not_leased(engine: Engine, world: World) -> None:
    detail = await _lane(engine, world, task("a"))
    await engine.lanes.pause_lane(
        world.worker,
        PauseLaneInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, pause=True),
    )
    assert await _lease(engine, world) == []
    await engine.lanes.pause_lane(
        world.worker,
        PauseLaneInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, pause=False),
    )
    blocked = await engine.lanes.add_blocker(
        world.worker,
        AddBlockerInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, reason="vendor"),
    )
    assert await _lease(engine, world) == []
    await engine.lanes.resolve_blocker(
        world.worker,
        ResolveBlockerInput(
            coordinator_id=world.cid,
            lane_id=detail.lane.lane_id,
            blocker_id=blocked.blockers[0].blocker_id,
        ),
    )
    assert len(await _lease(engine, world)) == 1


# --------------------------------------------------------------------------- cancel


async def test_cancel_lane_ends_live_attempts_and_frees_capacity(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await _lane(engine, world, task("a", exclusive_key="repo:x"), task("b"))
    lease = await _one(engine, world, identity=run_identity(clock))
    cancelled = await engine.lanes.cancel_lane(
        world.worker,
        CancelLaneInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, reason="nope"),
    )
    assert cancelled.lane.state == LaneState.CANCELLED
    assert {i.state for i in cancelled.items} == {ItemState.CANCELLED}
    with pytest.raises(LeaseLost):
        await engine.attempts.heartbeat(
            world.worker,
            HeartbeatInput(
                coordinator_id=world.cid,
                lease_id=lease.attempt.lease_id,
                lease_token=lease.lease_token,
            ),
        )
    async with store.read() as reader:
        assert await reader.live_attempts(world.cid, None) == []
        assert await reader.live_exclusive_holders(world.cid, ["repo:x"]) == {}
    # Idempotent.
    await engine.lanes.cancel_lane(
        world.worker,
        CancelLaneInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, reason="again"),
    )
    await _clean(store, world)


# --------------------------------------------------------------------------- long-poll


async def test_a_waiting_lease_wakes_when_work_arrives(engine: Engine, world: World) -> None:
    waiter = asyncio.create_task(_lease(engine, world, wait_seconds=30))
    await asyncio.sleep(0.02)  # let it subscribe and find nothing
    assert not waiter.done()
    await _lane(engine, world, task("a"))
    granted = await asyncio.wait_for(waiter, timeout=60)
    assert [g.item.key for g in granted] == ["a"]


async def test_a_waiting_lease_ignores_other_classes(engine: Engine, world: World) -> None:
    waiter = asyncio.create_task(_lease(engine, world, worker_class="machine", wait_seconds=30))
    await asyncio.sleep(0.02)
    await _lane(engine, world, task("a", worker_class="codex"))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await _lane(engine, world, task("m", worker_class="machine"))
    granted = await asyncio.wait_for(waiter, timeout=60)
    assert [g.item.key for g in granted] == ["m"]


async def test_a_long_poll_with_nothing_returns_empty_at_its_deadline(
    engine: Engine, world: World
) -> None:
    # The long-poll deadline is real time (it bounds the call): the shortest wait is 1 s.
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await asyncio.wait_for(_lease(engine, world, wait_seconds=1), timeout=5) == []
    assert 0.9 <= loop.time() - began < 3


# --------------------------------------------------------------------------- authorization


async def test_work_key_capabilities_are_enforced_by_commands(engine: Engine, world: World) -> None:
    reader_key = work_key({world.cid}, {Capability.READ})
    with pytest.raises(PermissionDenied):
        await engine.lanes.create_lane(
            reader_key, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("a")))
        )
    with pytest.raises(PermissionDenied):
        await engine.leasing.lease(
            reader_key,
            LeaseInput(coordinator_id=world.cid, ask=LeaseAsk("w1", "codex", 1, 60, 0, None)),
        )
    outsider = work_key({"wc_other"}, set(Capability))
    with pytest.raises(NotFound):
        await engine.coordinators.get_coordinator(outsider, world.cid)
