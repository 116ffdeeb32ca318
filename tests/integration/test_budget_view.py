"""Budgets in the view, over gRPC on SQLite and PostgreSQL: ``GetView`` labels a queued item
behind a spent budget ``wait: budget`` (as ``why``, ``GetLane`` and ``GetItem`` do), from the
lanes' budgets and totals it reads in bulk, and shows the normal label again once the budget is
raised; a day budget lowered under what was spent relabels lanes the view already holds."""

from __future__ import annotations

from google.protobuf import field_mask_pb2

from tests.support.harness import Stack, task
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2

WC = work_coordinator_pb2
DOLLAR = 1_000_000


async def _labels(stack: Stack) -> dict[str, str]:
    """Item id -> its next-action label, as GetView shows it."""
    view = (
        await stack.admin.coordinators.GetView(WC.GetViewRequest(coordinator_id=stack.cid))
    ).view
    return {i.item_id: i.next_action for lane in view.lanes for i in lane.items}


async def _spend(stack: Stack, cost: int) -> worker_pb2.Lease:
    """Lease and start an item, report ``cost`` on a heartbeat, release it (queued again)."""
    lease = await stack.lease_and_start()
    await stack.worker.workers.Heartbeat(
        worker_pb2.HeartbeatRequest(
            coordinator_id=stack.cid,
            lease_id=lease.lease_id,
            lease_token=lease.lease_token,
            usage=lane_pb2.Usage(cost_micros=cost, model="m"),
        )
    )
    await stack.release(lease)
    return lease


async def _set_lane_budget(stack: Stack, lane_id: str, cost: int) -> None:
    await stack.admin.lanes.UpdateLane(
        lane_pb2.UpdateLaneRequest(
            coordinator_id=stack.cid,
            lane_id=lane_id,
            lane=lane_pb2.Lane(budget=lane_pb2.LaneBudget(cost_micros=cost)),
            update_mask=field_mask_pb2.FieldMask(paths=["budget"]),
        )
    )


async def _set_day_budget(stack: Stack, cost: int) -> None:
    await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=WC.WorkCoordinator(budget=lane_pb2.DayBudget(daily_cost_micros=cost)),
            update_mask=field_mask_pb2.FieldMask(paths=["budget.daily_cost_micros"]),
        )
    )


async def test_the_view_labels_an_item_behind_a_spent_lane_budget_wait_budget(
    stack: Stack,
) -> None:
    budgeted = lane_pb2.Lane(title="budgeted", template=lane_pb2.Lane.CUSTOM, items=[task("a")])
    budgeted.budget.cost_micros = DOLLAR
    lane = (
        await stack.worker.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(coordinator_id=stack.cid, lane=budgeted)
        )
    ).lane
    other = await stack.create_lane(task("b"))
    [item_id] = [i.item_id for i in lane.items]
    [other_id] = [i.item_id for i in other.items]
    before = await _labels(stack)
    ready = before[item_id]
    assert ready.startswith("lease ")

    # Spend the lane's budget on its item (the other lane's item is not leased meanwhile).
    lease = await stack.lease_and_start()
    assert lease.item.item_id == item_id
    await stack.worker.workers.Heartbeat(
        worker_pb2.HeartbeatRequest(
            coordinator_id=stack.cid,
            lease_id=lease.lease_id,
            lease_token=lease.lease_token,
            usage=lane_pb2.Usage(cost_micros=DOLLAR + 200_000, model="m"),
        )
    )
    await stack.release(lease)

    spent = await _labels(stack)
    assert spent[item_id] == "wait: budget"  # as GetItem says
    assert (await stack.get_item(lease.item)).next_action == "wait: budget"
    assert spent[other_id] == before[other_id]  # a lane without a budget: not held

    await _set_lane_budget(stack, lane.lane_id, 2 * DOLLAR)
    assert (await _labels(stack))[item_id] == ready


async def test_a_day_budget_lowered_under_the_spend_relabels_the_lanes_the_view_holds(
    stack: Stack,
) -> None:
    await stack.create_lane(task("a"))
    lease = await _spend(stack, DOLLAR)  # no budget yet: nothing stops it
    item_id = lease.item.item_id
    ready = (await _labels(stack))[item_id]
    assert ready.startswith("lease ")  # the view now holds the lane's details

    # The day budget is the coordinator's, not the lane's: the lane itself does not change.
    await _set_day_budget(stack, DOLLAR // 2)
    assert (await _labels(stack))[item_id] == "wait: budget"
    await _set_day_budget(stack, 5 * DOLLAR)
    assert (await _labels(stack))[item_id] == ready
