"""Lanes, items and attempts: the specs a caller sends, the details it reads back.

Inputs and checkpoints are private and never leave through here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from google.protobuf import json_format

from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.model import (
    Attempt,
    Item,
    ItemKind,
    ReviewPolicy,
    Template,
)
from workcoord.coordinator.domain.specs import (
    ItemDetail,
    ItemSpec,
    LaneDetail,
    LaneSpec,
    TicketSpec,
)

from .scalars import (
    from_dict,
    retry_from_pb,
    retry_to_pb,
    review_from_pb,
    review_to_pb,
    set_message,
    to_dict,
    ts,
)


def item_spec_from_pb(item: lane_pb2.Item) -> ItemSpec:
    kind = lane_pb2.Item.Kind.Name(item.kind)
    return ItemSpec(
        key=item.key,
        kind=None if kind == "KIND_UNSPECIFIED" else ItemKind(kind),
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
    )


def lane_spec_from_pb(lane: lane_pb2.Lane) -> LaneSpec:
    template = lane_pb2.Lane.Template.Name(lane.template)
    classes = lane.worker_classes
    return LaneSpec(
        title=lane.title,
        template=None if template == "TEMPLATE_UNSPECIFIED" else Template(template),
        priority=lane.priority,
        inputs=json_format.MessageToDict(lane.inputs) if lane.HasField("inputs") else {},
        items=[item_spec_from_pb(i) for i in lane.items],
        tickets=[TicketSpec(t.tracker, t.key, t.url) for t in lane.tickets],
        worker_classes={
            name: value
            for name, value in (
                ("BUILD", classes.build),
                ("REVIEW", classes.review),
                ("FIX", classes.fix),
                ("INTEGRATE", classes.integrate),
                ("SHIP", classes.ship),
            )
            if value
        },
        retry_policy=retry_from_pb(lane.retry_policy),
        review_policy=review_from_pb(lane.review_policy),
        placement=to_dict(lane.placement) if lane.HasField("placement") else None,
        brief=lane.brief,
    )


def attempt_to_pb(a: Attempt) -> lane_pb2.Attempt:
    """An attempt as readers see it: never its token, never its checkpoint body."""
    out = lane_pb2.Attempt(
        lease_id=a.lease_id,
        item_id=a.item_id,
        attempt=a.attempt,
        status=a.status.value,
        worker_id=a.worker_id,
        principal=a.principal,
        lease_seconds=a.lease_seconds,
        progress=a.progress,
        continues_lease_id=a.continues_lease_id,
        counted=a.counted,
    )
    if a.run_identity:
        from_dict(a.run_identity, out.run_identity)
    if a.error:
        from_dict(a.error, out.error)
    set_message(out, "lease_expire_time", ts(a.lease_expire_time))
    set_message(out, "create_time", ts(a.create_time))
    set_message(out, "start_time", ts(a.start_time))
    set_message(out, "end_time", ts(a.end_time))
    return out


def item_to_pb(
    item: Item,
    attempts: Sequence[Attempt] = (),
    capacity: Mapping[str, tuple[int, int]] | None = None,
) -> lane_pb2.Item:
    """An item as readers see it: inputs are private and left out."""
    out = lane_pb2.Item(
        item_id=item.item_id,
        lane_id=item.lane_id,
        key=item.key,
        kind=item.kind.value,
        worker_class=item.worker_class,
        title=item.title,
        brief=item.brief,
        depends_on=item.depends_on,
        exclusive_key=item.exclusive_key,
        priority=item.priority,
        retry_policy=retry_to_pb(item.retry_policy) if not item.retry_policy.is_empty() else None,
        action_classes=item.action_classes,
        needs_human=item.needs_human,
        requires_approval=item.requires_approval,
        state=item.state.value,
        attempt_count=item.attempt_count,
        stop_reason=item.stop_reason,
        attempts=[attempt_to_pb(a) for a in attempts],
        next_action=rules.item_next_action(item, capacity),
        current_lease_id=item.current_lease_id,
        dead_letter_reason=item.dead_letter_reason.value if item.dead_letter_reason else None,
    )
    if item.placement:
        from_dict(item.placement, out.placement)
    if item.evidence:
        from_dict(item.evidence, out.evidence)
    if item.last_error:
        from_dict(item.last_error, out.last_error)
    set_message(out, "not_before", ts(item.not_before))
    set_message(out, "create_time", ts(item.create_time))
    set_message(out, "update_time", ts(item.update_time))
    return out


def lane_to_pb(detail: LaneDetail) -> lane_pb2.Lane:
    """A lane with its items, blockers and tickets; inputs are private and left out."""
    lane = detail.lane
    classes = lane.worker_classes
    out = lane_pb2.Lane(
        lane_id=lane.lane_id,
        coordinator_id=lane.coordinator_id,
        title=lane.title,
        template=lane.template.value,
        priority=lane.priority,
        state=lane.state.value,
        next_action=rules.lane_next_action(
            lane, detail.items, detail.open_blockers, detail.capacity
        ),
        items=[
            item_to_pb(i, detail.attempts.get(i.item_id, ()), detail.capacity) for i in detail.items
        ],
        paused=lane.paused,
        retry_policy=retry_to_pb(lane.retry_policy) if not lane.retry_policy.is_empty() else None,
        review_policy=review_to_pb(lane.review_policy)
        if lane.review_policy != ReviewPolicy()
        else None,
        brief=lane.brief,
        fail_rounds=lane.fail_rounds,
        close_reason=lane.close_reason,
        etag=str(lane.version),
    )
    if classes:
        out.worker_classes.CopyFrom(
            lane_pb2.Lane.WorkerClasses(
                build=classes.get("BUILD", ""),
                review=classes.get("REVIEW", ""),
                fix=classes.get("FIX", ""),
                integrate=classes.get("INTEGRATE", ""),
                ship=classes.get("SHIP", ""),
            )
        )
    if lane.placement:
        from_dict(lane.placement, out.placement)
    if lane.receipt:
        from_dict(lane.receipt, out.receipt)
    for blocker in detail.blockers:
        b = out.blockers.add(
            blocker_id=blocker.blocker_id, reason=blocker.reason, open=blocker.open
        )
        set_message(b, "create_time", ts(blocker.create_time))
        set_message(b, "resolve_time", ts(blocker.resolve_time))
    for ticket in detail.tickets:
        tk = out.tickets.add(
            tracker=ticket.tracker, key=ticket.key, url=ticket.url, state=ticket.state or None
        )
        set_message(tk, "observe_time", ts(ticket.observe_time))
    set_message(out, "create_time", ts(lane.create_time))
    set_message(out, "update_time", ts(lane.update_time))
    return out


def item_detail_to_pb(detail: ItemDetail) -> lane_pb2.Item:
    return item_to_pb(detail.item, detail.attempts, detail.capacity)
