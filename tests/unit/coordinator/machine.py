"""A Hypothesis state machine driving the engine through random worker calls, clock jumps,
recovery passes and human decisions, checking the invariants after every step.

The store is a parameter (:data:`~.engine_machine.StoreFactory`): the unit suite runs it on
the in-memory store, ``tests/integration/test_properties_sql.py`` runs the same machine on
SQLite and PostgreSQL. Each machine owns an event loop (Hypothesis rules are synchronous) and
a fresh org and work coordinator (:class:`~.engine_machine.EngineMachine`), so many machines
can share one database.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.support.invariants import check_invariants
from workcoord.coordinator.domain.auth import RECOVERY
from workcoord.coordinator.domain.inputs import (
    CancelLaneInput,
    CheckpointInput,
    CompleteInput,
    CreateLaneInput,
    DecideItemInput,
    ExplainInput,
    FailInput,
    HeartbeatInput,
    LeaseInput,
    PauseLaneInput,
    ReleaseInput,
    RunMaintenanceInput,
    StartInput,
    UpdateCoordinatorInput,
)
from workcoord.coordinator.domain.model import (
    DEFAULT_CLASS_CAPACITY,
    TERMINAL_ITEM_STATES,
    EventType,
    ItemState,
    LaneState,
    RetryPolicy,
)
from workcoord.coordinator.domain.specs import (
    Checkpoint,
    CoordinatorSpec,
    Decision,
    Evidence,
    Failure,
    ItemSpec,
    LeaseAsk,
    RunIdentity,
)
from workcoord.kit.errors import IllegalTransition, LeaseLost

from .engine_machine import EngineMachine, StoreFactory
from .harness import ADMIN, lane_spec, run_identity, snapshot

CLASSES = ("codex", "machine")
PRIVATE_INPUT = "planted-input-5b1e"
PRIVATE_ITEM_INPUT = "planted-item-input-0c2d"
PRIVATE_CHECKPOINT = "planted-checkpoint-9d4f"
TITLES = ("fix flaky parser test", "update README", "refactor payload parsing")
SENSITIVE_TITLE = "deploy the api to production"
WRITES = ("start", "heartbeat", "complete", "fail", "checkpoint", "release")


@dataclass(slots=True)
class KnownLease:
    lease_id: str
    token: str
    item_id: str
    identity: RunIdentity | None = None


@dataclass(slots=True)
class Stats:
    """What the runs exercised; a test asserts the machine really reaches these paths."""

    counts: dict[str, int] = field(default_factory=dict)

    def hit(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1


STATS = Stats()

item_strategy = st.fixed_dictionaries(
    {
        "worker_class": st.sampled_from(CLASSES),
        "priority": st.integers(-1, 2),
        "exclusive_key": st.sampled_from(["", "", "repo:a", "repo:b"]),
        "resource": st.sampled_from([None, None, None, "gpu0"]),
        "kind": st.sampled_from(
            ["plain"] * 8 + ["sensitive", "needs_human", "approval", "bad_class"]
        ),
        "deps": st.sets(st.integers(0, 3), max_size=2),
    }
)


class CoordinatorMachine(EngineMachine):
    """The engine under random commands; see the module docstring."""

    def __init__(self, store_factory: StoreFactory) -> None:
        super().__init__(store_factory)
        caps = dict(self.world.coordinator.config.class_capacity)
        self.capacity_history: list[tuple[int, dict[str, int]]] = [(0, caps)]
        self.leases: dict[str, KnownLease] = {}
        self.lane_ids: list[str] = []
        self.private: set[str] = {PRIVATE_INPUT, PRIVATE_ITEM_INPUT, PRIVATE_CHECKPOINT}

    # ------------------------------------------------------------------ helpers

    async def _state_of(self, lease_id: str) -> tuple[Any, Any]:
        async with self.store.read() as reader:
            attempt = await reader.get_attempt(lease_id)
            item = await reader.get_item(attempt.item_id) if attempt else None
        return attempt, item

    def _expect_lost(self, lease_id: str) -> bool:
        attempt, item = self.run(self._state_of(lease_id))
        return (
            attempt is None
            or item is None
            or not attempt.live
            or item.current_lease_id != lease_id
            or self.clock.now() >= attempt.lease_expire_time
        )

    async def _write(self, op: str, lease: KnownLease, token: str, blocked: bool) -> Any:
        engine, principal, cid, lid = self.engine, self.world.worker, self.cid, lease.lease_id
        if op == "start":
            identity = lease.identity or run_identity(self.clock, pid=len(self.leases) + 1)
            result = await engine.attempts.start(
                principal,
                StartInput(
                    coordinator_id=cid, lease_id=lid, lease_token=token, run_identity=identity
                ),
            )
            lease.identity = identity
            return result
        if op == "heartbeat":
            return await engine.attempts.heartbeat(
                principal,
                HeartbeatInput(
                    coordinator_id=cid, lease_id=lid, lease_token=token, progress="progress"
                ),
            )
        if op == "complete":
            return await engine.attempts.complete(
                principal,
                CompleteInput(
                    coordinator_id=cid,
                    lease_id=lid,
                    lease_token=token,
                    evidence=Evidence(summary="done"),
                ),
            )
        if op == "fail":
            error = Failure(message="boom", type="E", retryable=not blocked)
            return await engine.attempts.fail(
                principal,
                FailInput(coordinator_id=cid, lease_id=lid, lease_token=token, error=error),
            )
        if op == "checkpoint":
            body = Checkpoint(
                summary=PRIVATE_CHECKPOINT,
                files_changed=("a.py",),
                blocked_reason="human" if blocked else "",
            )
            return await engine.attempts.checkpoint(
                principal,
                CheckpointInput(
                    coordinator_id=cid, lease_id=lid, lease_token=token, checkpoint=body
                ),
            )
        return await engine.attempts.release(
            principal,
            ReleaseInput(coordinator_id=cid, lease_id=lid, lease_token=token, reason="not now"),
        )

    def _spec(self, index: int, raw: dict[str, Any]) -> ItemSpec:
        kind = raw["kind"]
        placement = {"exclusive": [raw["resource"]]} if raw["resource"] else None
        return ItemSpec(
            key=f"k{index}",
            worker_class=raw["worker_class"],
            title=SENSITIVE_TITLE if kind == "sensitive" else TITLES[index % len(TITLES)],
            depends_on=sorted(f"k{d}" for d in raw["deps"] if d < index),
            inputs={"note": PRIVATE_ITEM_INPUT},
            placement=placement,
            exclusive_key=raw["exclusive_key"],
            priority=raw["priority"],
            needs_human=kind == "needs_human",
            requires_approval=kind == "approval",
            action_classes=["shell"] if kind == "bad_class" else [],
        )

    # ------------------------------------------------------------------ rules

    @precondition(lambda self: len(self.lane_ids) < 6)  # bounded: invariants read every lane
    @rule(
        items=st.lists(item_strategy, min_size=1, max_size=4),
        priority=st.integers(0, 2),
        attempts=st.integers(1, 3),
    )
    def create_lane(self, items: list[dict[str, Any]], priority: int, attempts: int) -> None:
        STATS.hit("create_lane")
        spec = lane_spec(
            *(self._spec(i, raw) for i, raw in enumerate(items)),
            priority=priority,
            inputs={"secret": PRIVATE_INPUT},
            retry_policy=RetryPolicy(maximum_attempts=attempts),
        )
        detail = self.run(
            self.engine.lanes.create_lane(
                self.world.worker, CreateLaneInput(coordinator_id=self.cid, spec=spec)
            )
        )
        self.lane_ids.append(detail.lane.lane_id)

    @initialize(items=st.lists(item_strategy, min_size=1, max_size=4), attempts=st.integers(1, 3))
    def first_lane(self, items: list[dict[str, Any]], attempts: int) -> None:
        self.create_lane(items, 0, attempts)

    @rule(
        worker_class=st.sampled_from(CLASSES),
        outcomes=st.lists(st.sampled_from(["complete", "fail", "checkpoint"]), max_size=3),
    )
    def lease_and_work(self, worker_class: str, outcomes: list[str]) -> None:
        """A well-behaved worker: lease with a run identity and finish each item at once."""
        granted = self.run(
            self.engine.leasing.lease(
                self.world.worker,
                LeaseInput(
                    coordinator_id=self.cid,
                    ask=LeaseAsk(
                        f"{worker_class}-busy",
                        worker_class,
                        max(1, len(outcomes)),
                        60,
                        0,
                        run_identity(self.clock),
                    ),
                ),
            )
        )
        for g, outcome in zip(granted, outcomes or ["complete"], strict=False):
            self.private.add(g.lease_token)
            known = KnownLease(g.attempt.lease_id, g.lease_token, g.item.item_id)
            self.leases[known.lease_id] = known
            self.run(self._write(outcome, known, g.lease_token, blocked=False))
            STATS.hit(f"worked:{outcome}")

    @rule(codex=st.integers(1, 3), machine=st.integers(1, 3))
    def set_capacity(self, codex: int, machine: int) -> None:
        caps = {**DEFAULT_CLASS_CAPACITY, "codex": codex, "machine": machine}
        updated = self.run(
            self.engine.coordinators.update_coordinator(
                ADMIN,
                UpdateCoordinatorInput(
                    coordinator_id=self.cid,
                    spec=CoordinatorSpec(scope=None, changes={"class_capacity": caps}),
                ),
            )
        )
        self.capacity_history.append((updated.revision, caps))

    @rule(
        worker_class=st.sampled_from(CLASSES),
        max_items=st.integers(1, 3),
        lease_seconds=st.sampled_from([5, 30, 120, 300]),
        with_identity=st.booleans(),
        worker_number=st.integers(1, 3),
    )
    def lease(
        self,
        worker_class: str,
        max_items: int,
        lease_seconds: int,
        with_identity: bool,
        worker_number: int,
    ) -> None:
        worker_id = f"{worker_class}-{worker_number}"  # a worker keeps its class

        async def live_count() -> tuple[int, int]:
            async with self.store.read() as reader:
                coordinator = await reader.get_coordinator(self.cid)
                assert coordinator is not None
                live = await reader.live_attempts(self.cid, worker_class)
            return len(live), coordinator.config.class_capacity[worker_class]

        used, cap = self.run(live_count())
        identity = run_identity(self.clock, pid=len(self.leases) + 1) if with_identity else None
        granted = self.run(
            self.engine.leasing.lease(
                self.world.worker,
                LeaseInput(
                    coordinator_id=self.cid,
                    ask=LeaseAsk(worker_id, worker_class, max_items, lease_seconds, 0, identity),
                ),
            )
        )
        assert len(granted) <= max(0, min(max_items, cap - used))
        for g in granted:
            assert g.attempt.worker_class == worker_class
            assert g.item.current_lease_id == g.attempt.lease_id
            self.private.add(g.lease_token)
            self.leases[g.attempt.lease_id] = KnownLease(
                g.attempt.lease_id, g.lease_token, g.item.item_id, identity
            )
        STATS.hit("granted" if granted else "lease_empty")

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data(), op=st.sampled_from(WRITES), blocked=st.booleans())
    def worker_write(self, data: st.DataObject, op: str, blocked: bool) -> None:
        lease = self.leases[data.draw(st.sampled_from(list(self.leases)), label="lease")]
        expect_lost = self._expect_lost(lease.lease_id)
        before = self.run(snapshot(self.store, self.cid))
        try:
            self.run(self._write(op, lease, lease.token, blocked))
        except LeaseLost:
            assert expect_lost, f"{op} on a live lease was refused as LEASE_LOST"
            assert self.run(snapshot(self.store, self.cid)) == before
            STATS.hit("lease_lost")
            return
        except IllegalTransition:
            # complete before start, or a second start with another identity.
            assert not expect_lost
            assert op in ("complete", "start")
            assert self.run(snapshot(self.store, self.cid)) == before
            STATS.hit("illegal")
            return
        assert not expect_lost, f"{op} on a lost lease succeeded"
        STATS.hit(f"ok:{op}")

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data(), op=st.sampled_from(WRITES), forged=st.booleans())
    def write_with_a_wrong_token(self, data: st.DataObject, op: str, forged: bool) -> None:
        lease = self.leases[data.draw(st.sampled_from(list(self.leases)), label="lease")]
        others = [k.token for k in self.leases.values() if k.lease_id != lease.lease_id]
        if forged or not others:
            token = "wcl_forged-" + lease.token[-12:]
        else:
            token = data.draw(st.sampled_from(others), label="other token")
        before = self.run(snapshot(self.store, self.cid))
        try:
            self.run(self._write(op, lease, token, False))
        except LeaseLost:
            pass
        else:
            raise AssertionError(f"{op} with a wrong token was accepted")
        assert self.run(snapshot(self.store, self.cid)) == before

    @precondition(lambda self: bool(self.leases))
    @rule(data=st.data(), op=st.sampled_from(WRITES))
    def write_after_expiry(self, data: st.DataObject, op: str) -> None:
        """Jump exactly to a live lease's expiry: every fenced write is LEASE_LOST at once."""

        async def current() -> list[str]:
            async with self.store.read() as reader:
                live = {a.lease_id for a in await reader.live_attempts(self.cid, None)}
            return [lid for lid in self.leases if lid in live]  # insertion order: replayable

        live = self.run(current())
        if not live:
            return
        lease = self.leases[data.draw(st.sampled_from(live), label="live lease")]
        attempt, _ = self.run(self._state_of(lease.lease_id))
        if attempt.lease_expire_time > self.clock.now():
            self.clock.advance(attempt.lease_expire_time - self.clock.now())
        before = self.run(snapshot(self.store, self.cid))
        try:
            self.run(self._write(op, lease, lease.token, False))
        except LeaseLost as exc:
            assert exc.cause == "expired"
        else:
            raise AssertionError(f"{op} after the lease expired was accepted")
        assert self.run(snapshot(self.store, self.cid)) == before
        STATS.hit("expired_write")

    @rule(seconds=st.sampled_from([0, 1, 4, 5, 15, 29, 30, 60, 121, 300, 400]))
    def jump(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule(batch=st.integers(1, 5), jump_first=st.sampled_from([0, 0, 301]))
    def recovery_pass(self, batch: int, jump_first: int) -> None:
        self.clock.advance(jump_first)
        before = self.run(snapshot(self.store, self.cid))["revision"]
        report = self.run(
            self.engine.maintenance.run_maintenance(
                RECOVERY, RunMaintenanceInput(coordinator_id=self.cid, batch_size=batch)
            )
        )

        async def pass_events() -> list[Any]:
            async with self.store.read() as reader:
                return await reader.list_events(self.cid, before, 100_000, "", "")

        events = self.run(pass_events())
        requeues: dict[str, int] = {}
        for e in events:
            if e.type in (EventType.RETRY_SCHEDULED, EventType.ITEM_DEAD_LETTERED):
                requeues[e.item_id] = requeues.get(e.item_id, 0) + 1
        assert all(n == 1 for n in requeues.values()), requeues
        assert report.requeued + report.dead_lettered == len(requeues)
        assert report.expired_attempts == sum(
            1 for e in events if e.type == EventType.ATTEMPT_EXPIRED
        )

        async def expired_left() -> int:
            async with self.store.read() as reader:
                live = await reader.live_attempts(self.cid, None)
            return sum(1 for a in live if a.lease_expire_time <= self.clock.now())

        assert self.run(expired_left()) == 0
        if report.expired_attempts:
            STATS.hit("expired_swept")

    @precondition(lambda self: bool(self.lane_ids))
    @rule(data=st.data(), go=st.integers(0, 3))
    def cancel_lane(self, data: st.DataObject, go: int) -> None:
        if go:  # cancel only now and then, or most items never get leased
            return
        lane_id = data.draw(st.sampled_from(self.lane_ids), label="lane")
        try:
            detail = self.run(
                self.engine.lanes.cancel_lane(
                    self.world.worker,
                    CancelLaneInput(coordinator_id=self.cid, lane_id=lane_id, reason="x"),
                )
            )
        except IllegalTransition:
            return
        assert detail.lane.state == LaneState.CANCELLED
        assert all(i.state in TERMINAL_ITEM_STATES for i in detail.items)
        STATS.hit("cancelled")

    @precondition(lambda self: bool(self.lane_ids))
    @rule(data=st.data(), pause=st.booleans())
    def pause_lane(self, data: st.DataObject, pause: bool) -> None:
        lane_id = data.draw(st.sampled_from(self.lane_ids), label="lane")
        with suppress(IllegalTransition):
            self.run(
                self.engine.lanes.pause_lane(
                    self.world.worker,
                    PauseLaneInput(coordinator_id=self.cid, lane_id=lane_id, pause=pause),
                )
            )

    @precondition(lambda self: bool(self.lane_ids))
    @rule(
        data=st.data(),
        decision=st.sampled_from(["resume", "retry", "approve", "deny", "cancel"]),
    )
    def human_decision(self, data: st.DataObject, decision: str) -> None:
        lane_id = data.draw(st.sampled_from(self.lane_ids), label="lane")
        detail = self.run(self.engine.lanes.get_lane(self.world.worker, self.cid, lane_id))
        if not detail.items:
            return
        item = data.draw(st.sampled_from(detail.items), label="item")
        needed = {
            "resume": ItemState.STOPPED,
            "retry": ItemState.DEAD,
            "approve": ItemState.AWAITING_APPROVAL,
            "deny": ItemState.AWAITING_APPROVAL,
        }.get(decision)
        lane_active = detail.lane.state == LaneState.ACTIVE
        if decision == "cancel":
            legal = item.state not in TERMINAL_ITEM_STATES or item.state == ItemState.CANCELLED
        elif decision == "deny":
            legal = item.state == needed
        else:
            legal = item.state == needed and lane_active
        before = self.run(snapshot(self.store, self.cid))
        try:
            self.run(
                self.engine.lanes.decide_item(
                    self.world.org_admin,
                    DecideItemInput(
                        coordinator_id=self.cid,
                        lane_id=lane_id,
                        item_id=item.item_id,
                        decision=Decision(decision),
                        note="note",
                    ),
                )
            )
        except IllegalTransition:
            assert not legal, f"{decision} of a {item.state.value} item was refused"
            assert self.run(snapshot(self.store, self.cid)) == before
            return
        assert legal, f"{decision} of a {item.state.value} item was accepted"
        STATS.hit(f"decided:{decision}")

    # ------------------------------------------------------------------ invariants

    @invariant()
    def stored_invariants_hold(self) -> None:
        async def check() -> list[str]:
            async with self.store.read() as reader:
                return await check_invariants(
                    reader,
                    self.cid,
                    private_values=sorted(self.private),
                    capacity_history=self.capacity_history,
                )

        violations = self.run(check())
        assert violations == [], violations

    @invariant()
    def every_open_item_is_visibly_held_or_leasable(self) -> None:
        async def check() -> list[str]:
            async with self.store.read() as reader:
                items = {i.item_id: i for i in await reader.lane_items(self.lane_ids)}
            waiting = {ItemState.LEASED, ItemState.RUNNING, *TERMINAL_ITEM_STATES}
            lanes = sorted({i.lane_id for i in items.values() if i.state not in waiting})
            problems: list[str] = []
            for lane_id in lanes:  # only lanes with items neither done nor being worked on
                explanation = await self.engine.reads.explain(
                    self.world.worker, ExplainInput(coordinator_id=self.cid, lane_id=lane_id)
                )
                for ex in explanation.items:
                    item = items[ex.item_id]
                    if item.state in waiting or ex.gates:
                        continue
                    # No gate: it must really be leasable right now.
                    claimable = (
                        item.state == ItemState.QUEUED
                        and not item.held
                        and (item.not_before is None or item.not_before <= self.clock.now())
                    )
                    if not claimable:
                        problems.append(f"{item.item_id} {item.state.value} has no gate")
            return problems

        violations = self.run(check())
        assert violations == [], violations
