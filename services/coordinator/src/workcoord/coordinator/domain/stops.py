"""Which stop a live attempt gets now: the one place that decides it.

A heartbeat's answer carries ``stop`` when the worker must wind down. The reasons, as the
coordinator decides them here (pure: the attempt, its item, the work coordinator's
configuration and the time):

- ``DEADLINE_EXCEEDED``: the attempt ran past its ``deadline_time`` (its ``max_run_duration``
  after the lease, fixed when it was leased). The lease is not extended past the deadline plus
  one lease period (:func:`capped_expiry`), so a worker that goes on is fenced then and the
  item retried as an expired attempt, with backoff, burning a retry — whether or not it
  heartbeats (the recovery sweep ends it like any expired lease).
- ``POLICY_CHANGED``: the work coordinator's policy no longer allows what the attempt's item
  declared (an action class no longer allowed). Such an item's next lease is held by the
  ``policy`` gate (``leasability.holding_gates``), so a queued one waits and a live one is told
  to stop; widening a policy never stops live work. Likewise when shipping now needs a human's
  approval that a live SHIP attempt never had (:func:`approval_withdrawn`): the review policy's
  ``ship_requires_approval`` was turned on under it. Its item awaits the approval once the
  attempt ends (``Transitions._queue``).

- ``BUDGET_EXHAUSTED``: a budget covering the attempt (its lane's, or the work coordinator's
  day budget) is spent (``domain/budgets.py``; the caller reads the totals and passes the spent
  budget in). Like POLICY_CHANGED the heartbeat extends nothing: the worker reports its final
  usage and releases the item (no retry burned), which then waits behind the ``budget`` gate.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from workcoord.kit.errors import LeaseLost

from .budgets import SpentBudget, budget_stop_message
from .model import Attempt, CoordinatorConfig, Item

__all__ = [
    "APPROVAL_NOW_REQUIRED",
    "DeadlineInfo",
    "Stop",
    "StopReason",
    "approval_withdrawn",
    "attempt_deadline",
    "capped_expiry",
    "deadline_of",
    "disallowed_action_classes",
    "max_run_seconds",
    "next_expiry",
    "require_allowed",
    "stop_for",
]


#: A live SHIP item's ``stop_reason`` (with ``requires_approval`` set) when the review policy
#: began to require an approval to ship after it was leased without one; Approve clears it.
APPROVAL_NOW_REQUIRED = "the review policy now requires a human's approval to ship"


class StopReason(enum.StrEnum):
    """Why a live attempt must wind down (the proto's ``Stop.Reason``)."""

    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    POLICY_CHANGED = "POLICY_CHANGED"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True, slots=True)
class DeadlineInfo:
    """A live attempt's deadline as ``why`` shows it: when it was leased and started, when it
    must wind down, and how long is left then (negative: past it)."""

    lease_id: str
    create_time: datetime
    start_time: datetime | None
    deadline_time: datetime
    remaining_seconds: float


@dataclass(frozen=True, slots=True)
class Stop:
    """A stop: its reason and a sentence a worker (or an agent) acts on."""

    reason: StopReason
    message: str


def max_run_seconds(item: Item, class_max_run: Mapping[str, int]) -> int | None:
    """The bound on one attempt of ``item``: its own, else its class's (None: no bound)."""
    if item.max_run_seconds is not None:
        return item.max_run_seconds
    return class_max_run.get(item.worker_class)


def attempt_deadline(item: Item, config: CoordinatorConfig, leased: datetime) -> datetime | None:
    """When an attempt of ``item`` leased at ``leased`` must wind down (None: never)."""
    seconds = max_run_seconds(item, config.max_run_seconds)
    return None if seconds is None else leased + timedelta(seconds=seconds)


def capped_expiry(expiry: datetime, attempt: Attempt) -> datetime:
    """A lease expiry no later than the attempt's deadline plus one lease period: past that
    the lease is lost, heartbeat or not."""
    if attempt.deadline_time is None:
        return expiry
    return min(expiry, attempt.deadline_time + timedelta(seconds=attempt.lease_seconds))


def next_expiry(attempt: Attempt, stop: Stop | None, now: datetime) -> datetime:
    """The expiry a heartbeat gives ``attempt`` told ``stop``: its lease period from now,
    never past its deadline plus one lease period; a POLICY_CHANGED stop extends nothing (the
    worker has until its current expiry to release), nor does a BUDGET_EXHAUSTED one."""
    if stop is not None and stop.reason in (StopReason.POLICY_CHANGED, StopReason.BUDGET_EXHAUSTED):
        return attempt.lease_expire_time
    return capped_expiry(now + timedelta(seconds=attempt.lease_seconds), attempt)


def require_allowed(item: Item, config: CoordinatorConfig, action: str) -> None:
    """Refuse (LEASE_LOST, cause ``policy``) to ``action`` an attempt whose item declares an
    action class the work coordinator no longer allows: it may only release or fail."""
    narrowed = disallowed_action_classes(item, config)
    if narrowed:
        raise LeaseLost(
            "policy",
            f"lease lost: cannot {action}: the action classes {', '.join(narrowed)} are no "
            "longer allowed; release the item",
        )
    if approval_withdrawn(item):
        raise LeaseLost(
            "policy",
            f"lease lost: cannot {action}: {APPROVAL_NOW_REQUIRED}; release the item",
        )


def approval_withdrawn(item: Item) -> bool:
    """Whether ``item`` (live, or just ended) was leased without the approval its review
    policy now requires: it must not finish, and it awaits a human's approval when it is
    given back."""
    return item.requires_approval and item.stop_reason == APPROVAL_NOW_REQUIRED


def disallowed_action_classes(item: Item, config: CoordinatorConfig) -> list[str]:
    """The action classes ``item`` declares that the work coordinator no longer allows."""
    allowed = set(config.allowed_action_classes)
    return [c for c in item.action_classes if c not in allowed]


def stop_for(
    attempt: Attempt,
    item: Item,
    config: CoordinatorConfig,
    now: datetime,
    budget: SpentBudget | None = None,
) -> Stop | None:
    """The stop ``attempt`` (live, of ``item``) gets now, if any: a deadline first (it ends the
    attempt for sure), then a spent ``budget`` covering it, then a narrowed policy."""
    deadline = attempt.deadline_time
    if deadline is not None and now >= deadline:
        fenced = deadline + timedelta(seconds=attempt.lease_seconds)
        return Stop(
            StopReason.DEADLINE_EXCEEDED,
            f"the attempt ran past its max_run_duration (deadline {_iso(deadline)}): stop now; "
            f"the lease is lost at {_iso(fenced)} and the item is retried",
        )
    if budget is not None:
        return Stop(StopReason.BUDGET_EXHAUSTED, budget_stop_message(budget))
    narrowed = disallowed_action_classes(item, config)
    if narrowed:
        return Stop(
            StopReason.POLICY_CHANGED,
            "the work coordinator no longer allows the action classes "
            f"{', '.join(narrowed)}: stop now and release the item",
        )
    if approval_withdrawn(item):
        return Stop(
            StopReason.POLICY_CHANGED,
            f"{APPROVAL_NOW_REQUIRED}: stop now and release the item; it waits for approval",
        )
    return None


def deadline_of(item: Item, attempts: Sequence[Attempt], now: datetime) -> DeadlineInfo | None:
    """``why``'s deadline of ``item``: its live attempt's, if it has one (None otherwise)."""
    live = next((a for a in attempts if a.live and a.lease_id == item.current_lease_id), None)
    if live is None or live.deadline_time is None:
        return None
    remaining = (live.deadline_time - now).total_seconds()
    return DeadlineInfo(
        live.lease_id, live.create_time, live.start_time, live.deadline_time, remaining
    )


def _iso(time: datetime) -> str:
    return time.isoformat().replace("+00:00", "Z")
