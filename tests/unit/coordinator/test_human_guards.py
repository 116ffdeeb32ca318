"""Only a human ever decides: two independent guards, each proven to matter on its own.

1. ``authorize(work key, coordinator, Access.DECIDE)`` refuses, whatever the key's capabilities.
2. ``engine.lanes.decide_item`` / ``engine.follow_ups.resolve_pending_action`` re-check
   ``principal.is_human`` even when ``authorize`` lets everything through (monkeypatched here),
   so removing either guard fails this suite.
"""

from __future__ import annotations

import pytest

from workcoord.coordinator.domain.auth import (
    RECOVERY,
    Access,
    Capability,
    Principal,
    authorize,
)
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.engine import _base as engine_core
from workcoord.coordinator.domain.inputs import (
    CreateLaneInput,
    DecideItemInput,
    FailInput,
    LeaseInput,
    ResolvePendingActionInput,
)
from workcoord.coordinator.domain.model import (
    Coordinator,
    ItemState,
    PendingAction,
    PendingActionState,
    RetryPolicy,
)
from workcoord.coordinator.domain.specs import Decision, Failure, LeaseAsk
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import PermissionDenied

from .harness import ADMIN, World, lane_spec, run_identity, task, work_key

DECISIONS = ("approve", "deny", "resume", "retry")


def _key(coordinator: Coordinator) -> Principal:
    """A work key holding every capability there is."""
    return work_key({coordinator.coordinator_id}, set(Capability), coordinator.org_slug)


async def _targets(engine: Engine, world: World, clock: ManualClock) -> dict[str, tuple[str, str]]:
    """An item in the state each decision needs: decision → (lane id, item id)."""
    detail = await engine.lanes.create_lane(
        world.worker,
        CreateLaneInput(
            coordinator_id=world.cid,
            spec=lane_spec(
                task("approve-me", requires_approval=True),
                task("resume-me", "person", needs_human=True),
                task("retry-me", "machine", retry_policy=RetryPolicy(maximum_attempts=1)),
            ),
        ),
    )
    (granted,) = await engine.leasing.lease(
        world.worker,
        LeaseInput(
            coordinator_id=world.cid, ask=LeaseAsk("m1", "machine", 1, 30, 0, run_identity(clock))
        ),
    )
    await engine.attempts.fail(
        world.worker,
        FailInput(
            coordinator_id=world.cid,
            lease_id=granted.attempt.lease_id,
            lease_token=granted.lease_token,
            error=Failure(message="x", retryable=True),
        ),
    )
    items = {
        i.key: i for i in (await engine.lanes.get_lane(ADMIN, world.cid, detail.lane.lane_id)).items
    }
    assert items["approve-me"].state == ItemState.AWAITING_APPROVAL
    assert items["resume-me"].state == ItemState.STOPPED
    assert items["retry-me"].state == ItemState.DEAD
    lane_id = detail.lane.lane_id
    return {
        "approve": (lane_id, items["approve-me"].item_id),
        "deny": (lane_id, items["approve-me"].item_id),
        "resume": (lane_id, items["resume-me"].item_id),
        "retry": (lane_id, items["retry-me"].item_id),
    }


def test_authorize_refuses_decide_to_a_work_key_with_every_capability(world: World) -> None:
    with pytest.raises(PermissionDenied):
        authorize(_key(world.coordinator), world.coordinator, Access.DECIDE)
    with pytest.raises(PermissionDenied):
        authorize(RECOVERY, world.coordinator, Access.DECIDE)
    authorize(ADMIN, world.coordinator, Access.DECIDE)  # a human admin may


async def test_decide_item_refuses_non_humans_even_if_authorize_allowed_everything(
    engine: Engine, world: World, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets = await _targets(engine, world, clock)
    calls: list[Access] = []

    def allow_everything(principal: Principal, coordinator: Coordinator, access: Access) -> None:
        calls.append(access)

    monkeypatch.setattr(engine_core, "authorize", allow_everything)
    for principal in (_key(world.coordinator), RECOVERY):
        for decision in DECISIONS:
            lane_id, item_id = targets[decision]
            with pytest.raises(PermissionDenied, match="only a human"):
                await engine.lanes.decide_item(
                    principal,
                    DecideItemInput(
                        coordinator_id=world.cid,
                        lane_id=lane_id,
                        item_id=item_id,
                        decision=Decision(decision),
                    ),
                )
    assert Access.DECIDE in calls  # the patched authorize really was the one consulted
    items = {
        i.item_id: i.state
        for i in (await engine.lanes.get_lane(ADMIN, world.cid, targets["approve"][0])).items
    }
    assert items[targets["approve"][1]] == ItemState.AWAITING_APPROVAL
    assert items[targets["resume"][1]] == ItemState.STOPPED
    assert items[targets["retry"][1]] == ItemState.DEAD
    # The test is not vacuous: with the same patch, a human's decision goes through.
    lane_id, item_id = targets["approve"]
    detail = await engine.lanes.decide_item(
        ADMIN,
        DecideItemInput(
            coordinator_id=world.cid, lane_id=lane_id, item_id=item_id, decision=Decision.APPROVE
        ),
    )
    assert detail.item.state == ItemState.QUEUED


async def test_resolving_a_pending_action_refuses_non_humans_even_if_authorize_allowed_everything(
    engine: Engine,
    world: World,
    store: MemoryStore,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    detail = await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("a")))
    )
    action = PendingAction(
        action_id="pa_guard",
        coordinator_id=world.cid,
        lane_id=detail.lane.lane_id,
        kind="CLOSE_TICKET",
        state=PendingActionState.OPEN,
        owner="ops@acme.test",
        create_time=clock.now(),
        update_time=clock.now(),
        ticket_tracker="github",
        ticket_key="o/r#1",
        next_attempt_time=clock.now(),
    )
    async with store.write(world.cid) as tx:
        await tx.insert_pending_actions([action])
    with pytest.raises(PermissionDenied):
        await engine.follow_ups.resolve_pending_action(
            _key(world.coordinator),
            ResolvePendingActionInput(
                coordinator_id=world.cid, action_id="pa_guard", resolution="x"
            ),
        )
    monkeypatch.setattr(engine_core, "authorize", lambda *_args: None)
    for principal in (_key(world.coordinator), RECOVERY):
        with pytest.raises(PermissionDenied, match="only a human"):
            await engine.follow_ups.resolve_pending_action(
                principal,
                ResolvePendingActionInput(
                    coordinator_id=world.cid, action_id="pa_guard", resolution="x"
                ),
            )
    resolved = await engine.follow_ups.resolve_pending_action(
        ADMIN,
        ResolvePendingActionInput(
            coordinator_id=world.cid, action_id="pa_guard", resolution="by hand"
        ),
    )
    assert resolved.state == PendingActionState.RESOLVED
