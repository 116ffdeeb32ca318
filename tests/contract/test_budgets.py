"""Budgets in the store: a work coordinator's day budget and whether any lane has one, and a
lane's lifetime budget, are kept exactly through insert and update (None: no budget), and a
RAISE_BUDGET pending action is kept like any other."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.budgets import BudgetLimit
from workcoord.coordinator.domain.model import PendingAction, PendingActionState
from workcoord.coordinator.domain.ports import Store

from .records import T0, coordinator, lane, seed_coordinator, seed_lane


@pytest.mark.port("update_coordinator")
async def test_the_day_budget_and_the_lane_budgets_flag_are_kept(store: Store) -> None:
    await seed_coordinator(store, replace(coordinator(), budget=BudgetLimit(cost_micros=5)))
    async with store.write("wc_a") as tx:
        found = tx.coordinator
        assert found is not None
        assert found.budget == BudgetLimit(cost_micros=5) and not found.lane_budgets
        found.budget = BudgetLimit(tokens=7)
        found.lane_budgets = True
        await tx.update_coordinator(found)
    async with store.read() as reader:
        stored = await reader.get_coordinator("wc_a")
    assert stored is not None
    assert stored.budget == BudgetLimit(tokens=7) and stored.lane_budgets
    async with store.write("wc_a") as tx:
        assert tx.coordinator is not None
        tx.coordinator.budget = None
        await tx.update_coordinator(tx.coordinator)
    async with store.read() as reader:
        stored = await reader.get_coordinator("wc_a")
    assert stored is not None and stored.budget is None and stored.lane_budgets


@pytest.mark.port("update_lane")
async def test_a_lanes_budget_is_kept_and_removed(store: Store) -> None:
    await seed_coordinator(store)
    budgeted = replace(lane("ln_a"), budget=BudgetLimit(cost_micros=1_000_000, tokens=10**9))
    await seed_lane(store, record=budgeted)
    async with store.write("wc_a") as tx:
        [found] = await tx.get_lanes(["ln_a"])
        assert found.budget == BudgetLimit(cost_micros=1_000_000, tokens=10**9)
        found.budget = BudgetLimit(cost_micros=2_000_000)
        await tx.update_lane(found)
    async with store.read() as reader:
        stored = await reader.get_lane("ln_a")
    assert stored is not None and stored.budget == BudgetLimit(cost_micros=2_000_000)
    async with store.write("wc_a") as tx:
        stored.budget = None
        await tx.update_lane(stored)
    async with store.read() as reader:
        again = await reader.get_lane("ln_a")
    assert again is not None and again.budget is None


@pytest.mark.port("insert_pending_actions")
async def test_a_raise_budget_action_is_kept(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store)
    action = PendingAction(
        action_id="pa_budget",
        coordinator_id="wc_a",
        lane_id="ln_a",
        kind="RAISE_BUDGET",
        state=PendingActionState.OPEN,
        owner="owner@example.com",
        create_time=T0,
        update_time=T0,
        last_error="the lane's budget is spent: cost $1.20 / $1.00",
    )
    async with store.write("wc_a") as tx:
        await tx.insert_pending_actions([action])
    async with store.read() as reader:
        assert await reader.get_pending_action("pa_budget") == action
