"""Explicit placement: its validation, whether a worker satisfies it, and the exclusive keys a
live attempt holds (pure: no I/O). Only what ``inputs.placement`` says explicitly counts."""

from __future__ import annotations

import re

from .model import Item, JsonObject, Worker

_LABEL = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}")
_WORKER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
_RESOURCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}")


# The fields of a stored placement (policy.proto's Placement, by their proto names).
PLACEMENT_FIELDS = frozenset({"require_labels", "worker_id", "exclusive"})


def placement_problems(placement: JsonObject | None) -> list[str]:
    """What is malformed in an explicit placement (empty when it is well-formed)."""
    if not placement:
        return []
    problems: list[str] = []
    for key in placement:
        if key not in PLACEMENT_FIELDS:
            problems.append(f"unknown placement field {key!r}")
    labels = placement.get("require_labels", {})
    if not isinstance(labels, dict):
        problems.append("require_labels must be an object")
    else:
        for name, value in labels.items():
            if not isinstance(name, str) or not _LABEL.fullmatch(name):
                problems.append(f"bad label name {name!r}")
            if not isinstance(value, str) or len(value) > 256:
                problems.append(f"bad value of label {name!r}")
    worker_id = placement.get("worker_id", "")
    if not isinstance(worker_id, str) or (worker_id and not _WORKER_ID.fullmatch(worker_id)):
        problems.append("bad worker_id")
    exclusive = placement.get("exclusive", [])
    if not isinstance(exclusive, list) or not all(
        isinstance(e, str) and _RESOURCE.fullmatch(e) for e in exclusive
    ):
        problems.append("exclusive must be a list of resource names")
    return problems


def placement_matches(placement: JsonObject | None, worker_id: str, worker: Worker | None) -> bool:
    """Whether the asking worker satisfies the item's explicit placement."""
    if not placement:
        return True
    wanted_id = placement.get("worker_id", "")
    if wanted_id and wanted_id != worker_id:
        return False
    labels = placement.get("require_labels") or {}
    if labels:
        have = worker.labels if worker is not None else {}
        if any(have.get(name) != value for name, value in labels.items()):
            return False
    return True


def placement_resources(placement: JsonObject | None) -> list[str]:
    """The exclusive resources a placement holds while its attempt is live."""
    if not placement:
        return []
    return [str(r) for r in placement.get("exclusive") or []]


def exclusive_keys(item: Item) -> list[str]:
    """The keys a live attempt of ``item`` holds: its exclusive key and placement resources."""
    keys = [item.exclusive_key] if item.exclusive_key else []
    keys.extend(f"resource:{r}" for r in placement_resources(item.placement))
    return keys
