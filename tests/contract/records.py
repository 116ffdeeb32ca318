"""Records for the contract cases: every field set to something other than its default, so a
field a store forgets to keep shows up as a difference."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from workcoord.coordinator.domain.grants import GrantPermission, GrantRecord
from workcoord.coordinator.domain.model import (
    Attempt,
    AttemptStatus,
    Coordinator,
    CoordinatorConfig,
    DeadLetterReason,
    Item,
    ItemKind,
    ItemState,
    Lane,
    LaneState,
    NewEvent,
    OnPass,
    RetryPolicy,
    ReviewPolicy,
    Scope,
    Template,
    Worker,
)
from workcoord.coordinator.domain.ports import Store, UserRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """``seconds`` after :data:`T0`."""
    return T0 + timedelta(seconds=seconds)


def coordinator(coordinator_id: str = "wc_a", org_slug: str = "acme") -> Coordinator:
    return Coordinator(
        coordinator_id=coordinator_id,
        scope=Scope.ORG,
        org_slug=org_slug,
        display_name=f"Coordinator {coordinator_id}",
        enabled=True,
        revision=0,
        config=CoordinatorConfig(
            class_capacity={"codex": 3, "person": 1},
            retry_policy=RetryPolicy(initial_interval=2.5, maximum_attempts=7),
            review_policy=ReviewPolicy(on_pass=OnPass.INTEGRATE_THEN_SHIP),
            allowed_action_classes=("repo_edit", "local_checks"),
            digest_owner="ops@acme.test",
            escalate_after_seconds=90.0,
            parent_coordinator_id="wc_parent",
            max_run_seconds={"codex": 5400, "machine": 600},
        ),
        config_version=3,
        create_time=at(1),
        update_time=at(2),
    )


def lane(
    lane_id: str,
    coordinator_id: str = "wc_a",
    *,
    create_time: datetime = T0,
    state: LaneState = LaneState.ACTIVE,
    request_id: str = "",
) -> Lane:
    return Lane(
        lane_id=lane_id,
        coordinator_id=coordinator_id,
        title=f"Lane {lane_id}",
        template=Template.STANDARD,
        priority=4,
        inputs={"repo": "acme/parser", "depth": 2},
        state=state,
        paused=True,
        create_time=create_time,
        update_time=create_time + timedelta(seconds=5),
        worker_classes={"build": "codex", "review": "person"},
        retry_policy=RetryPolicy(backoff_coefficient=1.5),
        review_policy=ReviewPolicy(max_fail_rounds=3, ship_requires_approval=False),
        placement={"resources": ["gpu:0"]},
        brief="make it faster",
        fail_rounds=1,
        close_reason="",
        receipt={"environment": "prod"},
        paused_time=create_time + timedelta(seconds=3),
        request_id=request_id,
        version=2,
    )


def item(
    item_id: str,
    lane_id: str,
    *,
    key: str = "",
    coordinator_id: str = "wc_a",
    seq: int = 1,
    priority: int = 0,
    state: ItemState = ItemState.QUEUED,
    worker_class: str = "codex",
    held: bool = False,
    not_before: datetime | None = None,
    ready_time: datetime | None = T0,
) -> Item:
    return Item(
        item_id=item_id,
        coordinator_id=coordinator_id,
        lane_id=lane_id,
        key=key or item_id,
        kind=ItemKind.TASK,
        worker_class=worker_class,
        state=state,
        create_time=T0,
        update_time=at(1),
        title=f"Item {item_id}",
        brief="do it",
        depends_on=["x", "y"],
        inputs={"n": 1},
        placement={"resources": ["disk"]},
        exclusive_key="",
        priority=priority,
        retry_policy=RetryPolicy(maximum_interval=60.0),
        action_classes=["repo_edit"],
        needs_human=True,
        requires_approval=True,
        attempt_count=2,
        attempt_seq=3,
        not_before=not_before,
        dead_letter_reason=DeadLetterReason.POLICY,
        stop_reason="paused by ops",
        sensitive=True,
        evidence={"summary": "ok"},
        last_error={"message": "boom", "retryable": True},
        current_lease_id="ls_prev",
        continues_lease_id="ls_older",
        ready_time=ready_time,
        held=held,
        seq=seq,
        max_run_seconds=5400,
    )


def attempt(
    lease_id: str,
    work: Item,
    *,
    status: AttemptStatus = AttemptStatus.LEASED,
    create_time: datetime = T0,
    expire_time: datetime = T0 + timedelta(seconds=60),
    worker_id: str = "w1",
    exclusive_key: str = "",
) -> Attempt:
    return Attempt(
        lease_id=lease_id,
        coordinator_id=work.coordinator_id,
        item_id=work.item_id,
        lane_id=work.lane_id,
        attempt=1,
        status=status,
        token_hash="a" * 64,
        worker_id=worker_id,
        worker_class=work.worker_class,
        principal="key_fleet",
        lease_seconds=60,
        lease_expire_time=expire_time,
        create_time=create_time,
        start_time=create_time + timedelta(seconds=1),
        end_time=None,
        run_identity={"pid": 42, "engine": "codex"},
        progress="tests 40/120",
        error=None,
        continues_lease_id="",
        counted=False,
        exclusive_key=exclusive_key,
        checkpoint={"summary": "half way"},
        deadline_time=create_time + timedelta(hours=2),
    )


def worker(worker_id: str, coordinator_id: str = "wc_a", *, observed: datetime = T0) -> Worker:
    return Worker(
        coordinator_id=coordinator_id,
        worker_id=worker_id,
        worker_class="machine",
        create_time=T0,
        observe_time=observed,
        principal="key_fleet",
        capabilities=["docker"],
        toolchains={"python": "3.11"},
        labels={"zone": "eu"},
        cpu_count=8,
        memory_bytes=16 << 30,
        disk_bytes=1 << 40,
        last_ask_time=None,
    )


def user(user_id: str, email: str = "") -> UserRecord:
    return UserRecord(user_id, email or f"{user_id}@acme.test", f"User {user_id}", False, True, T0)


def grant(
    grant_id: str,
    *,
    child: str = "wc_a",
    parent: str = "wc_parent",
    request_id: str = "",
    revoke_time: datetime | None = None,
) -> GrantRecord:
    return GrantRecord(
        grant_id=grant_id,
        coordinator_id=child,
        parent_coordinator_id=parent,
        permissions=(GrantPermission.SUMMARY, GrantPermission.ESCALATE),
        expire_time=at(3600),
        create_time=T0,
        created_by="usr_admin",
        request_id=request_id,
        revoke_time=revoke_time,
    )


async def seed_coordinator(store: Store, record: Coordinator | None = None) -> Coordinator:
    """Store a work coordinator (``coordinator()`` by default) and return it."""
    record = record or coordinator()
    async with store.write() as tx:
        await tx.insert_coordinator(replace(record), "")
    return record


async def seed_lane(store: Store, *items: Item, record: Lane | None = None) -> Lane:
    """Store a lane of the seeded coordinator with ``items``."""
    record = record or lane("ln_a")
    async with store.write(record.coordinator_id) as tx:
        await tx.insert_lane(replace(record))
        await tx.insert_items([replace(i) for i in items])
    return record


async def seed_leased(store: Store, work: Item, lease_id: str, expire_time: datetime) -> None:
    """Store the seeded coordinator, a lane holding ``work`` and a live attempt on it."""
    await seed_coordinator(store)
    await seed_lane(store, work)
    async with store.write(work.coordinator_id) as tx:
        await tx.insert_attempts([attempt(lease_id, work, expire_time=expire_time)])


async def seed_events(store: Store, coordinator_id: str, events: list[NewEvent]) -> None:
    """Append ``events`` to a seeded work coordinator's log (actor ``x``)."""
    async with store.write(coordinator_id) as tx:
        assert tx.coordinator is not None
        await tx.append(tx.coordinator, events, "x")
