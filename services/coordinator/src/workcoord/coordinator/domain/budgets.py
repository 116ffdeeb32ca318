"""Budgets: when a lane's or a work coordinator's spend has reached its limit (pure rules).

A work coordinator may have a day budget (``dailyCostMicros``, ``dailyTokens``, per UTC day)
and a lane a lifetime budget (``costMicros``, ``tokens``). A budget is spent once a usage
total it covers reaches its limit; the ``budget`` gate (``leasability.holding_gates``) then
holds the work it covers and a live attempt it covers is told ``BUDGET_EXHAUSTED`` on its next
heartbeat. A write that carries a total across 80 % of a limit warns once per budget period.

These are the decisions only: nothing here stores a budget or reads a total. The engine's
``engine/budgeting.py`` reads the budgets and totals (for the claim, the heartbeat, the worker
writes, recovery and ``why``) and applies them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "WARNING_PERCENT",
    "BudgetLimit",
    "BudgetScope",
    "Metric",
    "Spend",
    "SpentBudget",
    "budget_stop_message",
    "first_spent",
    "spent",
    "warnings_crossed",
]

#: A write that carries a total to or past this share of a limit (and not before) warns.
WARNING_PERCENT = 80


class BudgetScope(enum.StrEnum):
    """Which budget: the lane's (lifetime) or the work coordinator's (per UTC day)."""

    LANE = "lane"
    COORDINATOR_DAY = "work coordinator day"


class Metric(enum.StrEnum):
    """What a limit bounds: cost (micro-dollars) or tokens."""

    COST = "cost"
    TOKENS = "tokens"


@dataclass(frozen=True, slots=True)
class BudgetLimit:
    """A budget's limits (None: no limit on that measure)."""

    cost_micros: int | None = None
    tokens: int | None = None

    def limits(self) -> list[tuple[Metric, int]]:
        out: list[tuple[Metric, int]] = []
        if self.cost_micros is not None:
            out.append((Metric.COST, self.cost_micros))
        if self.tokens is not None:
            out.append((Metric.TOKENS, self.tokens))
        return out


@dataclass(frozen=True, slots=True)
class Spend:
    """What a budget's period spent so far (cost in millionths of a US dollar, all tokens)."""

    cost_micros: int = 0
    tokens: int = 0

    def of(self, metric: Metric) -> int:
        return self.cost_micros if metric is Metric.COST else self.tokens


@dataclass(frozen=True, slots=True)
class SpentBudget:
    """A spent budget as ``why`` and the stop message name it: which, what, used / limit."""

    scope: BudgetScope
    metric: Metric
    used: int
    limit: int

    def describe(self) -> str:
        """E.g. ``the lane's budget is spent: cost $1.20 / $1.00``."""
        owner = "the lane's" if self.scope is BudgetScope.LANE else "the work coordinator's day"
        return f"{owner} budget is spent: {self.metric} {_amount(self)}"


def spent(scope: BudgetScope, limit: BudgetLimit | None, used: Spend) -> SpentBudget | None:
    """The first limit of ``limit`` that ``used`` has reached (cost before tokens), or None."""
    if limit is None:
        return None
    for metric, value in limit.limits():
        if used.of(metric) >= value:
            return SpentBudget(scope, metric, used.of(metric), value)
    return None


def first_spent(
    lane_limit: BudgetLimit | None,
    lane_used: Spend,
    coordinator_limit: BudgetLimit | None,
    coordinator_day_used: Spend,
) -> SpentBudget | None:
    """The spent budget that holds a lane's work: the lane's first, then the day's."""
    return spent(BudgetScope.LANE, lane_limit, lane_used) or spent(
        BudgetScope.COORDINATOR_DAY, coordinator_limit, coordinator_day_used
    )


def warnings_crossed(
    scope: BudgetScope, limit: BudgetLimit | None, before: Spend, after: Spend
) -> list[SpentBudget]:
    """The limits a write took from under :data:`WARNING_PERCENT` % to at least it (the
    warning fires once per period: a later write starts above the threshold). ``used`` is the
    total after the write."""
    if limit is None:
        return []
    out = []
    for metric, value in limit.limits():
        threshold = value * WARNING_PERCENT
        if before.of(metric) * 100 < threshold <= after.of(metric) * 100:
            out.append(SpentBudget(scope, metric, after.of(metric), value))
    return out


def budget_stop_message(budget: SpentBudget) -> str:
    """The heartbeat's ``stop.message`` for ``BUDGET_EXHAUSTED``: words an agent acts on."""
    return (
        f"{budget.describe()}: stop now, report your final usage and release the item; "
        "it waits until a human raises the budget"
    )


def _amount(budget: SpentBudget) -> str:
    if budget.metric is Metric.COST:
        return f"${budget.used / 1_000_000:.2f} / ${budget.limit / 1_000_000:.2f}"
    return f"{budget.used} / {budget.limit} tokens"
