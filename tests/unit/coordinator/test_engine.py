"""The engine's commands on the in-memory store, a manual clock and an in-process bus: lanes,
decisions, recovery passes, explanations, cancels, long-polls and capabilities (leasing and the
fenced worker writes are in test_engine_leases.py)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from workcoord.coordinator.domain.auth import RECOVERY, Capability
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    AddBlockerInput,
    CancelLaneInput,
    CreateLaneInput,
    DecideItemInput,
    ExplainInput,
    FailInput,
    GetItemInput,
    HeartbeatInput,
    LeaseInput,
    ListLanesInput,
    ListWorkersInput,
    PauseLaneInput,
    ResolveBlockerInput,
    RunMaintenanceInput,
    UpdateCoordinatorInput,
)
from workcoord.coordinator.domain.model import (
    DeadLetterReason,
    EventType,
    ItemState,
    LaneState,
    RetryPolicy,
)
from workcoord.coordinator.domain.specs import (
    CoordinatorSpec,
    Decision,
    Failure,
    LeaseAsk,
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

from .harness import (
    ADMIN,
    PRIVATE,
    World,
    assert_clean,
    event_types,
    lane_spec,
    lease_items,
    lease_one,
    new_lane,
    run_identity,
    task,
    work_key,
)

# --------------------------------------------------------------------------- lanes


async def test_create_lane_queues_roots_and_waits_dependents(
    engine: Engine, world: World, store: MemoryStore
) -> None:
    detail = await new_lane(
        engine, world, task("a"), task("b", depends_on=["a"]), inputs={"secret": PRIVATE}
    )
    assert {i.key: i.state for i in detail.items} == {
        "a": ItemState.QUEUED,
        "b": ItemState.WAITING,
    }
    assert await event_types(engine, world) == [
        EventType.COORDINATOR_CREATED,
        EventType.LANE_CREATED,
        EventType.ITEM_CREATED,
        EventType.ITEM_QUEUED,
        EventType.ITEM_CREATED,
    ]
    await assert_clean(store, world, PRIVATE)


async def test_create_lane_rejects_cycles_unknown_classes_and_standard(
    engine: Engine, world: World
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await new_lane(engine, world, task("a", depends_on=["b"]), task("b", depends_on=["a"]))
    assert "cycle" in caught.value.field_violations[0].description
    with pytest.raises(InvalidArgument) as caught:
        await new_lane(engine, world, task("a", worker_class="wizard"))
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
    detail = await new_lane(
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
    assert await lease_items(engine, world) == []
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
    await assert_clean(store, world)


async def test_a_resumed_sensitive_item_gets_no_automatic_retry(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    detail = await new_lane(engine, world, task("s", title="deploy to production"))
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
    lease = await lease_one(engine, world, identity=run_identity(clock))
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


# --------------------------------------------------------------------------- maintenance


async def test_maintenance_expires_requeues_dead_letters_and_is_service_only(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await new_lane(
        engine,
        world,
        *(task(f"t{i}") for i in range(3)),
        retry_policy=RetryPolicy(maximum_attempts=1),
    )
    await new_lane(engine, world, task("again"))
    granted = await lease_items(engine, world, max_items=4, lease_seconds=10)
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
    await assert_clean(store, world)


async def test_maintenance_evicts_idle_workers_but_not_busy_ones(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    await new_lane(engine, world, task("a"))
    await lease_one(engine, world, worker_id="busy", lease_seconds=300)
    await lease_items(engine, world, worker_id="idle")
    clock.advance(timedelta(days=8))
    # Keep the busy worker's lease alive across the jump by not running recovery first.
    report = await engine.maintenance.run_maintenance(
        RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=10)
    )
    assert report.evicted_workers >= 1
    page = await engine.workers.list_workers(
        world.worker, ListWorkersInput(coordinator_id=world.cid, page_size=10)
    )
    assert "idle" not in {w.worker_id for w in page.items}


async def test_switching_off_stops_work_and_maintenance(
    engine: Engine, world: World, store: MemoryStore
) -> None:
    await new_lane(engine, world, task("a"))
    await engine.coordinators.update_coordinator(
        ADMIN,
        UpdateCoordinatorInput(
            coordinator_id=world.cid, spec=CoordinatorSpec(scope=None, enabled=False)
        ),
    )
    with pytest.raises(CoordinationDisabled):
        await lease_items(engine, world)
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
    assert len(await lease_items(engine, world)) == 1


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
    detail = await new_lane(
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
    holder = await lease_one(engine, world)
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
    assert await lease_items(engine, world, worker_class="machine", worker_id="w-other") == []
    assert await gates("placed") == ["PLACEMENT"]
    granted = await lease_items(engine, world, worker_class="machine", worker_id="w-special")
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
    detail = await new_lane(engine, world, task("a"))
    lease = await lease_one(engine, world, identity=run_identity(clock))
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
    detail = await new_lane(engine, world, task("a"))
    await engine.lanes.pause_lane(
        world.worker,
        PauseLaneInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, pause=True),
    )
    assert await lease_items(engine, world) == []
    await engine.lanes.pause_lane(
        world.worker,
        PauseLaneInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, pause=False),
    )
    blocked = await engine.lanes.add_blocker(
        world.worker,
        AddBlockerInput(coordinator_id=world.cid, lane_id=detail.lane.lane_id, reason="vendor"),
    )
    assert await lease_items(engine, world) == []
    await engine.lanes.resolve_blocker(
        world.worker,
        ResolveBlockerInput(
            coordinator_id=world.cid,
            lane_id=detail.lane.lane_id,
            blocker_id=blocked.blockers[0].blocker_id,
        ),
    )
    assert len(await lease_items(engine, world)) == 1


# --------------------------------------------------------------------------- cancel


async def test_cancel_lane_ends_live_attempts_and_frees_capacity(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await new_lane(engine, world, task("a", exclusive_key="repo:x"), task("b"))
    lease = await lease_one(engine, world, identity=run_identity(clock))
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
    await assert_clean(store, world)


# --------------------------------------------------------------------------- long-poll


async def test_a_waiting_lease_wakes_when_work_arrives(engine: Engine, world: World) -> None:
    waiter = asyncio.create_task(lease_items(engine, world, wait_seconds=30))
    await asyncio.sleep(0.02)  # let it subscribe and find nothing
    assert not waiter.done()
    await new_lane(engine, world, task("a"))
    granted = await asyncio.wait_for(waiter, timeout=60)
    assert [g.item.key for g in granted] == ["a"]


async def test_a_waiting_lease_ignores_other_classes(engine: Engine, world: World) -> None:
    waiter = asyncio.create_task(
        lease_items(engine, world, worker_class="machine", wait_seconds=30)
    )
    await asyncio.sleep(0.02)
    await new_lane(engine, world, task("a", worker_class="codex"))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await new_lane(engine, world, task("m", worker_class="machine"))
    granted = await asyncio.wait_for(waiter, timeout=60)
    assert [g.item.key for g in granted] == ["m"]


async def test_a_long_poll_with_nothing_returns_empty_at_its_deadline(
    engine: Engine, world: World
) -> None:
    # The long-poll deadline is real time (it bounds the call): the shortest wait is 1 s.
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await asyncio.wait_for(lease_items(engine, world, wait_seconds=1), timeout=5) == []
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
