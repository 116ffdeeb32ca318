"""Budgets wired to the stores: what a work coordinator's budgets have spent, read in the
transaction that decides (a claim, a heartbeat, a worker write), and the events a write that
spends raises (the rules themselves are ``domain/budgets.py``).

Consistency: every write that adds spend to a budgeted work coordinator holds its row lock (a
heartbeat of a budgeted work coordinator takes it too, ``engine.attempts``), and so does every
claim; a claim reads the totals under that lock, so no attempt of a spent budget is leased
after the spend was committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from .. import usage
from ..budgets import (
    BudgetLimit,
    BudgetScope,
    Spend,
    SpentBudget,
    first_spent,
    spent,
    warnings_crossed,
)
from ..leasability import Surroundings
from ..model import (
    Coordinator,
    EventType,
    Lane,
    NewEvent,
    PendingAction,
    PendingActionState,
    UsageScope,
    UsageTotal,
)
from ..ports import Reader, Tx
from ._base import new_id

__all__ = [
    "RAISE_BUDGET",
    "BudgetBook",
    "book_of",
    "budget_used",
    "in_force",
    "labelled",
    "limit_changed",
    "open_actions",
    "read_book",
    "resolve_raised",
    "spend_of",
    "view_labels",
    "with_budget",
]

#: The pending action a spent budget opens for the digest owner.
RAISE_BUDGET = "RAISE_BUDGET"


def in_force(coordinator: Coordinator) -> bool:
    """Whether any budget may cover the work coordinator's work (its own or a lane's)."""
    return coordinator.budget is not None or coordinator.lane_budgets


def spend_of(total: UsageTotal | None) -> Spend:
    """A roll-up as a budget counts it: cost, and every token (input, output, both caches)."""
    if total is None:
        return Spend()
    cached = total.cache_read_tokens + total.cache_write_tokens
    return Spend(total.cost_micros, total.input_tokens + total.output_tokens + cached)


def _plus(spend: Spend, added: UsageTotal) -> Spend:
    more = spend_of(added)
    return Spend(spend.cost_micros + more.cost_micros, spend.tokens + more.tokens)


@dataclass(slots=True)
class BudgetBook:
    """A work coordinator's budgets and what they spent, as one transaction read them: the day
    budget and the day's total, and the budget and lifetime total of each lane read."""

    coordinator_id: str
    day: str
    day_limit: BudgetLimit | None
    day_used: Spend = field(default_factory=Spend)
    lanes: dict[str, tuple[BudgetLimit | None, Spend]] = field(default_factory=dict)

    def lane_limit(self, lane_id: str) -> BudgetLimit | None:
        return self.lanes.get(lane_id, (None, Spend()))[0]

    def lane_used(self, lane_id: str) -> Spend:
        return self.lanes.get(lane_id, (None, Spend()))[1]

    def spent_for(self, lane_id: str) -> SpentBudget | None:
        """The spent budget that holds the lane's work (the lane's first, then the day's)."""
        limit, used = self.lanes.get(lane_id, (None, Spend()))
        return first_spent(limit, used, self.day_limit, self.day_used)

    def add(self, totals: Iterable[UsageTotal]) -> list[NewEvent]:
        """Count ``totals`` (a write's roll-ups, about to be added) and return the events the
        spend raises: a BUDGET_WARNING per limit it took across 80 %, a BUDGET_EXHAUSTED per
        budget it spent (the pending action of which :func:`open_actions` opens)."""
        events: list[NewEvent] = []
        for total in totals:
            if total.scope == UsageScope.COORDINATOR and total.day == self.day:
                before = self.day_used
                self.day_used = _plus(before, total)
                events += _crossed(
                    BudgetScope.COORDINATOR_DAY, self.day_limit, before, self.day_used, ""
                )
            elif total.scope == UsageScope.LANE and total.day == "" and total.key in self.lanes:
                limit, before = self.lanes[total.key]
                after = _plus(before, total)
                self.lanes[total.key] = (limit, after)
                events += _crossed(BudgetScope.LANE, limit, before, after, total.key)
        return events


def _crossed(
    scope: BudgetScope, limit: BudgetLimit | None, before: Spend, after: Spend, lane_id: str
) -> list[NewEvent]:
    events = [
        budget_event(EventType.BUDGET_WARNING, w, lane_id)
        for w in warnings_crossed(scope, limit, before, after)
    ]
    now_spent = spent(scope, limit, after)
    if now_spent is not None and spent(scope, limit, before) is None:
        events.append(budget_event(EventType.BUDGET_EXHAUSTED, now_spent, lane_id))
    return events


def budget_event(type: EventType, budget: SpentBudget, lane_id: str) -> NewEvent:
    """A BUDGET_WARNING or BUDGET_EXHAUSTED event about ``budget`` (of ``lane_id``, if a lane's)."""
    data: dict[str, object] = {
        "scope": budget.scope.value,
        "metric": budget.metric.value,
        "used": budget.used,
        "limit": budget.limit,
    }
    if type == EventType.BUDGET_EXHAUSTED:
        data["message"] = budget.describe()
    return NewEvent(type, lane_id=lane_id, data=data)


def book_of(
    coordinator: Coordinator,
    now: datetime,
    day_total: UsageTotal | None,
    lanes: Iterable[Lane],
    lane_totals: Iterable[UsageTotal],
) -> BudgetBook:
    """The book of what a caller already read: the day's total, the lanes (their budgets) and
    their lifetime totals (lanes and totals without a budget are ignored)."""
    book = BudgetBook(coordinator.coordinator_id, usage.day_of(now), coordinator.budget)
    if coordinator.budget is not None:
        book.day_used = spend_of(day_total)
    limits = {lane.lane_id: lane.budget for lane in lanes if lane.budget is not None}
    if limits:
        totals = {t.key: t for t in lane_totals if t.key in limits}
        book.lanes = {k: (v, spend_of(totals.get(k))) for k, v in limits.items()}
    return book


async def read_book(
    reader: Reader, coordinator: Coordinator, lane_ids: Iterable[str], now: datetime
) -> BudgetBook:
    """The budgets covering ``lane_ids`` and what they spent: at most three look-ups by key
    (the day's total, the lanes, their totals), none for what has no budget."""
    cid = coordinator.coordinator_id
    day_total = None
    if coordinator.budget is not None:
        day_total = await usage.day_spend(reader, cid, now)
    wanted = sorted(set(lane_ids))
    lanes: list[Lane] = []
    totals: list[UsageTotal] = []
    if coordinator.lane_budgets and wanted:
        lanes = [lane for lane in await reader.get_lanes(wanted) if lane.budget is not None]
        if lanes:
            keys = [lane.lane_id for lane in lanes]
            totals = await reader.usage_totals(cid, UsageScope.LANE, "", keys)
    return book_of(coordinator, now, day_total, lanes, totals)


async def budget_used(
    reader: Reader, coordinator_id: str, lane_id: str, now: datetime
) -> tuple[BudgetScope, Spend]:
    """The scope of the lane's budget (``lane_id`` "": the day budget's) and what it spent:
    the lane's lifetime total, or the work coordinator's total of ``now``'s UTC day."""
    if lane_id:
        found = await reader.usage_totals(coordinator_id, UsageScope.LANE, "", [lane_id])
        return BudgetScope.LANE, spend_of(found[0] if found else None)
    day_total = await usage.day_spend(reader, coordinator_id, now)
    return BudgetScope.COORDINATOR_DAY, spend_of(day_total)


async def open_actions(tx: Tx, coordinator: Coordinator, events: Sequence[NewEvent]) -> None:
    """Open a RAISE_BUDGET pending action for the digest owner per BUDGET_EXHAUSTED event of
    ``events`` (named in its data as ``actionId``)."""
    actions: list[PendingAction] = []
    for event in events:
        if event.type != EventType.BUDGET_EXHAUSTED:
            continue
        action = PendingAction(
            action_id=new_id("pa"),
            coordinator_id=coordinator.coordinator_id,
            lane_id=event.lane_id,
            kind=RAISE_BUDGET,
            state=PendingActionState.OPEN,
            owner=coordinator.config.digest_owner,
            create_time=tx.now,
            update_time=tx.now,
            last_error=str(event.data.get("message", "")),
        )
        event.data["actionId"] = action.action_id
        actions.append(action)
    if actions:
        await tx.insert_pending_actions(actions)


async def resolve_raised(tx: Tx, coordinator_id: str, lane_id: str) -> list[str]:
    """Resolve the open RAISE_BUDGET actions of the lane (``""``: of the day budget) once its
    budget is no longer spent; returns their ids."""
    found = await tx.list_pending_actions(coordinator_id, PendingActionState.OPEN, "", 1000)
    resolved: list[str] = []
    for action in found:
        if action.kind == RAISE_BUDGET and action.lane_id == lane_id:
            action.state = PendingActionState.RESOLVED
            action.resolution = "the budget was raised"
            action.update_time = tx.now
            await tx.update_pending_action(action)
            resolved.append(action.action_id)
    return resolved


async def limit_changed(
    tx: Tx,
    coordinator: Coordinator,
    lane_id: str,
    old: BudgetLimit | None,
    new: BudgetLimit | None,
) -> tuple[list[NewEvent], bool]:
    """A human changed a budget (the lane's, or with ``lane_id`` "" the day budget) from
    ``old`` to ``new``: lowered to what was spent, it is spent now (a BUDGET_EXHAUSTED event,
    its pending action opened, to append); raised past it, its open RAISE_BUDGET actions are
    resolved. Returns the events and whether the budget gate reopened (wake the leasing)."""
    cid = coordinator.coordinator_id
    scope, used = await budget_used(tx, cid, lane_id, tx.now)
    was, now = spent(scope, old, used), spent(scope, new, used)
    events: list[NewEvent] = []
    if now is not None and was is None:
        events.append(budget_event(EventType.BUDGET_EXHAUSTED, now, lane_id))
        await open_actions(tx, coordinator, events)
    reopened = was is not None and now is None
    if reopened:
        await resolve_raised(tx, cid, lane_id)
    return events, reopened


def labelled(
    book: BudgetBook, around: Surroundings, lane_ids: Iterable[str]
) -> dict[str, Surroundings]:
    """``around`` per lane with the budget gate read from ``book`` (a spent budget closes it):
    the one decision the next-action labels of lanes, items and the view read. Lanes whose
    gate is the same share one object."""
    spent_around = replace(around, budget_spent=True)
    open_around = replace(around, budget_spent=False)
    return {
        lane_id: spent_around if book.spent_for(lane_id) is not None else open_around
        for lane_id in lane_ids
    }


async def with_budget(
    reader: Reader, coordinator: Coordinator, around: Surroundings, lane_ids: Iterable[str]
) -> dict[str, Surroundings]:
    """``around`` per lane with the budget gate read (a spent budget closes it), for the
    next-action labels; ``around`` itself for every lane when no budget is in force."""
    wanted = sorted(set(lane_ids))
    if not in_force(coordinator):
        return dict.fromkeys(wanted, around)
    book = await read_book(reader, coordinator, wanted, around.now)
    return labelled(book, around, wanted)


def view_labels(
    coordinator: Coordinator,
    around: Surroundings,
    lanes: Sequence[Lane],
    day_total: UsageTotal | None,
    lane_totals: Iterable[UsageTotal],
) -> dict[str, Surroundings]:
    """:func:`with_budget` for the view, from what it already read (the page's lanes, the
    day's total and the lanes' lifetime totals): no look-up of its own."""
    ids = [lane.lane_id for lane in lanes]
    if not in_force(coordinator):
        return dict.fromkeys(ids, around)
    book = book_of(coordinator, around.now, day_total, lanes, lane_totals)
    return labelled(book, around, ids)
