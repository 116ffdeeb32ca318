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
    UsageTotal,
)
from workcoord.coordinator.domain.results import (
    CoordinatorView,
    Digest,
    Explanation,
    MaintenanceReport,
)
from workcoord.kit.wire import MAINTENANCE_COUNTERS

from .coordinators import coordinator_to_pb
from .fields import ToPb
from .lane_cache import LANE_MESSAGES, VIEW_RESPONSES
from .lanes import attempt_to_pb
from .reports import usage_total_to_pb
from .scalars import dur, struct, ts
from .trackers import tracker_connection_to_pb
from .workers import worker_to_pb

_EVENT = ToPb(
    event_pb2.Event,
    plain=("revision", "lane_id", "item_id", "lease_id", "actor"),
    enums=("type",),
    times=("time",),
)
_EXPLANATION = ToPb(
    work_coordinator_pb2.Explanation, plain=("lane_id", "item_id", "state", "next_action")
)
_GATE = ToPb(
    work_coordinator_pb2.Gate,
    plain=("gate", "detail", "lease_ids", "counts_toward_escalation"),
    times=("since",),
)
_CLASS_USAGE = ToPb(
    work_coordinator_pb2.ClassUsage,
    plain=("worker_class", "in_use", "capacity", "lease_ids", "queued"),
)
_REPORT = ToPb(
    recovery_pb2.MaintenanceReport,
    plain=("coordinator_id", *MAINTENANCE_COUNTERS, "revision", "skipped_disabled"),
    times=("start_time",),
)
_PENDING_ACTION = ToPb(
    work_coordinator_pb2.PendingAction,
    plain=("action_id", "lane_id", "kind", "owner", "attempts", "last_error", "resolution"),
    enums=("state",),
    times=("next_attempt_time", "create_time", "update_time"),
)
_ESCALATION = ToPb(
    work_coordinator_pb2.Escalation,
    plain=("escalation_id", "lane_id", "item_id", "reason", "escalated_to", "open"),
    times=("create_time", "resolve_time"),
)
_DIGEST_ENTRY = ToPb(
    work_coordinator_pb2.DigestEntry,
    plain=("lane_id", "item_id", "action_id", "reason"),
    enums=("kind",),
    times=("time",),
)


def event_to_pb(e: Event) -> event_pb2.Event:
    return _EVENT(e, data=struct(e.data))


def explanation_to_pb(x: Explanation) -> work_coordinator_pb2.Explanation:
    return _EXPLANATION(
        x,
        attempts=[attempt_to_pb(a) for a in x.attempts],
        events=[event_to_pb(e) for e in x.events],
        items=[explanation_to_pb(i) for i in x.items],
        gates=[_GATE(g) for g in x.gates],
        stuck_closures=[
            work_coordinator_pb2.StuckClosure(
                pending_action=pending_action_to_pb(c.action),
                tracker_connection=(
                    tracker_connection_to_pb(c.connection) if c.connection else None
                ),
            )
            for c in x.stuck_closures
        ],
        usage=_spend(x.usage, ""),
        day_usage=_spend(x.day_usage, x.day_usage.day if x.day_usage else ""),
    )


def _spend(total: UsageTotal | None, key: str) -> lane_pb2.UsageTotal | None:
    """``total`` as a message keyed ``key`` (None when there is no total)."""
    if total is None:
        return None
    out = usage_total_to_pb(total)
    out.key = key
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
    out.capacity.extend([_CLASS_USAGE(u) for u in view.capacity])
    out.pending_actions.extend([pending_action_to_pb(a) for a in view.pending_actions])
    out.escalations.extend([escalation_to_pb(e) for e in view.escalations])
    out.next_page_token = view.next_page_token
    if view.day_usage is not None:
        out.day_usage.CopyFrom(usage_total_to_pb(view.day_usage))
        out.day_usage.key = view.day_usage.day
    out.lane_usage.extend(usage_total_to_pb(lane) for lane in view.lane_usage)


def view_response(view: CoordinatorView) -> work_coordinator_pb2.GetViewResponse:
    """``GetView``'s answer: the last one of the work coordinator when it is the same (its
    lanes the same cached messages, the rest equal), so an unchanged view is not copied
    again. Treat it as read-only."""
    lanes = [LANE_MESSAGES.lane(d) for d in view.lanes]
    head = work_coordinator_pb2.View()
    view_head_to_pb(view, head)
    return VIEW_RESPONSES.response(view.coordinator.coordinator_id, head, lanes)


def report_to_pb(r: MaintenanceReport) -> recovery_pb2.MaintenanceReport:
    failures = [
        recovery_pb2.StepFailure(step=f.step, failures=f.failures, error=f.error)
        for f in r.step_failures
    ]
    return _REPORT(r, duration=dur(r.duration_seconds), step_failures=failures)


def pending_action_to_pb(a: PendingAction) -> work_coordinator_pb2.PendingAction:
    ticket = lane_pb2.Ticket(tracker=a.ticket_tracker, key=a.ticket_key) if a.ticket_key else None
    return _PENDING_ACTION(a, ticket=ticket)


def escalation_to_pb(e: Escalation) -> work_coordinator_pb2.Escalation:
    return _ESCALATION(e)


def digest_to_pb(digest: Digest) -> work_coordinator_pb2.Digest:
    entries = digest.entries
    out = work_coordinator_pb2.Digest(
        coordinator_id=digest.coordinator_id,
        day=digest.day,
        owner=digest.owner,
        owner_display_name=digest.owner_display_name,
    )
    out.entries.extend([_DIGEST_ENTRY(e) for e in entries])
    if entries:
        out.update_time.CopyFrom(ts(max(e.time for e in entries)))
    if digest.usage is not None:
        out.usage.CopyFrom(usage_total_to_pb(digest.usage))
    out.top_lanes.extend(usage_total_to_pb(lane) for lane in digest.top_lanes)
    return out
