"""The engine's leases on the in-memory store, a manual clock and an in-process bus: leasing,
the fenced worker writes, retries and dead letters (lanes, recovery passes, explanations,
cancels and long-polls are in test_engine.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from workcoord.coordinator.domain.auth import RECOVERY
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    CheckpointInput,
    CompleteInput,
    DecideItemInput,
    FailInput,
    HeartbeatInput,
    ReleaseInput,
    ReportWorkerInput,
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
)
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import (
    IllegalTransition,
    InvalidArgument,
    LeaseLost,
)

from .harness import (
    ADMIN,
    PRIVATE,
    World,
    assert_clean,
    event_types,
    item_states,
    lease_items,
    lease_one,
    new_lane,
    run_identity,
    snapshot,
    task,
)

# --------------------------------------------------------------------------- leasing


async def test_lease_start_heartbeat_complete_releases_dependents_and_finishes_the_lane(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await new_lane(engine, world, task("a"), task("b", depends_on=["a"]))
    lease = await lease_one(engine, world, lease_seconds=30)
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
    assert expiry.lease_expire_time == clock.now() + timedelta(seconds=30)
    assert expiry.stop is None
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
    assert await item_states(engine, world, detail.lane.lane_id) == {
        "a": "SUCCEEDED",
        "b": "QUEUED",
    }
    second = await lease_one(engine, world, identity=run_identity(clock))
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
    assert (await event_types(engine, world))[-1] == EventType.LANE_DONE
    await assert_clean(store, world, token, second.lease_token)


async def test_lease_orders_by_priority_then_fifo(engine: Engine, world: World) -> None:
    await new_lane(engine, world, task("low", priority=0), task("high", priority=5))
    await new_lane(engine, world, task("mid", priority=1), task("low2", priority=0))
    granted = await lease_items(engine, world, max_items=4)
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
    await new_lane(engine, world, *(task(f"t{i}") for i in range(4)))
    granted = await lease_items(engine, world, max_items=4, identity=run_identity(clock))
    assert len(granted) == 2
    assert await lease_items(engine, world, max_items=4) == []
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
    assert len(await lease_items(engine, world, max_items=4)) == 1
    with pytest.raises(InvalidArgument):
        await lease_items(engine, world, worker_class="wizard")
    await assert_clean(store, world)


async def test_exclusive_keys_admit_one_holder_without_head_of_line_blocking(
    engine: Engine, world: World, store: MemoryStore
) -> None:
    await new_lane(
        engine,
        world,
        task("r1", exclusive_key="repo:x", priority=3),
        task("r2", exclusive_key="repo:x", priority=2),
        task("free", priority=1),
        task("gpu", placement={"exclusive": ["gpu0"]}),
        task("gpu2", placement={"exclusive": ["gpu0"]}),
    )
    granted = await lease_items(engine, world, max_items=4)
    assert [g.item.key for g in granted] == ["r1", "free", "gpu"]
    assert await lease_items(engine, world, max_items=4) == []
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
    again = await lease_items(engine, world, max_items=4)
    # r1 is back at the head of the queue (higher priority than r2) and takes the key again.
    assert [g.item.key for g in again] == ["r1"]
    await assert_clean(store, world)


async def test_placement_by_worker_and_labels(engine: Engine, world: World) -> None:
    await new_lane(
        engine,
        world,
        task("pinned", placement={"worker_id": "w2"}),
        task("gpu", placement={"require_labels": {"gpu": "a100"}}),
    )
    assert await lease_items(engine, world, worker_id="w1", max_items=2) == []
    await engine.workers.report_worker(
        world.worker,
        ReportWorkerInput(
            coordinator_id=world.cid,
            worker=Worker(world.cid, "w3", "codex", ADMIN_TIME, ADMIN_TIME, labels={"gpu": "a100"}),
        ),
    )
    assert [g.item.key for g in await lease_items(engine, world, worker_id="w3")] == ["gpu"]
    assert [g.item.key for g in await lease_items(engine, world, worker_id="w2")] == ["pinned"]


ADMIN_TIME = ManualClock().now()


async def test_a_worker_registered_with_another_class_is_refused(
    engine: Engine, world: World
) -> None:
    await engine.workers.report_worker(
        world.worker,
        ReportWorkerInput(
            coordinator_id=world.cid,
            worker=Worker(world.cid, "w1", "machine", ADMIN_TIME, ADMIN_TIME),
        ),
    )
    with pytest.raises(InvalidArgument):
        await lease_items(engine, world, worker_id="w1", worker_class="codex")


async def test_lease_with_run_identity_starts_at_once_and_refuses_credentials(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    await new_lane(engine, world, task("a"))
    with pytest.raises(InvalidArgument) as caught:
        await lease_items(
            engine,
            world,
            identity=replace(run_identity(clock), account="ghp_" + "a1B2c3D4" * 5),
        )
    assert caught.value.field_violations[0].field == "run_identity.account"
    with pytest.raises(InvalidArgument):
        future = clock.now() + timedelta(minutes=5)
        await lease_items(engine, world, identity=replace(run_identity(clock), started_at=future))
    lease = await lease_one(engine, world, identity=run_identity(clock))
    assert lease.attempt.status == AttemptStatus.RUNNING
    assert lease.item.state == ItemState.RUNNING


# --------------------------------------------------------------------------- fencing


async def test_fenced_writes_fail_the_instant_the_lease_expires_and_change_nothing(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    await new_lane(engine, world, task("a"))
    lease = await lease_one(engine, world, lease_seconds=30, identity=run_identity(clock))
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
    await new_lane(engine, world, task("a"), task("b"))
    a, b = await lease_items(engine, world, max_items=2, identity=run_identity(clock))
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
    await new_lane(engine, world, task("a"))
    old = await lease_one(engine, world, lease_seconds=10, identity=run_identity(clock))
    clock.advance(11)
    report = await engine.maintenance.run_maintenance(
        RECOVERY, RunMaintenanceInput(coordinator_id=world.cid, batch_size=100)
    )
    assert (report.expired_attempts, report.requeued, report.dead_lettered) == (1, 1, 0)
    clock.advance(10)  # past the 5 s backoff
    new = await lease_one(engine, world, identity=run_identity(clock))
    assert new.attempt.attempt == 2
    with pytest.raises(LeaseLost) as caught:
        await engine.attempts.heartbeat(
            world.worker,
            HeartbeatInput(
                coordinator_id=world.cid, lease_id=old.attempt.lease_id, lease_token=old.lease_token
            ),
        )
    assert caught.value.cause == "expired"
    await assert_clean(store, world, old.lease_token, new.lease_token)


# --------------------------------------------------------------------------- fail / retry


async def test_retryable_failures_back_off_then_dead_letter_when_exhausted(
    engine: Engine, world: World, clock: ManualClock, store: MemoryStore
) -> None:
    detail = await new_lane(engine, world, task("a"), retry_policy=RetryPolicy(maximum_attempts=3))
    delays = []
    for _ in range(3):
        lease = await lease_one(engine, world, identity=run_identity(clock))
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
            assert await lease_items(engine, world) == []  # backoff gate
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
    await assert_clean(store, world)


async def test_a_non_retryable_failure_dead_letters_at_once(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    detail = await new_lane(engine, world, task("a"))
    lease = await lease_one(engine, world, identity=run_identity(clock))
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
    detail = await new_lane(engine, world, task("a"), retry_policy=RetryPolicy(maximum_attempts=1))
    for _ in range(3):
        lease = await lease_one(engine, world)
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
    lease = await lease_one(engine, world, identity=run_identity(clock))
    await engine.attempts.checkpoint(
        world.worker,
        CheckpointInput(
            coordinator_id=world.cid,
            lease_id=lease.attempt.lease_id,
            lease_token=lease.lease_token,
            checkpoint=body,
        ),
    )
    continuation = await lease_one(engine, world, identity=run_identity(clock))
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
    await assert_clean(store, world, PRIVATE)


async def test_a_blocked_checkpoint_stops_the_item(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    detail = await new_lane(engine, world, task("a"))
    lease = await lease_one(engine, world, identity=run_identity(clock))
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
    assert await lease_items(engine, world) == []


async def test_a_lease_over_several_lanes_reads_their_lanes_once(
    engine: Engine, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chosen items' lanes are read in one ``get_lanes``, not one ``get_lane`` per lane,
    and every granted lease carries its own item's lane."""
    from workcoord.coordinator.storage.memory.store import MemoryTx

    first = await new_lane(engine, world, task("a"), task("b"))
    second = await new_lane(engine, world, task("c"))
    reads: list[str] = []
    for name in ("get_lane", "get_lanes"):
        real = getattr(MemoryTx, name)

        async def counted(  # type: ignore[no-untyped-def]
            self: MemoryTx, *args: object, _real: object = real, _n: str = name
        ):
            reads.append(_n)
            return await _real(self, *args)  # type: ignore[operator]

        monkeypatch.setattr(MemoryTx, name, counted)
    granted = await lease_items(engine, world, max_items=3)
    assert reads == ["get_lanes"]
    lanes = {g.item.item_id: g.lane.lane_id for g in granted}
    expected = {
        **{i.item_id: first.lane.lane_id for i in first.items},
        **{i.item_id: second.lane.lane_id for i in second.items},
    }
    assert lanes == expected


async def test_a_claim_that_filled_its_ask_lets_the_next_skip_the_look_first(
    engine: Engine, world: World, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While claims grant all they ask, the next goes straight to the write (no read
    transaction first); one that grants less ends that, and the look-first read is back."""
    await new_lane(engine, world, task("a"), task("b"), task("c"))
    reads: list[bool] = []
    real_read = store.read

    def counted_read(**kwargs: bool) -> object:
        reads.append(True)
        return real_read(**kwargs)

    monkeypatch.setattr(store, "read", counted_read)
    first = await lease_items(engine, world, max_items=2)
    assert len(first) == 2 and len(reads) == 1  # looked first
    second = await lease_items(engine, world, max_items=2)
    assert len(second) == 1 and len(reads) == 1  # straight to the write; granted less
    assert await lease_items(engine, world, max_items=2) == []
    assert len(reads) == 2  # looked first again
    leased = {g.item.item_id for g in [*first, *second]}
    assert len(leased) == 3
