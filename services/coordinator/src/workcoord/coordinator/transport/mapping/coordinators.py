"""Work coordinators: to protobuf, and what an update (with its field mask) changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.message import Message

from workcoord.api.v1 import (
    policy_pb2,
    work_coordinator_pb2,
)
from workcoord.coordinator.domain.budgets import BudgetLimit
from workcoord.coordinator.domain.model import Coordinator
from workcoord.coordinator.domain.specs import CapacityEntries
from workcoord.kit.errors import InvalidArgument

from .budgets import day_budget_from_pb, day_budget_to_pb
from .fields import ToPb
from .scalars import dur, retry_from_pb, retry_to_pb, review_from_pb, review_to_pb

_COORDINATOR = ToPb(
    work_coordinator_pb2.WorkCoordinator,
    plain=("coordinator_id", "org_slug", "display_name", "enabled", "revision"),
    enums=("scope",),
    times=("create_time", "update_time"),
)


def coordinator_to_pb(c: Coordinator) -> work_coordinator_pb2.WorkCoordinator:
    config = c.config
    return _COORDINATOR(
        c,
        class_capacity=config.class_capacity,
        retry_policy=retry_to_pb(config.retry_policy),
        review_policy=review_to_pb(config.review_policy),
        action_policy=policy_pb2.ActionPolicy(
            allowed_action_classes=list(config.allowed_action_classes)
        ),
        digest_owner=config.digest_owner,
        escalate_after=dur(config.escalate_after_seconds),
        parent_coordinator_id=config.parent_coordinator_id,
        etag=str(c.config_version),
        max_run_duration={k: dur(v) for k, v in config.max_run_seconds.items()},
        budget=day_budget_to_pb(c.budget),
    )


_COORDINATOR_FIELDS: dict[str, str] = {
    # proto field → config field
    "class_capacity": "class_capacity",
    "retry_policy": "retry_policy",
    "review_policy": "review_policy",
    "action_policy": "allowed_action_classes",
    "digest_owner": "digest_owner",
    "escalate_after": "escalate_after_seconds",
    "parent_coordinator_id": "parent_coordinator_id",
    "max_run_duration": "max_run_seconds",
}
# Map fields whose entries an update mask may name one by one (``class_capacity.codex``).
_MAPS = frozenset({"class_capacity", "max_run_duration"})


# Top-level fields an update may name besides the configuration (the etag only guards it).
_UPDATABLE = frozenset({"display_name", "enabled", "etag", "budget", *_COORDINATOR_FIELDS})
# Fields whose own fields (or map entries) an update mask may name one by one.
_PARTIAL = frozenset({*_MAPS, "retry_policy", "review_policy", "budget"})
_IMMUTABLE = frozenset({"scope", "org_slug", "coordinator_id"})


def check_update_paths(paths: Sequence[str]) -> None:
    """Refuse an update mask naming a field an update cannot change (or no field at all)."""
    descriptor = work_coordinator_pb2.WorkCoordinator.DESCRIPTOR
    unknown: list[str] = []
    for path in paths:
        top, dot, rest = path.partition(".")
        if top in _IMMUTABLE:
            continue  # reported as immutable by the caller
        if top not in _UPDATABLE or (dot and top not in _PARTIAL) or (dot and not rest):
            unknown.append(path)
        elif dot and top not in _MAPS:
            nested = descriptor.fields_by_name[top].message_type
            if nested is None or rest not in nested.fields_by_name:
                unknown.append(path)
    if unknown:
        raise InvalidArgument.single(
            "update_mask", f"names no updatable field: {', '.join(unknown)}"
        )


def coordinator_changes(
    wc: work_coordinator_pb2.WorkCoordinator, paths: Sequence[str]
) -> dict[str, Any]:
    """The configuration fields named by ``paths`` (proto names), parsed. A path naming one
    class (``class_capacity.codex``) changes only that class: set from the body, or removed
    when the body leaves it out."""
    changes: dict[str, Any] = {}
    entries: dict[str, int | None] = {}
    run_entries: dict[str, int | None] = {}
    for path in paths:
        top, _, rest = path.partition(".")
        target = _COORDINATOR_FIELDS.get(top)
        if target is None:
            continue
        if top == "class_capacity" and rest:
            entries[rest] = wc.class_capacity.get(rest)
        elif top == "class_capacity":
            changes[target] = dict(wc.class_capacity)
        elif top == "max_run_duration" and rest:
            given = wc.max_run_duration.get(rest)
            run_entries[rest] = _seconds(given) if given is not None else None
        elif top == "max_run_duration":
            changes[target] = {k: _seconds(v) for k, v in wc.max_run_duration.items()}
        elif top == "retry_policy":
            changes[target] = retry_from_pb(wc.retry_policy)
        elif top == "review_policy":
            changes[target] = review_from_pb(wc.review_policy)
        elif top == "action_policy":
            changes[target] = tuple(wc.action_policy.allowed_action_classes)
        elif top == "digest_owner":
            changes[target] = wc.digest_owner
        elif top == "escalate_after":
            changes[target] = wc.escalate_after.ToTimedelta().total_seconds()
        elif top == "parent_coordinator_id":
            changes[target] = wc.parent_coordinator_id
    if entries:
        whole = changes.get("class_capacity")
        changes["class_capacity"] = (
            CapacityEntries(entries).over(whole) if whole is not None else CapacityEntries(entries)
        )
    if run_entries:
        whole = changes.get("max_run_seconds")
        changes["max_run_seconds"] = (
            CapacityEntries(run_entries).over(whole)
            if whole is not None
            else CapacityEntries(run_entries)
        )
    return changes


def budget_change(
    wc: work_coordinator_pb2.WorkCoordinator, paths: Sequence[str]
) -> dict[str, int | None] | None:
    """The day budget's limits ``paths`` name (None: none), each set from the body or removed
    (None) when the body leaves it out: both for ``budget``, one for
    ``budget.daily_cost_micros`` or ``budget.daily_tokens``."""
    named = [p for p in paths if p.partition(".")[0] == "budget"]
    if not named:
        return None
    body = wc.budget
    given = day_budget_from_pb(body) or BudgetLimit()
    limits = {"cost_micros": given.cost_micros, "tokens": given.tokens}
    if "budget" in named:
        return limits
    return {
        name: value
        for name, value in limits.items()
        if {"cost_micros": "budget.daily_cost_micros", "tokens": "budget.daily_tokens"}[name]
        in named
    }


def _seconds(duration: Any) -> int:
    """A Duration as whole seconds (a fraction rounds up: a bound is never shortened)."""
    return int(duration.seconds) + (1 if duration.nanos > 0 else 0)


def populated_paths(message: Message, *, entries: bool = True) -> list[str]:
    """Top-level fields set in ``message`` (AIP-134's implied update mask). With ``entries``
    a map names its entries one by one (``class_capacity.codex``): an update that sends some
    classes changes those, and never drops the others by surprise."""
    paths: list[str] = []
    for field, value in message.ListFields():
        entry = field.message_type
        if entries and entry is not None and entry.GetOptions().map_entry:
            paths.extend(f"{field.name}.{key}" for key in sorted(value))
        else:
            paths.append(field.name)
    return paths
