"""Lanes, items and attempts: the specs a caller sends, the details it reads back.

Inputs and checkpoints are private and never leave through here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from google.protobuf import json_format

from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.inputs import UNSET_BUDGET, LaneEdit
from workcoord.coordinator.domain.leasability import Surroundings
from workcoord.coordinator.domain.model import (
    Attempt,
    Item,
    ItemKind,
    ReviewPolicy,
    Template,
    UsageTotal,
)
from workcoord.coordinator.domain.results import ItemDetail, LaneDetail
from workcoord.coordinator.domain.specs import (
    Checkpoint,
    Evidence,
    Failure,
    ItemSpec,
    LaneSpec,
    Receipt,
    RunIdentity,
    TicketSpec,
    Usage,
)
from workcoord.kit.errors import InvalidArgument

from .budgets import lane_budget_from_pb, lane_budget_to_pb
from .fields import ToPb
from .reports import (
    checkpoint_to_pb,
    evidence_to_pb,
    failure_to_pb,
    receipt_to_pb,
    run_identity_to_pb,
    usage_to_pb,
    usage_total_to_pb,
)
from .scalars import (
    enum_from_pb,
    placement_to_pb,
    retry_from_pb,
    retry_to_pb,
    review_from_pb,
    review_to_pb,
    struct,
    to_dict,
)

# Lane.WorkerClasses field -> the worker class it names.
_WORKER_CLASSES = (
    ("build", "BUILD"),
    ("review", "REVIEW"),
    ("fix", "FIX"),
    ("integrate", "INTEGRATE"),
    ("ship", "SHIP"),
)


def item_spec_from_pb(item: lane_pb2.Item) -> ItemSpec:
    return ItemSpec(
        key=item.key,
        kind=enum_from_pb(lane_pb2.Item.Kind, item.kind, ItemKind),
        worker_class=item.worker_class,
        title=item.title,
        brief=item.brief,
        depends_on=list(item.depends_on),
        inputs=json_format.MessageToDict(item.inputs) if item.HasField("inputs") else {},
        placement=to_dict(item.placement) if item.HasField("placement") else None,
        exclusive_key=item.exclusive_key,
        priority=item.priority if item.priority else None,
        retry_policy=retry_from_pb(item.retry_policy),
        action_classes=list(item.action_classes),
        needs_human=item.needs_human,
        requires_approval=item.requires_approval,
        max_run_seconds=item.max_run_duration.seconds
        if item.HasField("max_run_duration")
        else None,
    )


def lane_spec_from_pb(lane: lane_pb2.Lane) -> LaneSpec:
    classes = lane.worker_classes
    return LaneSpec(
        title=lane.title,
        template=enum_from_pb(lane_pb2.Lane.Template, lane.template, Template),
        priority=lane.priority,
        inputs=json_format.MessageToDict(lane.inputs) if lane.HasField("inputs") else {},
        items=[item_spec_from_pb(i) for i in lane.items],
        tickets=[TicketSpec(t.tracker, t.key, t.url) for t in lane.tickets],
        worker_classes={
            name: getattr(classes, field)
            for field, name in _WORKER_CLASSES
            if getattr(classes, field)
        },
        retry_policy=retry_from_pb(lane.retry_policy),
        review_policy=review_from_pb(lane.review_policy),
        placement=to_dict(lane.placement) if lane.HasField("placement") else None,
        brief=lane.brief,
        budget=lane_budget_from_pb(lane.budget) if lane.HasField("budget") else None,
    )


_ATTEMPT = ToPb(
    lane_pb2.Attempt,
    # Never the token (nor its hash) and never the checkpoint body.
    plain=(
        "lease_id",
        "item_id",
        "attempt",
        "worker_id",
        "principal",
        "lease_seconds",
        "progress",
        "continues_lease_id",
        "counted",
    ),
    enums=("status",),
    times=("lease_expire_time", "create_time", "start_time", "end_time", "deadline_time"),
)
# What an item shows both its readers and the worker that leases it (besides its kind).
ITEM_SHOWN = (
    "item_id",
    "lane_id",
    "key",
    "worker_class",
    "title",
    "brief",
    "exclusive_key",
    "action_classes",
)
_ITEM = ToPb(
    lane_pb2.Item,
    # Never the inputs.
    plain=(
        *ITEM_SHOWN,
        "depends_on",
        "priority",
        "needs_human",
        "requires_approval",
        "attempt_count",
        "stop_reason",
        "current_lease_id",
    ),
    enums=("kind", "state", "dead_letter_reason"),
    times=("not_before", "create_time", "update_time"),
)
_LANE = ToPb(
    lane_pb2.Lane,
    # Never the inputs.
    plain=(
        "lane_id",
        "coordinator_id",
        "title",
        "priority",
        "paused",
        "brief",
        "fail_rounds",
        "close_reason",
    ),
    enums=("template", "state"),
    times=("create_time", "update_time"),
)
_BLOCKER = ToPb(
    lane_pb2.Blocker, plain=("blocker_id", "reason", "open"), times=("create_time", "resolve_time")
)
_TICKET = ToPb(lane_pb2.Ticket, plain=("tracker", "key", "url"), times=("observe_time",))


# How each editable field of a lane is read from an UpdateLane body (a new field: one more
# entry, and one in LANE_EDIT_FIELDS). ``etag`` may be named too: it only guards the update.
_LANE_EDIT_READERS: dict[str, Callable[[lane_pb2.Lane], Any]] = {
    "title": lambda lane: lane.title,
    "priority": lambda lane: lane.priority,
    # A budget named and left out of the body: removed (UNSET_BUDGET).
    "budget": lambda lane: (
        (lane_budget_from_pb(lane.budget) or UNSET_BUDGET)
        if lane.HasField("budget")
        else UNSET_BUDGET
    ),
}


def lane_edit_from_pb(lane: lane_pb2.Lane, paths: Sequence[str]) -> LaneEdit:
    """The edit an UpdateLane body and its update mask ``paths`` ask for; a path naming no
    editable field is INVALID_ARGUMENT on ``update_mask``."""
    refused = [p for p in paths if p not in _LANE_EDIT_READERS and p != "etag"]
    if refused:
        editable = ", ".join(sorted(_LANE_EDIT_READERS))
        raise InvalidArgument.single(
            "update_mask", f"names no editable field: {', '.join(refused)} (editable: {editable})"
        )
    values = {name: read(lane) for name, read in _LANE_EDIT_READERS.items() if name in paths}
    if "title" in values and not values["title"]:
        raise InvalidArgument.single("lane.title", "is required")
    return LaneEdit(**values)


# Run identities already converted, by their stored document's (sorted, typed) items: a worker
# loop's leases share one, and a batch's answer would otherwise convert it once per entry.
_RUN_IDENTITIES: dict[tuple[tuple[str, type, Any], ...], lane_pb2.RunIdentity] = {}
_RUN_IDENTITIES_MAX = 1024


def _run_identity_pb(stored: Mapping[str, Any]) -> lane_pb2.RunIdentity:
    """The message of a stored run identity; converted once per distinct document (the
    message is only ever copied into the attempt's, never changed)."""
    key = tuple(sorted((name, type(value), value) for name, value in stored.items()))
    try:
        found = _RUN_IDENTITIES.get(key)
    except TypeError:  # a value that is not hashable: not a valid run identity anyway
        return run_identity_to_pb(RunIdentity.from_json(stored))
    if found is None:
        found = run_identity_to_pb(RunIdentity.from_json(stored))  # an unreadable one raises
        if len(_RUN_IDENTITIES) >= _RUN_IDENTITIES_MAX:
            _RUN_IDENTITIES.clear()
        _RUN_IDENTITIES[key] = found
    return found


def attempt_to_pb(a: Attempt, bodies: bool | None = None) -> lane_pb2.Attempt:
    """An attempt as readers see it: never its token; its checkpoint body only when
    ``bodies`` (``auth.may_read_bodies``), a marker that there is one when ``bodies`` is False,
    neither when it is None (views)."""
    out = _ATTEMPT(
        a,
        run_identity=_run_identity_pb(a.run_identity) if a.run_identity else None,
        error=failure_to_pb(Failure.from_json(a.error)) if a.error else None,
        usage=usage_to_pb(Usage.from_json(a.usage)) if a.usage else None,
    )
    if a.checkpoint:
        if bodies:
            out.checkpoint.CopyFrom(checkpoint_to_pb(Checkpoint.from_json(a.checkpoint)))
        elif bodies is False:
            out.checkpoint_redacted = True
    return out


def _private_inputs(out: Any, inputs: Any, bodies: bool | None) -> None:
    """The inputs of a lane or item on ``out``: themselves when ``bodies``, a marker that there
    are some when ``bodies`` is False, nothing when it is None (views)."""
    if not inputs:
        return
    if bodies:
        out.inputs.CopyFrom(struct(inputs))
    elif bodies is False:
        out.inputs_redacted = True


def item_to_pb(
    item: Item,
    attempts: Sequence[Attempt] = (),
    around: Surroundings | None = None,
    usage: UsageTotal | None = None,
    bodies: bool | None = None,
) -> lane_pb2.Item:
    """An item as readers see it: its inputs and checkpoints only for those who may read
    them (``bodies``, see :func:`attempt_to_pb`)."""
    out = _ITEM(
        item,
        retry_policy=retry_to_pb(item.retry_policy) if not item.retry_policy.is_empty() else None,
        attempts=[attempt_to_pb(a, bodies) for a in attempts],
        next_action=rules.item_next_action(item, around),
        evidence=evidence_to_pb(Evidence.from_json(item.evidence)) if item.evidence else None,
        last_error=failure_to_pb(Failure.from_json(item.last_error)) if item.last_error else None,
    )
    placement_to_pb(item.placement, out.placement)
    if item.max_run_seconds is not None:
        out.max_run_duration.FromSeconds(item.max_run_seconds)
    _private_inputs(out, item.inputs, bodies)
    if usage is not None:
        out.usage.CopyFrom(usage_total_to_pb(usage))
        out.usage.key = ""
    return out


def lane_to_pb(detail: LaneDetail) -> lane_pb2.Lane:
    """A lane with its items, blockers and tickets; inputs and checkpoints only for those
    who may read them (``detail.bodies``, decided by GetLane)."""
    lane = detail.lane
    classes = lane.worker_classes
    out = _LANE(
        lane,
        next_action=rules.lane_next_action(
            lane, detail.items, detail.open_blockers, detail.surroundings
        ),
        items=[
            item_to_pb(
                i,
                detail.attempts.get(i.item_id, ()),
                detail.surroundings,
                detail.usage.get(i.item_id),
                detail.bodies,
            )
            for i in detail.items
        ],
        retry_policy=retry_to_pb(lane.retry_policy) if not lane.retry_policy.is_empty() else None,
        review_policy=review_to_pb(lane.review_policy)
        if lane.review_policy != ReviewPolicy()
        else None,
        blockers=[_BLOCKER(b) for b in detail.blockers],
        tickets=[_TICKET(t, state=t.state or None) for t in detail.tickets],
        etag=str(lane.version),
        receipt=receipt_to_pb(Receipt.from_json(lane.receipt)) if lane.receipt else None,
        budget=lane_budget_to_pb(lane.budget),
    )
    if classes:
        out.worker_classes.CopyFrom(
            lane_pb2.Lane.WorkerClasses(
                **{field: classes.get(name, "") for field, name in _WORKER_CLASSES}
            )
        )
    placement_to_pb(lane.placement, out.placement)
    _private_inputs(out, lane.inputs, detail.bodies)
    spent = detail.usage.get(lane.lane_id)
    if spent is not None:
        out.usage.CopyFrom(usage_total_to_pb(spent))
        out.usage.key = ""
    return out


def item_detail_to_pb(detail: ItemDetail) -> lane_pb2.Item:
    return item_to_pb(
        detail.item, detail.attempts, detail.surroundings, detail.usage, detail.bodies
    )
