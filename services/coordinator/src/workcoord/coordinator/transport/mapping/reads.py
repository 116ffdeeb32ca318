"""Events, explanations, views, maintenance reports, pending actions, escalations and digests."""

from __future__ import annotations

from workcoord.api.v1 import (
    event_pb2,
    lane_pb2,
    recovery_pb2,
    work_coordinator_pb2,
)
from workcoord.coordinator.domain.model import (
    Escalation,
    Event,
    PendingAction,
)
from workcoord.coordinator.domain.specs import (
    CoordinatorView,
    Digest,
    Explanation,
    MaintenanceReport,
)

from .coordinators import coordinator_to_pb
from .lane_cache import LANE_MESSAGES, VIEW_RESPONSES
from .lanes import attempt_to_pb
from .scalars import (
    dur,
    set_message,
    struct,
    ts,
)
from .workers import worker_to_pb


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
    set_message(out, "time", ts(e.time))
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
        set_message(g, "since", ts(gate.since))
    return out


def view_to_pb(view: CoordinatorView) -> work_coordinator_pb2.View:
    """The view as a message. Lanes whose details did not change since the last call reuse
    their conversion."""
    out = work_coordinator_pb2.View()
    view_head_to_pb(view, out)
    out.lanes.extend([LANE_MESSAGES.lane(d) for d in view.lanes])
    return out


def view_head_to_pb(view: CoordinatorView, out: work_coordinator_pb2.View) -> None:
    """Everything of the view but its lanes, into ``out``."""
    out.work_coordinator.CopyFrom(coordinator_to_pb(view.coordinator))
    out.revision = view.revision
    out.workers.extend(
        [worker_to_pb(w, view.worker_leases.get(w.worker_id, 0)) for w in view.workers]
    )
    out.capacity.extend(
        [
            work_coordinator_pb2.ClassUsage(
                worker_class=u.worker_class,
                in_use=u.in_use,
                capacity=u.capacity,
                lease_ids=u.lease_ids,
                queued=u.queued,
            )
            for u in view.capacity
        ]
    )
    out.pending_actions.extend([pending_action_to_pb(a) for a in view.pending_actions])
    out.escalations.extend([escalation_to_pb(e) for e in view.escalations])
    out.next_page_token = view.next_page_token


def view_response(view: CoordinatorView) -> work_coordinator_pb2.GetViewResponse:
    """``GetView``'s answer: the last one of the work coordinator when it is the same (its
    lanes the same cached messages, the rest equal), so an unchanged view is not copied
    again. Treat it as read-only."""
    lanes = [LANE_MESSAGES.lane(d) for d in view.lanes]
    head = work_coordinator_pb2.View()
    view_head_to_pb(view, head)
    return VIEW_RESPONSES.response(view.coordinator.coordinator_id, head, lanes)


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
    set_message(out, "start_time", ts(r.start_time))
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
    set_message(out, "next_attempt_time", ts(a.next_attempt_time))
    set_message(out, "create_time", ts(a.create_time))
    set_message(out, "update_time", ts(a.update_time))
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
    set_message(out, "create_time", ts(e.create_time))
    set_message(out, "resolve_time", ts(e.resolve_time))
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
