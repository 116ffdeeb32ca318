"""Protobuf ↔ domain mapping. Private fields (inputs, tokens, checkpoints) are dropped here on
the way out, except where a worker receives its own lease."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

from google.protobuf import duration_pb2, json_format, struct_pb2, timestamp_pb2
from google.protobuf.message import Message

from workcoord.api.v1 import (
    admin_pb2,
    event_pb2,
    lane_pb2,
    maintenance_pb2,
    policy_pb2,
    recovery_pb2,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.model import (
    Attempt,
    Coordinator,
    Escalation,
    Event,
    Item,
    ItemKind,
    JsonObject,
    OnPass,
    PendingAction,
    RetryPolicy,
    ReviewPolicy,
    Template,
    Worker,
)
from workcoord.coordinator.domain.ports import Leadership, OrgRecord, UserRecord, WorkKeyRecord
from workcoord.coordinator.domain.specs import (
    Artifact,
    CapacityEntries,
    Checkpoint,
    CheckResult,
    CoordinatorView,
    Digest,
    Evidence,
    Explanation,
    Failure,
    GrantedLease,
    ItemDetail,
    ItemSpec,
    LaneDetail,
    LaneSpec,
    LeaseAsk,
    MaintenanceReport,
    Page,
    PlatformSettings,
    Receipt,
    RunIdentity,
    TicketSpec,
    Verdict,
)
from workcoord.kit.errors import InvalidArgument

_Response = TypeVar("_Response", bound=Message)
_Record = TypeVar("_Record")

# ------------------------------------------------------------------ scalars


@overload
def ts(value: datetime) -> timestamp_pb2.Timestamp: ...
@overload
def ts(value: None) -> None: ...
@overload
def ts(value: datetime | None) -> timestamp_pb2.Timestamp | None: ...


def ts(value: datetime | None) -> timestamp_pb2.Timestamp | None:
    if value is None:
        return None
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value.astimezone(UTC))
    return out


def from_ts(value: timestamp_pb2.Timestamp) -> datetime:
    return value.ToDatetime(tzinfo=UTC)


def dur(seconds: float) -> duration_pb2.Duration:
    out = duration_pb2.Duration()
    out.FromNanoseconds(round(seconds * 1e9))
    return out


def to_dict(message: Message) -> JsonObject:
    """A message as proto3 JSON with proto field names (how free-form parts are stored)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def from_dict(data: Mapping[str, Any] | None, message: Message) -> Message:
    if data:
        json_format.ParseDict(dict(data), message, ignore_unknown_fields=True)
    return message


def struct(data: Mapping[str, Any] | None) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    if data:
        out.update(dict(data))
    return out


def _set(message: Message, name: str, value: Message | None) -> None:
    if value is not None:
        getattr(message, name).CopyFrom(value)


def page_to_pb(
    response: type[_Response],
    field: str,
    page: Page[_Record],
    to_pb: Callable[[_Record], Message],
) -> _Response:
    """A ``List…`` response: the page's records, mapped by ``to_pb``, in ``field``, and the token
    of the next page."""
    return response(
        **{field: [to_pb(record) for record in page.items]},
        next_page_token=page.next_page_token,
    )


# ------------------------------------------------------------------ policies


def retry_from_pb(policy: policy_pb2.RetryPolicy) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=policy.initial_interval.ToTimedelta().total_seconds()
        if policy.HasField("initial_interval")
        else None,
        backoff_coefficient=policy.backoff_coefficient or None,
        maximum_interval=policy.maximum_interval.ToTimedelta().total_seconds()
        if policy.HasField("maximum_interval")
        else None,
        maximum_attempts=policy.maximum_attempts or None,
    )


def retry_to_pb(policy: RetryPolicy) -> policy_pb2.RetryPolicy:
    out = policy_pb2.RetryPolicy(
        backoff_coefficient=policy.backoff_coefficient or 0.0,
        maximum_attempts=policy.maximum_attempts or 0,
    )
    if policy.initial_interval is not None:
        out.initial_interval.CopyFrom(dur(policy.initial_interval))
    if policy.maximum_interval is not None:
        out.maximum_interval.CopyFrom(dur(policy.maximum_interval))
    return out


def review_from_pb(policy: policy_pb2.ReviewPolicy) -> ReviewPolicy:
    unset = policy.on_pass == policy_pb2.ReviewPolicy.ON_PASS_UNSPECIFIED
    return ReviewPolicy(
        max_fail_rounds=policy.max_fail_rounds or None,
        on_pass=None if unset else OnPass(policy_pb2.ReviewPolicy.OnPass.Name(policy.on_pass)),
        ship_requires_approval=policy.ship_requires_approval
        if policy.HasField("ship_requires_approval")
        else None,
    )


def review_to_pb(policy: ReviewPolicy) -> policy_pb2.ReviewPolicy:
    out = policy_pb2.ReviewPolicy(
        max_fail_rounds=policy.max_fail_rounds or 0,
        on_pass=policy.on_pass.value if policy.on_pass is not None else None,
    )
    if policy.ship_requires_approval is not None:
        out.ship_requires_approval = policy.ship_requires_approval
    return out


# ------------------------------------------------------------------ work coordinators


def coordinator_to_pb(c: Coordinator) -> work_coordinator_pb2.WorkCoordinator:
    out = work_coordinator_pb2.WorkCoordinator(
        coordinator_id=c.coordinator_id,
        scope=c.scope.value,
        org_slug=c.org_slug,
        display_name=c.display_name,
        enabled=c.enabled,
        revision=c.revision,
        class_capacity=c.config.class_capacity,
        retry_policy=retry_to_pb(c.config.retry_policy),
        review_policy=review_to_pb(c.config.review_policy),
        action_policy=policy_pb2.ActionPolicy(
            allowed_action_classes=list(c.config.allowed_action_classes)
        ),
        digest_owner=c.config.digest_owner,
        escalate_after=dur(c.config.escalate_after_seconds),
        parent_coordinator_id=c.config.parent_coordinator_id,
        etag=str(c.config_version),
    )
    _set(out, "create_time", ts(c.create_time))
    _set(out, "update_time", ts(c.update_time))
    return out


_COORDINATOR_FIELDS: dict[str, str] = {
    # proto field → config field
    "class_capacity": "class_capacity",
    "retry_policy": "retry_policy",
    "review_policy": "review_policy",
    "action_policy": "allowed_action_classes",
    "digest_owner": "digest_owner",
    "escalate_after": "escalate_after_seconds",
    "parent_coordinator_id": "parent_coordinator_id",
}


# Top-level fields an update may name besides the configuration (the etag only guards it).
_UPDATABLE = frozenset({"display_name", "enabled", "etag", *_COORDINATOR_FIELDS})
# Fields whose own fields (or map entries) an update mask may name one by one.
_PARTIAL = frozenset({"class_capacity", "retry_policy", "review_policy"})
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
        elif dot and top != "class_capacity":
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
    for path in paths:
        top, _, rest = path.partition(".")
        target = _COORDINATOR_FIELDS.get(top)
        if target is None:
            continue
        if top == "class_capacity" and rest:
            entries[rest] = wc.class_capacity.get(rest)
        elif top == "class_capacity":
            changes[target] = dict(wc.class_capacity)
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
    return changes


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


# ------------------------------------------------------------------ lanes and items


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
    _set(out, "lease_expire_time", ts(a.lease_expire_time))
    _set(out, "create_time", ts(a.create_time))
    _set(out, "start_time", ts(a.start_time))
    _set(out, "end_time", ts(a.end_time))
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
    _set(out, "not_before", ts(item.not_before))
    _set(out, "create_time", ts(item.create_time))
    _set(out, "update_time", ts(item.update_time))
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
        _set(b, "create_time", ts(blocker.create_time))
        _set(b, "resolve_time", ts(blocker.resolve_time))
    for ticket in detail.tickets:
        tk = out.tickets.add(
            tracker=ticket.tracker, key=ticket.key, url=ticket.url, state=ticket.state or None
        )
        _set(tk, "observe_time", ts(ticket.observe_time))
    _set(out, "create_time", ts(lane.create_time))
    _set(out, "update_time", ts(lane.update_time))
    return out


def item_detail_to_pb(detail: ItemDetail) -> lane_pb2.Item:
    return item_to_pb(detail.item, detail.attempts, detail.capacity)


# ------------------------------------------------------------------ what workers report


def run_identity_from_pb(r: lane_pb2.RunIdentity) -> RunIdentity:
    return RunIdentity(
        pid=r.pid,
        agent_id=r.agent_id,
        engine=r.engine,
        account=r.account,
        hostname=r.hostname,
        worktree_path=r.worktree_path,
        branch=r.branch,
        started_at=from_ts(r.started_at) if r.HasField("started_at") else None,
    )


def evidence_from_pb(e: lane_pb2.Evidence) -> Evidence:
    receipt = e.receipt
    return Evidence(
        summary=e.summary,
        links=tuple(e.links),
        artifacts=tuple(Artifact(a.name, a.uri, a.sha256) for a in e.artifacts),
        checks=tuple(
            CheckResult(c.name, lane_pb2.Check.Status.Name(c.status) if c.status else "")
            for c in e.checks
        ),
        verdict=Verdict(lane_pb2.Evidence.Verdict.Name(e.verdict)) if e.verdict else None,
        findings=tuple(e.findings),
        receipt=Receipt(
            environment=receipt.environment,
            version=receipt.version,
            url=receipt.url,
            time=from_ts(receipt.time) if receipt.HasField("time") else None,
        )
        if e.HasField("receipt")
        else None,
    )


def lease_ask_from_pb(request: worker_pb2.LeaseRequest) -> LeaseAsk:
    identity = request.run_identity
    return LeaseAsk(
        worker_id=request.worker_id,
        worker_class=request.worker_class,
        max_items=request.max_items,
        lease_seconds=request.lease_seconds,
        wait_seconds=request.wait_seconds,
        run_identity=run_identity_from_pb(identity) if request.HasField("run_identity") else None,
        request_id=request.request_id,
    )


def checkpoint_from_pb(c: lane_pb2.Checkpoint) -> Checkpoint:
    return Checkpoint(
        summary=c.summary,
        files_changed=tuple(c.files_changed),
        next_action=c.next_action,
        blocked_reason=c.blocked_reason,
    )


def checkpoint_to_pb(c: Checkpoint) -> lane_pb2.Checkpoint:
    return lane_pb2.Checkpoint(
        summary=c.summary,
        files_changed=list(c.files_changed),
        next_action=c.next_action,
        blocked_reason=c.blocked_reason,
    )


def failure_from_pb(e: lane_pb2.ErrorInfo) -> Failure:
    return Failure(message=e.message, type=e.type, retryable=e.retryable)


# ------------------------------------------------------------------ workers and leases


def worker_from_pb(w: worker_pb2.Worker, now: datetime) -> Worker:
    return Worker(
        coordinator_id="",
        worker_id=w.worker_id,
        worker_class=w.worker_class,
        create_time=now,
        observe_time=now,
        capabilities=list(w.capabilities),
        toolchains=dict(w.toolchains),
        labels=dict(w.labels),
        cpu_count=w.cpu_count,
        memory_bytes=w.memory_bytes,
        disk_bytes=w.disk_bytes,
    )


def worker_to_pb(w: Worker, active_leases: int = 0) -> worker_pb2.Worker:
    out = worker_pb2.Worker(
        worker_id=w.worker_id,
        worker_class=w.worker_class,
        capabilities=w.capabilities,
        toolchains=w.toolchains,
        labels=w.labels,
        cpu_count=w.cpu_count,
        memory_bytes=w.memory_bytes,
        disk_bytes=w.disk_bytes,
        principal=w.principal,
        active_leases=active_leases,
    )
    _set(out, "observe_time", ts(w.observe_time))
    _set(out, "create_time", ts(w.create_time))
    if w.fence:
        _set(out, "fence", worker_fence_to_pb(w.fence))
    return out


def worker_fence_to_pb(fence: JsonObject) -> worker_pb2.WorkerFence:
    """A stored fence (see the engine's fences module) as the contract shows it."""
    out = worker_pb2.WorkerFence(
        reason=str(fence.get("reason", "")),
        lease_id=str(fence.get("lease_id", "")),
        item_id=str(fence.get("item_id", "")),
        lane_id=str(fence.get("lane_id", "")),
        exclusive=[str(k) for k in fence.get("exclusive") or []],
    )
    for name, key in (("since", "since"), ("expire_time", "expire_time")):
        if fence.get(key):
            _set(out, name, ts(datetime.fromisoformat(str(fence[key]))))
    return out


def lease_to_pb(granted: GrantedLease) -> worker_pb2.Lease:
    """A granted lease for the worker that holds it: the one place inputs and the token go out."""
    item = granted.item
    inputs = dict(granted.lane.inputs)
    inputs.update(item.inputs)
    leased = worker_pb2.LeasedItem(
        item_id=item.item_id,
        lane_id=item.lane_id,
        key=item.key,
        kind=item.kind.value,
        worker_class=item.worker_class,
        title=item.title,
        brief=item.brief,
        inputs=struct(inputs),
        exclusive_key=item.exclusive_key,
        continues_lease_id=granted.attempt.continues_lease_id,
        action_classes=item.action_classes,
    )
    if item.placement:
        from_dict(item.placement, leased.placement)
    if granted.checkpoint is not None:
        leased.checkpoint.CopyFrom(checkpoint_to_pb(granted.checkpoint))
    out = worker_pb2.Lease(
        lease_id=granted.attempt.lease_id,
        lease_token=granted.lease_token,
        attempt=granted.attempt.attempt,
        item=leased,
        status=granted.attempt.status.value,
    )
    _set(out, "lease_expire_time", ts(granted.attempt.lease_expire_time))
    return out


# ------------------------------------------------------------------ events and reads


def event_to_pb(e: Event) -> event_pb2.Event:
    out = event_pb2.Event(
        revision=e.revision,
        type=e.type.value,
        lane_id=e.lane_id,
        item_id=e.item_id,
        lease_id=e.lease_id,
        actor=e.actor,
        data=struct(e.data),
    )
    _set(out, "time", ts(e.time))
    return out


def explanation_to_pb(x: Explanation) -> work_coordinator_pb2.Explanation:
    out = work_coordinator_pb2.Explanation(
        lane_id=x.lane_id,
        item_id=x.item_id,
        state=x.state,
        next_action=x.next_action,
        attempts=[attempt_to_pb(a) for a in x.attempts],
        events=[event_to_pb(e) for e in x.events],
        items=[explanation_to_pb(i) for i in x.items],
    )
    for gate in x.gates:
        g = out.gates.add(
            gate=gate.gate,
            detail=gate.detail,
            lease_ids=gate.lease_ids,
            counts_toward_escalation=gate.counts_toward_escalation,
        )
        _set(g, "since", ts(gate.since))
    return out


def view_to_pb(view: CoordinatorView) -> work_coordinator_pb2.View:
    out = work_coordinator_pb2.View(
        work_coordinator=coordinator_to_pb(view.coordinator),
        revision=view.revision,
        lanes=[lane_to_pb(d) for d in view.lanes],
        workers=[worker_to_pb(w, view.worker_leases.get(w.worker_id, 0)) for w in view.workers],
        capacity=[
            work_coordinator_pb2.ClassUsage(
                worker_class=u.worker_class,
                in_use=u.in_use,
                capacity=u.capacity,
                lease_ids=u.lease_ids,
                queued=u.queued,
            )
            for u in view.capacity
        ],
        pending_actions=[pending_action_to_pb(a) for a in view.pending_actions],
        escalations=[escalation_to_pb(e) for e in view.escalations],
        next_page_token=view.next_page_token,
    )
    return out


def report_to_pb(r: MaintenanceReport) -> recovery_pb2.MaintenanceReport:
    out = recovery_pb2.MaintenanceReport(
        coordinator_id=r.coordinator_id,
        expired_attempts=r.expired_attempts,
        requeued=r.requeued,
        dead_lettered=r.dead_lettered,
        escalated=r.escalated,
        evicted_workers=r.evicted_workers,
        pending_actions_attempted=r.pending_actions_attempted,
        pending_actions_succeeded=r.pending_actions_succeeded,
        tickets_synced=r.tickets_synced,
        revision=r.revision,
        duration=dur(r.duration_seconds),
        skipped_disabled=r.skipped_disabled,
    )
    _set(out, "start_time", ts(r.start_time))
    return out


def pending_action_to_pb(a: PendingAction) -> work_coordinator_pb2.PendingAction:
    out = work_coordinator_pb2.PendingAction(
        action_id=a.action_id,
        lane_id=a.lane_id,
        kind=a.kind,
        state=a.state.value,
        owner=a.owner,
        attempts=a.attempts,
        last_error=a.last_error,
        resolution=a.resolution,
    )
    if a.ticket_key:
        out.ticket.CopyFrom(lane_pb2.Ticket(tracker=a.ticket_tracker, key=a.ticket_key))
    _set(out, "next_attempt_time", ts(a.next_attempt_time))
    _set(out, "create_time", ts(a.create_time))
    _set(out, "update_time", ts(a.update_time))
    return out


def escalation_to_pb(e: Escalation) -> work_coordinator_pb2.Escalation:
    out = work_coordinator_pb2.Escalation(
        escalation_id=e.escalation_id,
        lane_id=e.lane_id,
        item_id=e.item_id,
        reason=e.reason,
        escalated_to=e.escalated_to,
        open=e.open,
    )
    _set(out, "create_time", ts(e.create_time))
    _set(out, "resolve_time", ts(e.resolve_time))
    return out


def digest_to_pb(digest: Digest) -> work_coordinator_pb2.Digest:
    entries = digest.entries
    out = work_coordinator_pb2.Digest(
        coordinator_id=digest.coordinator_id, day=digest.day, owner=digest.owner
    )
    for e in entries:
        entry = out.entries.add(
            kind=e.kind.value,
            lane_id=e.lane_id,
            item_id=e.item_id,
            action_id=e.action_id,
            reason=e.reason,
        )
        entry.time.CopyFrom(ts(e.time))
    if entries:
        out.update_time.CopyFrom(ts(max(e.time for e in entries)))
    return out


# ------------------------------------------------------------------ administration


def settings_to_pb(settings: PlatformSettings) -> admin_pb2.Settings:
    out = admin_pb2.Settings(work_coordinator_enabled=settings.enabled, etag=str(settings.version))
    out.update_time.CopyFrom(ts(settings.update_time))
    return out


def org_to_pb(org: OrgRecord) -> admin_pb2.Org:
    out = admin_pb2.Org(slug=org.slug, display_name=org.display_name)
    _set(out, "create_time", ts(org.create_time))
    return out


def user_to_pb(user: UserRecord) -> admin_pb2.User:
    out = admin_pb2.User(
        user_id=user.user_id,
        email=user.email,
        display_name=user.display_name,
        platform_admin=user.platform_admin,
        verified=user.verified,
    )
    _set(out, "create_time", ts(user.create_time))
    return out


def work_key_to_pb(key: WorkKeyRecord) -> admin_pb2.WorkKey:
    out = admin_pb2.WorkKey(
        key_id=key.key_id,
        display_name=key.display_name,
        org_slug=key.org_slug,
        coordinator_ids=list(key.coordinator_ids),
        capabilities=list(key.capabilities),
        created_by=key.created_by,
    )
    _set(out, "create_time", ts(key.create_time))
    _set(out, "expire_time", ts(key.expire_time))
    _set(out, "revoke_time", ts(key.revoke_time))
    return out


def principal_to_pb(p: Principal) -> admin_pb2.Principal:
    return admin_pb2.Principal(
        kind=p.kind.value,
        name=p.name,
        id=p.id,
        display_name=p.display_name,
        platform_admin=p.platform_admin,
        memberships=[
            admin_pb2.OrgMember(user_id=p.id, org_slug=slug, role=role.value)
            for slug, role in sorted(p.org_roles.items())
        ],
        capabilities=sorted(c.value for c in p.capabilities),
        coordinator_ids=sorted(p.coordinator_ids),
    )


def leadership_to_pb(leadership: Leadership, held: bool) -> maintenance_pb2.Leadership:
    out = maintenance_pb2.Leadership(
        name=leadership.name, holder_id=leadership.holder_id, held=held, term=leadership.term
    )
    _set(out, "expire_time", ts(leadership.expire_time))
    return out
