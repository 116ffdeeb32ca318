"""Who may weaken a policy: one pure rule, used by every path that sets one.

A lane or item may carry its own retry and review policy. Set by a work key, each field must
be at least as strict as the work coordinator's effective value (its own over the defaults);
only a human who may configure the coordinator may set something weaker, and that is recorded
as a ``POLICY_WEAKENED`` event. "Stricter" means, field by field:

- ``review_policy.ship_requires_approval``: requiring an approval is stricter than not; a key
  may add the approval, never remove it.
- ``review_policy.on_pass``: shipping less is stricter: ``NONE`` (nothing ships) over
  ``INTEGRATE_THEN_SHIP`` (ships only after an integration succeeded) over ``SHIP``.
- ``review_policy.max_fail_rounds``: fewer is stricter (the lane closes out for a human sooner).
- ``retry_policy.maximum_attempts``: fewer is stricter (a human sees a dead letter sooner).
- ``retry_policy.initial_interval``, ``backoff_coefficient``, ``maximum_interval``: together
  they are the retry schedule, and a schedule is weaker if it retries sooner than the
  coordinator's after any failed attempt. Then every one of these fields set below the
  coordinator's value is named (a lower field alone is fine while the schedule is no sooner,
  e.g. a smaller coefficient from a much longer first delay).

Unset fields inherit and weaken nothing. The item fields ``requires_approval`` and
``needs_human`` only add a human step, and an item's ``action_classes`` are checked against the
coordinator's allowed list when the item becomes ready (a class outside it stops the item for
a human): none of them can loosen anything, so they are not compared here.
"""

from __future__ import annotations

from collections.abc import Sequence

from workcoord.kit.errors import PermissionDenied

from . import rules
from .auth import Access, Principal, may
from .model import (
    DEFAULT_RETRY_POLICY,
    DEFAULT_REVIEW_POLICY,
    Coordinator,
    CoordinatorConfig,
    OnPass,
    RetryPolicy,
    ReviewPolicy,
)
from .specs import ItemSpec, LaneSpec

# How much a passing review may lead to: higher ships less, so it is stricter.
_ON_PASS_STRICTNESS = {OnPass.SHIP: 0, OnPass.INTEGRATE_THEN_SHIP: 1, OnPass.NONE: 2}
# Retries are compared after each of this many failed attempts (the most a policy allows).
_MOST_ATTEMPTS = 10
_TIMING_FIELDS = ("initial_interval", "backoff_coefficient", "maximum_interval")


def weaker_review(requested: ReviewPolicy, coordinator: ReviewPolicy) -> list[str]:
    """The fields of ``requested`` that are weaker than the coordinator's review policy
    (``coordinator`` as configured; unset fields take the defaults)."""
    base = coordinator.over(DEFAULT_REVIEW_POLICY)
    weaker: list[str] = []
    if requested.max_fail_rounds is not None and requested.max_fail_rounds > (
        base.max_fail_rounds or 0
    ):
        weaker.append("review_policy.max_fail_rounds")
    if (
        requested.on_pass is not None
        and base.on_pass is not None
        and _ON_PASS_STRICTNESS[requested.on_pass] < _ON_PASS_STRICTNESS[base.on_pass]
    ):
        weaker.append("review_policy.on_pass")
    if requested.ship_requires_approval is False and base.ship_requires_approval:
        weaker.append("review_policy.ship_requires_approval")
    return weaker


def _base_delay(policy: RetryPolicy, failed: int) -> float:
    """The delay before the retry after ``failed`` counted attempts, without jitter (a uniform
    draw of 0.5 makes ``retry_delay``'s jitter factor exactly 1)."""
    return rules.retry_delay(policy, failed, lambda: 0.5)


def weaker_retry(requested: RetryPolicy, coordinator: RetryPolicy) -> list[str]:
    """The fields of ``requested`` that are weaker than the coordinator's retry policy
    (``coordinator`` as configured; unset fields take the defaults)."""
    base = coordinator.over(DEFAULT_RETRY_POLICY)
    weaker: list[str] = []
    if requested.maximum_attempts is not None and requested.maximum_attempts > (
        base.maximum_attempts or 0
    ):
        weaker.append("retry_policy.maximum_attempts")
    schedule = requested.over(base)
    sooner = any(
        # A relative margin, so float rounding of equal schedules never counts as sooner.
        _base_delay(schedule, n) < _base_delay(base, n) * (1 - 1e-9)
        for n in range(1, _MOST_ATTEMPTS + 1)
    )
    if sooner:
        for name in _TIMING_FIELDS:
            value, floor = getattr(requested, name), getattr(base, name)
            if value is not None and floor is not None and value < floor:
                weaker.append(f"retry_policy.{name}")
    return weaker


def item_weakened_fields(spec: ItemSpec, config: CoordinatorConfig, path: str) -> list[str]:
    """The fields of a new item, under ``path`` (``item``, ``lane.items[0]``), weaker than the
    work coordinator's policy."""
    return [f"{path}.{name}" for name in weaker_retry(spec.retry_policy, config.retry_policy)]


def lane_weakened_fields(spec: LaneSpec, config: CoordinatorConfig) -> list[str]:
    """The fields of a new lane and its items (``lane.…``) weaker than the work coordinator's
    policy."""
    weaker = [
        f"lane.{name}"
        for name in weaker_review(spec.review_policy, config.review_policy)
        + weaker_retry(spec.retry_policy, config.retry_policy)
    ]
    for index, item in enumerate(spec.items):
        weaker += item_weakened_fields(item, config, f"lane.items[{index}]")
    return weaker


def may_weaken(principal: Principal, coordinator: Coordinator) -> bool:
    """Whether ``principal`` may set a policy weaker than ``coordinator``'s: a human who may
    configure it (its org's admin or a platform admin), never a key."""
    return principal.is_human and may(principal, coordinator, Access.CONFIGURE)


def require_may_weaken(
    principal: Principal, coordinator: Coordinator, weakened: Sequence[str]
) -> None:
    """Refuse ``weakened`` fields (PERMISSION_DENIED naming them, also in the ErrorInfo
    metadata ``field`` and ``fields``) unless ``principal`` may weaken a policy."""
    if not weakened or may_weaken(principal, coordinator):
        return
    names = ", ".join(weakened)
    raise PermissionDenied(
        f"{names}: weaker than the work coordinator's policy; "
        "only a human administrator may weaken a policy",
        metadata={"field": weakened[0], "fields": ",".join(weakened)},
    )
