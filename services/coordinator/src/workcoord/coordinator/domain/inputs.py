"""One input per engine command (temporalio's ``*Input`` style): what a caller asks for,
by name. A command takes ``(principal, its input)``; adding a field to a command touches its
input, the code that fills it in, and the code that reads it, nothing in between. Transport
builds them from the request; tests and in-process callers build them by name.

Reads that name one or two things (``get_lane(principal, coordinator_id, lane_id)``) keep
plain arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from .auth import Capability, OrgRole
from .budgets import BudgetLimit
from .grants import GrantPermission
from .model import LaneState, PendingActionState, Ticket, Worker
from .specs import (
    Checkpoint,
    CoordinatorSpec,
    Decision,
    Evidence,
    Failure,
    ItemSpec,
    LaneSpec,
    LeaseAsk,
    RunIdentity,
    Usage,
)

# --- lanes, items, leases and attempts ---


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateCoordinatorInput:
    """Create a work coordinator from ``spec``; ``request_id`` makes a retry answer it again."""

    spec: CoordinatorSpec
    request_id: str = ""
    fingerprint: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateCoordinatorInput:
    """Reconfigure a work coordinator; a non-empty ``etag`` must match its config version."""

    coordinator_id: str
    spec: CoordinatorSpec
    etag: str = ""
    # The day budget's limits to change (``cost_micros``, ``tokens``; a None value removes the
    # limit); None: the budget does not change. Humans only.
    budget: dict[str, int | None] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ListCoordinatorsInput:
    """A page of the work coordinators the caller may read, of one org if ``org_slug``."""

    org_slug: str = ""
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateLaneInput:
    """Create a lane from ``spec``; ``request_id`` makes a retry answer the same lane."""

    coordinator_id: str
    spec: LaneSpec
    request_id: str = ""
    fingerprint: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateItemInput:
    """Add an item to a CUSTOM lane; ``request_id`` makes a retry answer the same item."""

    coordinator_id: str
    lane_id: str
    spec: ItemSpec
    request_id: str = ""
    fingerprint: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListLanesInput:
    """A page of a work coordinator's lanes, newest first, of one state if ``state``."""

    coordinator_id: str
    state: LaneState | None = None
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GetItemInput:
    """One item of one lane, with its attempts."""

    coordinator_id: str
    lane_id: str
    item_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LaneEdit:
    """What a human edit of a lane changes: each field None unless it is to change. A new
    editable field is one more entry here, in ``LANE_EDIT_FIELDS`` and in the engine's
    ``_apply_lane_edit`` (and in ``HUMAN_ONLY_LANE_FIELDS`` if a work key may not change it)."""

    title: str | None = None
    priority: int | None = None
    # The new budget; :data:`UNSET_BUDGET` (no limit at all) removes it.
    budget: BudgetLimit | None = None

    def fields(self) -> frozenset[str]:
        """The names of the fields to change."""
        return frozenset(name for name in LANE_EDIT_FIELDS if getattr(self, name) is not None)


#: The fields of a lane an edit may change (its update mask's entries).
LANE_EDIT_FIELDS = ("title", "priority", "budget")
#: A lane edit's budget that removes the lane's budget.
UNSET_BUDGET = BudgetLimit()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateLaneInput:
    """Edit a lane; a non-empty ``etag`` must match its version."""

    coordinator_id: str
    lane_id: str
    edit: LaneEdit
    etag: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PauseLaneInput:
    """Pause a lane (``pause``) or resume it, for ``reason``."""

    coordinator_id: str
    lane_id: str
    pause: bool
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelLaneInput:
    """Cancel a lane and what is still open in it."""

    coordinator_id: str
    lane_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AddBlockerInput:
    """Block a lane for ``reason`` until the blocker is resolved."""

    coordinator_id: str
    lane_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveBlockerInput:
    """Resolve one blocker of a lane."""

    coordinator_id: str
    lane_id: str
    blocker_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkTicketInput:
    """Link a tracker ticket to a lane (closed when the lane goes LIVE)."""

    coordinator_id: str
    lane_id: str
    ticket: Ticket


@dataclass(frozen=True, slots=True, kw_only=True)
class DecideItemInput:
    """Approve, deny, resume, retry or cancel one item, with a note."""

    coordinator_id: str
    lane_id: str
    item_id: str
    decision: Decision
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportWorkerInput:
    """Register a worker, or refresh what it reports."""

    coordinator_id: str
    worker: Worker


@dataclass(frozen=True, slots=True, kw_only=True)
class ListWorkersInput:
    """A page of a work coordinator's workers."""

    coordinator_id: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetWorkerInput:
    """Forget a worker that holds no live lease."""

    coordinator_id: str
    worker_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseInput:
    """Lease ready items of a work coordinator as ``ask`` says (and long-poll for them)."""

    coordinator_id: str
    ask: LeaseAsk


@dataclass(frozen=True, slots=True, kw_only=True)
class OnLeaseInput:
    """What every write on a held lease names: the lease and its secret token."""

    coordinator_id: str
    lease_id: str
    lease_token: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StartInput(OnLeaseInput):
    """Start a leased attempt with the run identity of the process doing it."""

    run_identity: RunIdentity


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatInput(OnLeaseInput):
    """Extend a lease by its duration from now, noting ``progress`` and the attempt's
    ``usage`` so far if given."""

    progress: str = ""
    usage: Usage | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteInput(OnLeaseInput):
    """Complete a running attempt with its evidence."""

    evidence: Evidence
    usage: Usage | None = None  # the attempt's final totals, if reported


@dataclass(frozen=True, slots=True, kw_only=True)
class FailInput(OnLeaseInput):
    """Fail an attempt with its error (retried or dead-lettered)."""

    error: Failure
    usage: Usage | None = None  # the attempt's final totals, if reported


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointInput(OnLeaseInput):
    """End an attempt with a continuation for the item's next lease."""

    checkpoint: Checkpoint
    usage: Usage | None = None  # the attempt's final totals, if reported


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseInput(OnLeaseInput):
    """Give a leased item back unfinished, for ``reason``."""

    reason: str = ""


_OnLease = TypeVar("_OnLease", bound=OnLeaseInput)


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchInput(Generic[_OnLease]):
    """Many writes of one kind on leases of one work coordinator, each fenced and answered on
    its own (``entries`` name distinct leases; transport refuses the envelope otherwise)."""

    coordinator_id: str
    entries: tuple[_OnLease, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListEventsInput:
    """Events after ``since_revision`` (or the page token), of one lane or item if named."""

    coordinator_id: str
    since_revision: int = 0
    page_size: int = 0
    page_token: str = ""
    lane_id: str = ""
    item_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExplainInput:
    """Why a lane, or an item, is where it is: give a ``lane_id`` or an ``item_id``."""

    coordinator_id: str
    lane_id: str = ""
    item_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GetUsageInput:
    """What a work coordinator's attempts spent on the UTC ``day`` (``YYYY-MM-DD``; "" for all
    time), of one lane if ``lane_id``, grouped by ``group_by`` (LANE, WORKER_CLASS, MODEL or
    DAY: the 14 days up to ``day`` or today) if given."""

    coordinator_id: str
    day: str = ""
    lane_id: str = ""
    group_by: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GetViewInput:
    """A page of a work coordinator's view (its lanes and their items)."""

    coordinator_id: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPendingActionsInput:
    """A page of a work coordinator's pending actions, of one state if ``state``."""

    coordinator_id: str
    state: PendingActionState | None = None
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvePendingActionInput:
    """A human resolves an open pending action by hand."""

    coordinator_id: str
    action_id: str
    resolution: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunMaintenanceInput:
    """One recovery pass over a work coordinator, ending leases ``batch_size`` at a time."""

    coordinator_id: str
    batch_size: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AcquireLeadershipInput:
    """Take or renew the named leadership for ``holder_id``."""

    name: str
    holder_id: str
    lease_seconds: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseLeadershipInput:
    """Give up the named leadership, if ``holder_id`` holds it."""

    name: str
    holder_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkMailSentInput:
    """Move the digest owner's mail marks: the digest of ``digest_day`` went out (""
    none), the HUMAN_NEEDED events through ``human_needed_revision`` were handled (0 none),
    with a mail (``mailed``) or needing none."""

    coordinator_id: str
    digest_day: str = ""
    human_needed_revision: int = 0
    mailed: bool = True


# --- tenancy: orgs, users, members, keys, grants, sessions ---


@dataclass(frozen=True, slots=True)
class CreateUserInput:
    """A user to provision (platform admins only); ``email`` is kept lower-cased."""

    email: str
    display_name: str = ""
    platform_admin: bool = False
    verified: bool = False


@dataclass(frozen=True, slots=True)
class AddOrgMemberInput:
    """Make ``user_id`` a member of ``org_slug`` with ``role`` (or change its role)."""

    org_slug: str
    user_id: str
    role: OrgRole


@dataclass(frozen=True, slots=True)
class ListOrgMembersInput:
    org_slug: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True)
class CreateUserTokenInput:
    """A new admin API token of ``user_id``; ``expire_time`` None never expires."""

    user_id: str
    display_name: str = ""
    expire_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class CreateWorkKeyInput:
    """A new work key over ``coordinator_ids`` with ``capabilities``. ``org_slug`` may be left
    empty: the key belongs to the one org of its work coordinators."""

    display_name: str
    coordinator_ids: tuple[str, ...]
    capabilities: tuple[Capability, ...]
    org_slug: str = ""
    expire_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class ListWorkKeysInput:
    """Work keys of ``org_slug`` (empty: every org's, for a platform admin)."""

    org_slug: str = ""
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True)
class CreateGrantInput:
    """The child ``coordinator_id`` grants its configured parent ``permissions`` until
    ``expire_time`` (required). ``request_id`` makes a retry answer the same grant;
    ``fingerprint`` is the request's, to refuse a reused id with other contents."""

    coordinator_id: str
    parent_coordinator_id: str
    permissions: tuple[GrantPermission, ...]
    expire_time: datetime | None
    request_id: str = ""
    fingerprint: str = ""


@dataclass(frozen=True, slots=True)
class ListGrantsInput:
    coordinator_id: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True)
class AssignChildWorkInput:
    """The parent ``parent_id`` places item ``item_id`` of its child on ``worker_id``."""

    parent_id: str
    child_id: str
    lane_id: str
    item_id: str
    worker_id: str


@dataclass(frozen=True, slots=True)
class SteerChildWorkInput:
    """The parent ``parent_id`` sets the priority of a child's lane and its queued items."""

    parent_id: str
    child_id: str
    lane_id: str
    priority: int


@dataclass(frozen=True, slots=True)
class EscalateChildWorkInput:
    """The parent ``parent_id`` escalates a child's lane (or one of its items: ``item_id``)
    to the child's digest owner."""

    parent_id: str
    child_id: str
    lane_id: str
    reason: str
    item_id: str = ""


# --- tracker connections ---


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTrackerConnectionInput:
    """Connect work coordinator ``coordinator_id`` to a tracker: ``credential`` reaches
    ``projects`` at ``base_url`` (empty: the tracker's public service). ``done_status`` is the
    status (by name) a Jira ticket is moved to when it closes."""

    coordinator_id: str
    tracker: str
    credential: str
    projects: tuple[str, ...]
    base_url: str = ""
    done_status: str = ""


@dataclass(frozen=True, slots=True)
class ListTrackerConnectionsInput:
    coordinator_id: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateTrackerConnectionInput:
    """Change the fields ``update_mask`` names (``credential`` rotates it)."""

    coordinator_id: str
    tracker_id: str
    update_mask: tuple[str, ...]
    credential: str = ""
    projects: tuple[str, ...] = ()
    base_url: str = ""
    done_status: str = ""


@dataclass(frozen=True, slots=True)
class DeleteTrackerConnectionInput:
    coordinator_id: str
    tracker_id: str


# --- webhooks ---


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateWebhookInput:
    """A webhook of ``coordinator_id``: ``event_types`` (names or groups) POSTed to ``url``."""

    coordinator_id: str
    url: str
    event_types: tuple[str, ...]
    format: str = ""
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class ListWebhooksInput:
    coordinator_id: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateWebhookInput:
    """Change the fields ``update_mask`` names (url, event_types, format, enabled)."""

    coordinator_id: str
    webhook_id: str
    update_mask: tuple[str, ...]
    url: str = ""
    event_types: tuple[str, ...] = ()
    format: str = ""
    enabled: bool = False


@dataclass(frozen=True, slots=True)
class WebhookRef:
    """One webhook (DeleteWebhook) or, with ``delivery_id``, one delivery (Redeliver)."""

    coordinator_id: str
    webhook_id: str
    delivery_id: str = ""


@dataclass(frozen=True, slots=True)
class ListDeliveriesInput:
    coordinator_id: str
    webhook_id: str
    page_size: int = 0
    page_token: str = ""
