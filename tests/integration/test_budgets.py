"""Budgets over gRPC, on SQLite and PostgreSQL: a lane with a 1-dollar budget whose agent
reports 0.40 $ per heartbeat is told ``stop BUDGET_EXHAUSTED`` on the third heartbeat, its item
(released, no retry burned) waits behind the ``budget`` gate in ``why``, a BUDGET_EXHAUSTED
event opens a RAISE_BUDGET pending action for the digest owner, and raising the budget lets the
next lease through (a long-polling Lease included). The work coordinator's day budget likewise;
a work key may give a new lane a budget but never change one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf import field_mask_pb2

from tests.support.harness import Stack, event_type, expect_error, task, violated_fields
from tests.support.invariants import check_invariants
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.coordinator.domain.inputs import CompleteInput
from workcoord.coordinator.domain.model import AttemptStatus
from workcoord.coordinator.domain.specs import Evidence, Usage
from workcoord.kit.errors import InvalidArgument, PermissionDenied

WC = work_coordinator_pb2
STOP = worker_pb2.Stop
DOLLAR = 1_000_000


@pytest.fixture(autouse=True)
async def _invariants_hold(stack: Stack) -> AsyncIterator[None]:
    """After every test: the stored invariants hold, (7) included: nothing of a spent budget's
    work was leased after the spend was committed."""
    yield
    async with stack.running.store.read() as reader:
        assert await check_invariants(reader, stack.cid) == []


def _fence(stack: Stack, lease: worker_pb2.Lease) -> dict[str, Any]:
    return {
        "coordinator_id": stack.cid,
        "lease_id": lease.lease_id,
        "lease_token": lease.lease_token,
    }


async def _beat(stack: Stack, lease: worker_pb2.Lease, cost: int) -> worker_pb2.HeartbeatResponse:
    return await stack.worker.workers.Heartbeat(
        worker_pb2.HeartbeatRequest(
            **_fence(stack, lease), usage=lane_pb2.Usage(cost_micros=cost, model="m")
        )
    )


async def _budget_lane(stack: Stack, cost: int) -> lane_pb2.Lane:
    """A lane of one machine item with a lifetime cost budget, created by the work key (a key
    may give a new lane a budget: it only narrows what the lane may spend)."""
    lane = lane_pb2.Lane(title="budgeted", template=lane_pb2.Lane.CUSTOM, items=[task("a")])
    lane.budget.cost_micros = cost
    response = await stack.worker.lanes.CreateLane(
        lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=lane)
    )
    return response.lane


async def _set_lane_budget(stack: Stack, lane_id: str, cost: int, client: Any = None) -> None:
    await (client or stack.admin).lanes.UpdateLane(
        lane_pb2.UpdateLaneRequest(
            coordinator_id=stack.cid,
            lane_id=lane_id,
            lane=lane_pb2.Lane(budget=lane_pb2.LaneBudget(cost_micros=cost)),
            update_mask=field_mask_pb2.FieldMask(paths=["budget"]),
        )
    )


async def _actions(stack: Stack) -> list[WC.PendingAction]:
    response = await stack.admin.coordinators.ListPendingActions(
        WC.ListPendingActionsRequest(coordinator_id=stack.cid)
    )
    return [a for a in response.pending_actions if a.kind == WC.PendingAction.RAISE_BUDGET]


async def test_a_spent_lane_budget_stops_the_attempt_and_raising_it_lets_the_next_lease_through(
    stack: Stack,
) -> None:
    lane = await _budget_lane(stack, DOLLAR)
    assert lane.budget.cost_micros == DOLLAR
    lease = await stack.lease_and_start()
    assert not (await _beat(stack, lease, 400_000)).HasField("stop")
    assert not (await _beat(stack, lease, 800_000)).HasField("stop")  # crosses 80 %
    third = await _beat(stack, lease, 1_200_000)
    assert third.stop.reason == STOP.BUDGET_EXHAUSTED
    assert "the lane's budget is spent: cost $1.20 / $1.00" in third.stop.message

    events = await stack.events()
    types = [event_type(e) for e in events]
    assert types.count("BUDGET_WARNING") == 1 and types.count("BUDGET_EXHAUSTED") == 1
    assert types.index("BUDGET_WARNING") < types.index("BUDGET_EXHAUSTED")
    exhausted = next(e for e in events if event_type(e) == "BUDGET_EXHAUSTED")
    data = json.loads(json.dumps(dict(exhausted.data)))
    assert exhausted.lane_id == lane.lane_id
    assert data["scope"] == "lane" and data["metric"] == "cost"
    [action] = await _actions(stack)
    assert action.action_id == data["actionId"] and action.lane_id == lane.lane_id
    assert action.state == WC.PendingAction.OPEN and action.owner

    # The worker releases (as `worker run` does on a stop): no retry burned.
    released = await stack.release(lease)
    assert released.status == lane_pb2.Attempt.RELEASED and not released.counted
    item = await stack.get_item(lease.item)
    assert item.state == lane_pb2.Item.QUEUED and item.attempt_count == 0
    assert item.next_action == "wait: budget"  # the label reads the gate too
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    assert got.lane.items[0].next_action == "wait: budget"

    # Held by the budget gate: no lease, and why says which budget, used / limit.
    assert await stack.lease() == []
    why = await stack.explain(lease.item.item_id)
    [gate] = [g for g in why.gates if g.gate == WC.Gate.BUDGET]
    assert "the lane's budget is spent: cost $1.20 / $1.00" in gate.detail

    # A work key may not raise (or remove) it: PERMISSION_DENIED naming the field.
    error = await expect_error(
        _set_lane_budget(stack, lane.lane_id, 2 * DOLLAR, stack.worker), PermissionDenied
    )
    assert "lane.budget" in str(error)

    # A human raises it: a long-polling Lease gets the item, the action is resolved.
    waiting = asyncio.ensure_future(stack.lease(worker_id="machine-9", wait_seconds=30))
    await stack.until_asked("machine-9", waiting)
    await _set_lane_budget(stack, lane.lane_id, 2 * DOLLAR)
    async with asyncio.timeout(30):
        [again] = await waiting
    assert again.item.item_id == lease.item.item_id
    [action] = await _actions(stack)
    assert action.state == WC.PendingAction.RESOLVED
    updated = [e for e in await stack.events() if event_type(e) == "LANE_UPDATED"]
    assert updated and updated[-1].actor  # the human is the actor


async def test_lowering_a_budget_to_what_was_spent_behaves_as_spent(stack: Stack) -> None:
    lane = await _budget_lane(stack, 10 * DOLLAR)
    lease = await stack.lease_and_start()
    assert not (await _beat(stack, lease, 500_000)).HasField("stop")
    await _set_lane_budget(stack, lane.lane_id, 500_000)
    assert "BUDGET_EXHAUSTED" in [event_type(e) for e in await stack.events()]
    answer = await _beat(stack, lease, 500_000)
    assert answer.stop.reason == STOP.BUDGET_EXHAUSTED
    assert len(await _actions(stack)) == 1


async def test_the_day_budget_holds_all_work_and_get_budget_reads_used_and_left(
    stack: Stack,
) -> None:
    await stack.create_lane(task("a"), task("b"))
    updated = await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(
                budget=lane_pb2.DayBudget(daily_cost_micros=DOLLAR)
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["budget.daily_cost_micros"]),
        )
    )
    assert updated.work_coordinator.budget.daily_cost_micros == DOLLAR
    assert not updated.work_coordinator.budget.HasField("daily_tokens")
    lease = await stack.lease_and_start()
    answer = await _beat(stack, lease, DOLLAR)
    assert answer.stop.reason == STOP.BUDGET_EXHAUSTED
    assert "work coordinator's day budget is spent" in answer.stop.message
    assert await stack.lease() == []  # the other item waits too
    # The day budget's action belongs to no lane: the reads that list actions still answer.
    [action] = await _actions(stack)
    assert action.lane_id == ""
    today = stack.clock.now().date().isoformat()
    digest = await stack.admin.coordinators.GetDigest(
        WC.GetDigestRequest(coordinator_id=stack.cid, day=today)
    )
    assert digest.digest.day == today
    await stack.admin.coordinators.GetView(WC.GetViewRequest(coordinator_id=stack.cid))

    budget = await stack.worker.coordinators.GetBudget(
        WC.GetBudgetRequest(coordinator_id=stack.cid, lane_id=lease.item.lane_id)
    )
    day = budget.work_coordinator
    assert day.spent and day.cost_used_micros == DOLLAR and day.cost_left_micros == 0
    assert day.cost_limit_micros == DOLLAR and not day.HasField("token_limit")
    assert budget.lane.scope == "lane" and not budget.lane.spent
    assert not budget.lane.HasField("cost_limit_micros")

    # A work key may not set it; a human removes it and the other item is leased.
    error = await expect_error(
        stack.worker.coordinators.UpdateWorkCoordinator(
            WC.UpdateWorkCoordinatorRequest(
                coordinator_id=stack.cid,
                work_coordinator=WC.WorkCoordinator(),
                update_mask=field_mask_pb2.FieldMask(paths=["budget"]),
            )
        ),
        PermissionDenied,
    )
    assert error is not None
    await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(),
            update_mask=field_mask_pb2.FieldMask(paths=["budget"]),
        )
    )
    assert len(await stack.lease(worker_id="machine-2")) == 1


async def test_leases_racing_the_spend_never_take_a_spent_budgets_work(stack: Stack) -> None:
    """Heartbeats that spend the lane's budget and claims of its other items, concurrently:
    whichever commits first, no claim after the spend's commit grants its work (invariant 7,
    checked after the test)."""
    lane = lane_pb2.Lane(
        title="race", template=lane_pb2.Lane.CUSTOM, items=[task(f"i{n}") for n in range(8)]
    )
    lane.budget.cost_micros = DOLLAR
    await stack.worker.lanes.CreateLane(
        lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=lane)
    )
    first = await stack.lease_and_start(worker_id="machine-0")

    async def spend() -> None:
        for cost in range(200_000, 1_400_001, 200_000):
            await _beat(stack, first, cost)

    async def claim(n: int) -> int:
        granted = 0
        for _ in range(4):
            granted += len(await stack.lease(worker_id=f"machine-{n}"))
        return granted

    results = await asyncio.gather(spend(), *(claim(n) for n in range(1, 4)))
    assert sum(r for r in results if isinstance(r, int)) <= 1  # capacity 2: one more at most
    answer = await _beat(stack, first, 1_400_000)
    assert answer.stop.reason == STOP.BUDGET_EXHAUSTED
    assert await stack.lease(worker_id="machine-9") == []


async def test_a_stopped_attempt_that_never_comes_back_ends_released_by_recovery(
    stack: Stack,
) -> None:
    await _budget_lane(stack, DOLLAR)
    lease = await stack.lease_and_start(lease_seconds=30)
    stopped = await _beat(stack, lease, DOLLAR)
    assert stopped.stop.reason == STOP.BUDGET_EXHAUSTED
    stack.clock.advance(31)  # the worker never releases: its lease runs out
    report = await stack.maintain()
    assert report.report.expired_attempts == 1
    item = await stack.get_item(lease.item)
    assert item.state == lane_pb2.Item.QUEUED and item.attempt_count == 0
    assert not item.HasField("not_before")  # no backoff: it waits behind the budget gate
    [ended] = item.attempts
    assert ended.status == lane_pb2.Attempt.RELEASED and not ended.counted
    assert await stack.lease() == []


async def test_a_batched_heartbeat_and_a_complete_count_the_spend_too(stack: Stack) -> None:
    """Two attempts of one budgeted lane, heartbeated in one BatchHeartbeat: the spend of both
    entries is counted together (0.60 $ + 0.60 $ spends the dollar), each entry keeps its own
    stop; a Complete that carries the final usage raises no second exhaustion."""
    lane = lane_pb2.Lane(title="batch", template=lane_pb2.Lane.CUSTOM, items=[task("a"), task("b")])
    lane.budget.cost_micros = DOLLAR
    await stack.worker.lanes.CreateLane(
        lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=lane)
    )
    one, two = await stack.lease(max_items=2)
    for lease in (one, two):
        await stack.start(lease)
    answer = await stack.worker.workers.BatchHeartbeat(
        worker_pb2.BatchHeartbeatRequest(
            coordinator_id=stack.cid,
            requests=[
                worker_pb2.HeartbeatRequest(
                    **_fence(stack, lease), usage=lane_pb2.Usage(cost_micros=600_000)
                )
                for lease in (one, two)
            ],
        )
    )
    first, second = answer.results
    assert not first.HasField("stop")  # 0.60 $: the warning, not yet spent
    assert second.stop.reason == STOP.BUDGET_EXHAUSTED  # 1.20 $
    types = [event_type(e) for e in await stack.events()]
    assert types.count("BUDGET_WARNING") == 1 and types.count("BUDGET_EXHAUSTED") == 1
    done = await stack.worker.workers.Complete(
        worker_pb2.CompleteRequest(
            **_fence(stack, one),
            evidence=lane_pb2.Evidence(summary="ok"),
            usage=lane_pb2.Usage(cost_micros=700_000),
        )
    )
    assert done.attempt.status == lane_pb2.Attempt.COMPLETED
    types = [event_type(e) for e in await stack.events()]
    assert types.count("BUDGET_EXHAUSTED") == 1
    budget = await stack.worker.coordinators.GetBudget(
        WC.GetBudgetRequest(coordinator_id=stack.cid, lane_id=one.item.lane_id)
    )
    assert budget.lane.cost_used_micros == 1_300_000 and budget.lane.spent


async def test_a_complete_that_spends_the_budget_raises_the_exhaustion(stack: Stack) -> None:
    await _budget_lane(stack, DOLLAR)
    lease = await stack.lease_and_start()
    await stack.worker.workers.Complete(
        worker_pb2.CompleteRequest(
            **_fence(stack, lease),
            evidence=lane_pb2.Evidence(summary="ok"),
            usage=lane_pb2.Usage(cost_micros=DOLLAR),
        )
    )
    types = [event_type(e) for e in await stack.events()]
    assert "BUDGET_WARNING" in types and "BUDGET_EXHAUSTED" in types
    assert len(await _actions(stack)) == 1


async def test_a_bad_budget_is_an_invalid_argument_naming_the_field(stack: Stack) -> None:
    lane = lane_pb2.Lane(title="bad", template=lane_pb2.Lane.CUSTOM, items=[task("a")])
    lane.budget.cost_micros = -1
    error = await expect_error(
        stack.worker.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=lane)
        ),
        InvalidArgument,
    )
    assert violated_fields(error) == {"lane.budget.cost_micros"}
    error = await expect_error(
        stack.admin.coordinators.UpdateWorkCoordinator(
            WC.UpdateWorkCoordinatorRequest(
                coordinator_id=stack.cid,
                work_coordinator=WC.WorkCoordinator(budget=lane_pb2.DayBudget(daily_tokens=10**13)),
                update_mask=field_mask_pb2.FieldMask(paths=["budget.daily_tokens"]),
            )
        ),
        InvalidArgument,
    )
    assert violated_fields(error) == {"work_coordinator.budget.daily_tokens"}
    lanes = await stack.admin.lanes.ListLanes(lane_pb2.ListLanesRequest(coordinator_id=stack.cid))
    assert list(lanes.lanes) == []  # nothing was written


async def test_members_of_one_group_commit_count_each_others_spend(stack: Stack) -> None:
    """Two Completes of one budgeted lane in one group commit: the roll-ups are added once,
    after both members (docs/architecture.md, "Lock order"), yet the second member's budget
    read counts the first's 0.60 $: 1.20 $ spends the dollar, raising one warning and one
    exhaustion."""
    lane = lane_pb2.Lane(title="group", template=lane_pb2.Lane.CUSTOM, items=[task("a"), task("b")])
    lane.budget.cost_micros = DOLLAR
    await stack.worker.lanes.CreateLane(
        lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=lane)
    )
    one, two = await stack.lease(max_items=2)
    for lease in (one, two):
        await stack.start(lease)
    engine = stack.running.engine
    principal = await engine.credentials.authenticate(stack.key_secret)

    def complete(lease: worker_pb2.Lease) -> CompleteInput:
        spent = Usage(cost_micros=600_000)
        return CompleteInput(**_fence(stack, lease), evidence=Evidence(summary="ok"), usage=spent)

    # Started in one step of the event loop: the second joins the group the first opened.
    done = [
        asyncio.create_task(engine.attempts.complete(principal, complete(lease)))
        for lease in (one, two)
    ]
    assert {a.status for a in await asyncio.gather(*done)} == {AttemptStatus.COMPLETED}
    types = [event_type(e) for e in await stack.events()]
    assert types.count("BUDGET_WARNING") == 1 and types.count("BUDGET_EXHAUSTED") == 1
    budget = await stack.worker.coordinators.GetBudget(
        WC.GetBudgetRequest(coordinator_id=stack.cid, lane_id=one.item.lane_id)
    )
    assert budget.lane.cost_used_micros == 1_200_000 and budget.lane.spent
