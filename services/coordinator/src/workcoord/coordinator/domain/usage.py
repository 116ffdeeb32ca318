"""Usage: what attempts spend, as running totals their workers report.

A worker reports its attempt's totals with heartbeats and its final write (complete, fail,
checkpoint). Totals only grow and are bounded; the attempt keeps the latest report
(``Attempt.usage``), and what a report adds to the previous one is its :func:`increase`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from workcoord.kit.errors import InvalidArgument

from .model import Attempt, Item, Lane, UsageScope, UsageTotal
from .ports import Reader
from .specs import USAGE_TOTALS, Usage

#: The largest total accepted for any count (tokens or micro-dollars): a million dollars, or
#: a trillion tokens, for one attempt is a reporting bug, not spend.
MAX_TOTAL = 10**12


def reported(attempt: Attempt) -> Usage:
    """The attempt's usage as last reported (zero when none was)."""
    return Usage.from_json(attempt.usage) if attempt.usage else Usage()


def check_usage(previous: Usage, usage: Usage, path: str = "usage") -> Usage:
    """The attempt's new totals: ``usage``, refused (INVALID_ARGUMENT naming the field) when a
    total is negative, over :data:`MAX_TOTAL`, or lower than the one already reported. A report
    that names no model keeps the one reported before."""
    for name in USAGE_TOTALS:
        value, before = getattr(usage, name), getattr(previous, name)
        if value < 0 or value > MAX_TOTAL:
            raise InvalidArgument.single(f"{path}.{name}", f"must be between 0 and {MAX_TOTAL}")
        if value < before:
            raise InvalidArgument.single(
                f"{path}.{name}",
                f"is a running total: {value} is lower than the {before} already reported",
            )
    if not usage.model and previous.model:
        usage = replace(usage, model=previous.model)
    return usage


def increase(previous: Usage, usage: Usage) -> Usage:
    """What ``usage`` adds to ``previous`` (both checked totals of one attempt)."""
    return Usage(
        **{name: getattr(usage, name) - getattr(previous, name) for name in USAGE_TOTALS},
        model=usage.model,
    )


def record(attempt: Attempt, usage: Usage | None) -> Usage:
    """Keep ``usage`` (checked) as the attempt's totals; returns what it added (zero when the
    write reported none)."""
    if usage is None:
        return Usage(model=reported(attempt).model)
    previous = reported(attempt)
    checked = check_usage(previous, usage)
    attempt.usage = checked.to_json() or None
    return increase(previous, checked)


def day_of(now: datetime) -> str:
    """The UTC day of ``now`` (``YYYY-MM-DD``): the key of the day roll-ups and budgets."""
    return now.astimezone(UTC).date().isoformat()


def rollups(attempt: Attempt, added: Usage, now: datetime) -> list[UsageTotal]:
    """The roll-ups ``added`` (what one report of ``attempt`` added) goes to: the work
    coordinator, its lane, item, worker class and model, each for the UTC day of ``now`` and
    for all time. None when it added nothing."""
    if not any(getattr(added, name) for name in USAGE_TOTALS):
        return []
    totals = {name: getattr(added, name) for name in USAGE_TOTALS}
    keys = (
        (UsageScope.COORDINATOR, ""),
        (UsageScope.LANE, attempt.lane_id),
        (UsageScope.ITEM, attempt.item_id),
        (UsageScope.WORKER_CLASS, attempt.worker_class),
        (UsageScope.MODEL, added.model),
    )
    return [
        UsageTotal(attempt.coordinator_id, scope, key, day, **totals)
        for scope, key in keys
        for day in (day_of(now), "")
    ]


def merged(totals: Sequence[UsageTotal]) -> list[UsageTotal]:
    """``totals`` added up per roll-up (coordinator, scope, day, key), in that key's order: a
    store that locks each roll-up row it adds to takes them in one order (no two writers can
    wait for each other's), and once each."""
    by_key: dict[tuple[str, str, str, str], UsageTotal] = {}
    for total in totals:
        key = (total.coordinator_id, total.scope.value, total.day, total.key)
        before = by_key.get(key)
        if before is None:
            by_key[key] = total
            continue
        added = {name: getattr(before, name) + getattr(total, name) for name in USAGE_TOTALS}
        by_key[key] = replace(before, **added)
    return [by_key[key] for key in sorted(by_key)]


async def lane_usage(reader: Reader, lane: Lane, items: Sequence[Item]) -> dict[str, UsageTotal]:
    """What the lane (by its id) and its items (by theirs) spent, all time: two look-ups."""
    cid = lane.coordinator_id
    found = {u.key: u for u in await reader.usage_totals(cid, UsageScope.LANE, "", [lane.lane_id])}
    item_ids = [i.item_id for i in items]
    found.update((u.key, u) for u in await reader.usage_totals(cid, UsageScope.ITEM, "", item_ids))
    return found


async def day_spend(reader: Reader, coordinator_id: str, now: datetime) -> UsageTotal | None:
    """What the work coordinator spent on the UTC day of ``now``: one look-up (None: nothing)."""
    found = await reader.usage_totals(coordinator_id, UsageScope.COORDINATOR, day_of(now), [""])
    return found[0] if found else None


async def lanes_spend(
    reader: Reader, coordinator_id: str, lane_ids: Sequence[str]
) -> list[UsageTotal]:
    """What the lanes of ``lane_ids`` spent, all time, the costliest first: one look-up by key
    (lanes that spent nothing are absent)."""
    if not lane_ids:
        return []
    found = await reader.usage_totals(coordinator_id, UsageScope.LANE, "", list(lane_ids))
    return sorted(found, key=lambda u: (-u.cost_micros, u.key))
