"""The STANDARD workflow: build → review → fix → ship, as pure decisions.

Given a lane, its items and the item that just succeeded, :func:`after_success` says what
happens next: which items to create (and whether they wait on another), whether the lane
finishes, and which events explain it. The engine applies the steps in its transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workcoord.kit.errors import FieldViolation, InvalidArgument

from . import rules
from .model import (
    DEFAULT_REVIEW_POLICY,
    EventType,
    Item,
    ItemKind,
    JsonObject,
    Lane,
    LaneState,
    NewEvent,
    OnPass,
    ReviewPolicy,
)
from .specs import Evidence, ItemSpec, Verdict

STAGES = (ItemKind.BUILD, ItemKind.REVIEW, ItemKind.FIX, ItemKind.INTEGRATE, ItemKind.SHIP)


@dataclass(slots=True)
class NextSteps:
    """What follows a success in a STANDARD lane."""

    new_items: list[ItemSpec] = field(default_factory=list)
    lane_state: LaneState | None = None
    close_reason: str = ""
    fail_round: bool = False
    events: list[NewEvent] = field(default_factory=list)
    receipt: JsonObject | None = None


def stage_classes(lane_classes: dict[str, str], known: dict[str, int]) -> dict[str, str]:
    """The worker class of each stage: the lane's choice over the defaults, each one known."""
    classes = rules.stage_class_defaults()
    classes.update({k: v for k, v in lane_classes.items() if v})
    if "FIX" not in lane_classes and "BUILD" in lane_classes:
        classes["FIX"] = lane_classes["BUILD"]
    violations = [
        FieldViolation(
            f"lane.worker_classes.{stage.lower()}",
            f"unknown worker class {cls!r} (known: {', '.join(sorted(known))})",
        )
        for stage, cls in classes.items()
        if cls not in known
    ]
    if violations:
        raise InvalidArgument(violations)
    return classes


def review_policy_for(lane: Lane, coordinator_policy: ReviewPolicy) -> ReviewPolicy:
    return lane.review_policy.over(coordinator_policy.over(DEFAULT_REVIEW_POLICY))


def _spec(lane: Lane, kind: ItemKind, key: str, worker_class: str, **extra: Any) -> ItemSpec:
    return ItemSpec(
        key=key,
        kind=kind,
        worker_class=worker_class,
        # The lane's own title: a stage prefix such as "ship:" would make every lane that
        # mentions production look like a production deploy to the sensitive-action check.
        title=lane.title,
        brief=lane.brief,
        placement=lane.placement,
        priority=lane.priority,
        **extra,
    )


def first_items(lane: Lane, classes: dict[str, str]) -> list[ItemSpec]:
    """A new STANDARD lane starts with its BUILD item."""
    return [_spec(lane, ItemKind.BUILD, "build", classes["BUILD"])]


def _next_key(items: list[Item], prefix: str) -> str:
    taken = {i.key for i in items}
    n = 1
    while f"{prefix}-{n}" in taken:
        n += 1
    return f"{prefix}-{n}"


def after_success(
    lane: Lane,
    items: list[Item],
    done: Item,
    classes: dict[str, str],
    policy: ReviewPolicy,
) -> NextSteps:
    """What the STANDARD workflow does after ``done`` succeeded."""
    steps = NextSteps()
    evidence = Evidence.from_json(done.evidence or {})
    if done.kind in (ItemKind.BUILD, ItemKind.FIX):
        steps.new_items.append(
            _spec(
                lane,
                ItemKind.REVIEW,
                _next_key(items, "review"),
                classes["REVIEW"],
                inputs={"reviews": done.key, "summary": evidence.summary},
            )
        )
        return steps
    if done.kind == ItemKind.REVIEW:
        if evidence.verdict == Verdict.PASS:
            steps.events.append(
                NewEvent(EventType.REVIEW_PASSED, lane_id=lane.lane_id, item_id=done.item_id)
            )
            on_pass = policy.on_pass or OnPass.SHIP
            approval = bool(policy.ship_requires_approval)
            if on_pass == OnPass.NONE:
                steps.lane_state = LaneState.DONE
            elif on_pass == OnPass.SHIP:
                steps.new_items.append(
                    _spec(lane, ItemKind.SHIP, "ship", classes["SHIP"], requires_approval=approval)
                )
            else:
                steps.new_items.append(
                    _spec(lane, ItemKind.INTEGRATE, "integrate", classes["INTEGRATE"])
                )
                steps.new_items.append(
                    _spec(
                        lane,
                        ItemKind.SHIP,
                        "ship",
                        classes["SHIP"],
                        depends_on=["integrate"],
                        requires_approval=approval,
                    )
                )
            return steps
        findings = list(evidence.findings)
        steps.fail_round = True
        steps.events.append(
            NewEvent(
                EventType.REVIEW_FAILED,
                lane_id=lane.lane_id,
                item_id=done.item_id,
                data={"round": lane.fail_rounds + 1, "findings": len(findings)},
            )
        )
        max_rounds = policy.max_fail_rounds or 2
        if lane.fail_rounds + 1 >= max_rounds:
            steps.lane_state = LaneState.CLOSED_OUT
            steps.close_reason = f"review failed {lane.fail_rounds + 1} time(s)"
            return steps
        steps.new_items.append(
            _spec(
                lane,
                ItemKind.FIX,
                _next_key(items, "fix"),
                classes["FIX"],
                inputs={
                    "findings": findings,
                    "review_summary": evidence.summary,
                    "review_item_id": done.item_id,
                },
            )
        )
        return steps
    if done.kind == ItemKind.INTEGRATE:
        return steps  # SHIP waits on INTEGRATE and is released as a dependent
    if done.kind == ItemKind.SHIP:
        steps.lane_state = LaneState.LIVE
        steps.receipt = evidence.receipt.to_json() if evidence.receipt else {}
        return steps
    return steps
