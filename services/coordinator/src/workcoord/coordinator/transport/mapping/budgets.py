"""Budgets: a lane's (``LaneBudget``) and a work coordinator's day budget (``DayBudget``) to
and from protobuf, and a budget's status (``BudgetStatus``)."""

from __future__ import annotations

from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.domain.budgets import BudgetLimit
from workcoord.coordinator.domain.results import BudgetReport

__all__ = [
    "budget_report_to_pb",
    "day_budget_from_pb",
    "day_budget_to_pb",
    "lane_budget_from_pb",
    "lane_budget_to_pb",
]


def lane_budget_from_pb(budget: lane_pb2.LaneBudget) -> BudgetLimit | None:
    """A lane's budget (None: the message sets no limit)."""
    limit = BudgetLimit(
        cost_micros=budget.cost_micros if budget.HasField("cost_micros") else None,
        tokens=budget.tokens if budget.HasField("tokens") else None,
    )
    return limit if limit.limits() else None


def lane_budget_to_pb(limit: BudgetLimit | None) -> lane_pb2.LaneBudget | None:
    if limit is None:
        return None
    return lane_pb2.LaneBudget(cost_micros=limit.cost_micros, tokens=limit.tokens)


def day_budget_from_pb(budget: lane_pb2.DayBudget) -> BudgetLimit | None:
    """A work coordinator's day budget (None: the message sets no limit)."""
    limit = BudgetLimit(
        cost_micros=budget.daily_cost_micros if budget.HasField("daily_cost_micros") else None,
        tokens=budget.daily_tokens if budget.HasField("daily_tokens") else None,
    )
    return limit if limit.limits() else None


def day_budget_to_pb(limit: BudgetLimit | None) -> lane_pb2.DayBudget | None:
    if limit is None:
        return None
    return lane_pb2.DayBudget(daily_cost_micros=limit.cost_micros, daily_tokens=limit.tokens)


def budget_report_to_pb(report: BudgetReport | None) -> lane_pb2.BudgetStatus | None:
    """A budget's limits, what was used and what is left."""
    if report is None:
        return None
    limit = report.limit or BudgetLimit()
    out = lane_pb2.BudgetStatus(
        scope=report.scope.value,
        lane_id=report.lane_id,
        day=report.day,
        cost_used_micros=report.used.cost_micros,
        tokens_used=report.used.tokens,
        spent=report.spent is not None,
        message=report.spent.describe() if report.spent else "",
    )
    if limit.cost_micros is not None:
        out.cost_limit_micros = limit.cost_micros
        out.cost_left_micros = max(limit.cost_micros - report.used.cost_micros, 0)
    if limit.tokens is not None:
        out.token_limit = limit.tokens
        out.tokens_left = max(limit.tokens - report.used.tokens, 0)
    return out
