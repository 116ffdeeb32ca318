"""Budgets' pure rules: when a lane's or a work coordinator's budget is spent, which one holds
a lane's work, the 80 % warning crossing once, and the stop message."""

from __future__ import annotations

from workcoord.coordinator.domain.budgets import (
    BudgetLimit,
    BudgetScope,
    Metric,
    Spend,
    SpentBudget,
    budget_stop_message,
    first_spent,
    spent,
    warnings_crossed,
)

DOLLAR = 1_000_000


def test_a_budget_is_spent_once_a_total_reaches_its_limit() -> None:
    limit = BudgetLimit(cost_micros=DOLLAR)
    assert spent(BudgetScope.LANE, limit, Spend(cost_micros=800_000)) is None
    reached = spent(BudgetScope.LANE, limit, Spend(cost_micros=DOLLAR))
    assert reached is not None and (reached.used, reached.limit) == (DOLLAR, DOLLAR)
    over = spent(BudgetScope.LANE, limit, Spend(cost_micros=1_200_000))
    assert over is not None and over.describe() == "the lane's budget is spent: cost $1.20 / $1.00"


def test_no_budget_or_no_limit_on_a_measure_is_never_spent() -> None:
    assert spent(BudgetScope.LANE, None, Spend(cost_micros=10**12, tokens=10**12)) is None
    tokens_only = BudgetLimit(tokens=1000)
    assert spent(BudgetScope.LANE, tokens_only, Spend(cost_micros=10**12, tokens=999)) is None
    reached = spent(BudgetScope.COORDINATOR_DAY, tokens_only, Spend(tokens=1000))
    assert reached is not None
    assert reached.describe() == (
        "the work coordinator's day budget is spent: tokens 1000 / 1000 tokens"
    )


def test_the_lanes_budget_is_named_before_the_coordinators_day() -> None:
    both = first_spent(
        BudgetLimit(cost_micros=DOLLAR),
        Spend(cost_micros=DOLLAR),
        BudgetLimit(tokens=10),
        Spend(tokens=10),
    )
    assert both is not None and both.scope is BudgetScope.LANE
    day = first_spent(
        BudgetLimit(cost_micros=DOLLAR),
        Spend(cost_micros=1),
        BudgetLimit(tokens=10),
        Spend(tokens=11),
    )
    assert day is not None and day.scope is BudgetScope.COORDINATOR_DAY
    assert first_spent(None, Spend(), None, Spend()) is None


def test_the_warning_fires_on_the_write_that_crosses_80_percent_only() -> None:
    limit = BudgetLimit(cost_micros=DOLLAR, tokens=100)
    lane = BudgetScope.LANE
    assert (
        warnings_crossed(lane, limit, Spend(cost_micros=400_000), Spend(cost_micros=799_999)) == []
    )
    crossed = warnings_crossed(lane, limit, Spend(cost_micros=400_000), Spend(cost_micros=800_000))
    assert [(w.metric, w.used) for w in crossed] == [("cost", 800_000)]
    # Already past the threshold: no second warning in the period.
    assert (
        warnings_crossed(lane, limit, Spend(cost_micros=800_000), Spend(cost_micros=900_000)) == []
    )
    both = warnings_crossed(lane, limit, Spend(), Spend(cost_micros=DOLLAR, tokens=100))
    assert [w.metric for w in both] == ["cost", "tokens"]
    assert warnings_crossed(lane, None, Spend(), Spend(cost_micros=DOLLAR)) == []


def test_the_stop_message_names_the_budget_and_what_to_do() -> None:
    message = budget_stop_message(SpentBudget(BudgetScope.LANE, Metric.COST, 1_200_000, DOLLAR))
    assert message.startswith("the lane's budget is spent: cost $1.20 / $1.00: stop now")
    assert "release the item" in message and "raises the budget" in message
