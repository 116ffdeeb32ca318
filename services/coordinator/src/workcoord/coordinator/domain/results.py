"""What the engine's commands and reads answer, as plain dataclasses: a lane or item with its
details, a granted lease, an explanation, the view, a page, a maintenance report, issued
secrets (shown once), the platform's settings.

The inputs the commands take are in :mod:`.specs` and :mod:`.inputs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from workcoord.kit.errors import WorkcoordError

from .auth import Principal
from .budgets import BudgetLimit, BudgetScope, Spend, SpentBudget
from .grants import SessionRecord, TokenRecord
from .leasability import Surroundings
from .model import (
    Attempt,
    Blocker,
    Coordinator,
    DigestEntry,
    Escalation,
    Event,
    Item,
    Lane,
    PendingAction,
    Ticket,
    UsageTotal,
    Worker,
)
from .ports import Leadership, WorkKeyRecord
from .specs import Checkpoint
from .stops import DeadlineInfo, Stop
from .tickets import TrackerConnection

_T = TypeVar("_T")


@dataclass(slots=True)
class LaneDetail:
    lane: Lane
    items: list[Item]
    blockers: list[Blocker] = field(default_factory=list)
    tickets: list[Ticket] = field(default_factory=list)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    # What the labels of its queued items read besides them (capacity in use, key holders,
    # now); None: not read (the labels show only the lane's hold).
    surroundings: Surroundings | None = None
    # What the lane (by its id) and its items (by theirs) spent, all time; filled by GetLane.
    usage: dict[str, UsageTotal] = field(default_factory=dict)
    # Whether the reader may read the inputs and checkpoint bodies (``auth.may_read_bodies``),
    # decided by GetLane; None: not decided (views, lists), neither the bodies nor a marker.
    bodies: bool | None = None

    @property
    def open_blockers(self) -> int:
        return sum(1 for b in self.blockers if b.open)


@dataclass(slots=True)
class ItemDetail:
    item: Item
    attempts: list[Attempt]
    surroundings: Surroundings | None = None  # as LaneDetail's
    usage: UsageTotal | None = None  # what the item spent, all time
    bodies: bool | None = None  # as LaneDetail's, decided by GetItem


@dataclass(slots=True)
class GrantedLease:
    attempt: Attempt
    lease_token: str
    item: Item
    lane: Lane
    checkpoint: Checkpoint | None


@dataclass(slots=True)
class GateInfo:
    gate: str
    detail: str
    since: datetime | None
    lease_ids: list[str] = field(default_factory=list)
    counts_toward_escalation: bool = False


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    """A heartbeat's answer: the lease's new expiry, and the stop its worker must heed (see
    ``domain/stops.py``; None: go on)."""

    lease_expire_time: datetime
    stop: Stop | None = None


@dataclass(slots=True)
class Explanation:
    lane_id: str
    item_id: str
    state: str
    next_action: str
    gates: list[GateInfo] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    items: list[Explanation] = field(default_factory=list)
    stuck_closures: list[StuckClosure] = field(default_factory=list)
    deadline: DeadlineInfo | None = None
    #: What the lane (or the item) spent, all time; None when nothing yet.
    usage: UsageTotal | None = None
    #: What the work coordinator spent today (UTC); None when nothing yet.
    day_usage: UsageTotal | None = None


@dataclass(frozen=True, slots=True)
class StuckClosure:
    """A lane's ticket closure still open, and the connection it goes through (None: the
    installation-wide tracker, or none, serves the ticket)."""

    action: PendingAction
    connection: TrackerConnection | None


@dataclass(frozen=True, slots=True)
class StepFailure:
    """A step of a recovery pass (one of ``MAINTENANCE_STEPS``) that failed while the rest of
    the pass ran: how many of its calls failed, and the latest error."""

    step: str
    failures: int
    error: str


@dataclass(slots=True)
class MaintenanceReport:
    coordinator_id: str
    start_time: datetime
    expired_attempts: int = 0
    requeued: int = 0
    dead_lettered: int = 0
    escalated: int = 0
    evicted_workers: int = 0
    pending_actions_attempted: int = 0
    pending_actions_succeeded: int = 0
    tickets_synced: int = 0
    revision: int = 0
    duration_seconds: float = 0.0
    skipped_disabled: bool = False
    step_failures: list[StepFailure] = field(default_factory=list)


@dataclass(slots=True)
class Page(Generic[_T]):
    items: list[_T]
    next_page_token: str = ""


@dataclass(slots=True)
class ClassUsage:
    worker_class: str
    in_use: int
    capacity: int
    lease_ids: list[str]
    queued: int


@dataclass(frozen=True, slots=True)
class BudgetReport:
    """One budget as GetBudget answers it: its limits (None: none), what its period used, and
    the limit it reached (None: not spent)."""

    scope: BudgetScope
    lane_id: str
    day: str
    limit: BudgetLimit | None
    used: Spend
    spent: SpentBudget | None


@dataclass(slots=True)
class UsageReport:
    """What :meth:`UsageService.get_usage` answers: the total of the day (or all time) and,
    when grouped, one total per group (``key`` the lane id, class, model or day)."""

    day: str
    total: UsageTotal
    groups: list[UsageTotal]


@dataclass(slots=True)
class CoordinatorView:
    coordinator: Coordinator
    revision: int
    lanes: list[LaneDetail]
    workers: list[Worker]
    capacity: list[ClassUsage]
    worker_leases: dict[str, int] = field(default_factory=dict)
    pending_actions: list[PendingAction] = field(default_factory=list)
    escalations: list[Escalation] = field(default_factory=list)
    next_page_token: str = ""
    #: What the work coordinator spent today (UTC); None when nothing yet.
    day_usage: UsageTotal | None = None
    #: What the page's lanes spent, all time, the costliest first.
    lane_usage: list[UsageTotal] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlatformSettings:
    """The platform's switch, when it last changed, and its version (the etag)."""

    enabled: bool
    update_time: datetime
    version: int


@dataclass(frozen=True, slots=True)
class IssuedUserToken:
    """A new API token of a user: its secret is shown here only."""

    token: TokenRecord
    secret: str


@dataclass(frozen=True, slots=True)
class IssuedWorkKey:
    """A new work key: its secret is shown here only."""

    key: WorkKeyRecord
    secret: str


@dataclass(frozen=True, slots=True)
class IssuedLoginCode:
    """A one-time login code (shown here only), its expiry and the user it signs in."""

    code: str
    expire_time: datetime
    user_id: str


@dataclass(frozen=True, slots=True)
class IssuedSession:
    """A new browser session: its secret and CSRF token are shown here only."""

    session: SessionRecord
    secret: str
    csrf_token: str


@dataclass(frozen=True, slots=True)
class SessionCaller:
    """The caller behind a browser session, and the session."""

    principal: Principal
    session: SessionRecord


@dataclass(frozen=True, slots=True)
class MaintenanceTarget:
    coordinator_id: str
    revision: int


@dataclass(frozen=True, slots=True)
class MaintenanceTargets:
    """What the recovery service should visit: nothing while the platform is switched off."""

    platform_enabled: bool
    targets: list[MaintenanceTarget]


@dataclass(frozen=True, slots=True)
class MailDue:
    """What the digest owner is due to be mailed now (``domain/mail_marks.py``)."""

    owner: str
    owner_display_name: str
    org_slug: str
    display_name: str
    digest: Digest | None
    human_needed: list[Event]
    human_needed_through: int
    """The revision to mark once ``human_needed`` is handled (0: nothing to mark)."""
    lane_titles: dict[str, str]


@dataclass(frozen=True, slots=True)
class LeadershipClaim:
    """The leadership as it stands, and whether the caller holds it."""

    leadership: Leadership
    held: bool


@dataclass(frozen=True, slots=True)
class PendingActionsRun:
    """One pass over the due pending actions; ``failed`` of them failed, the latest with
    ``error``."""

    attempted: int = 0
    succeeded: int = 0
    failed: int = 0
    error: str = ""


@dataclass(slots=True)
class Digest:
    """One UTC day's digest of a work coordinator: its owner and entries."""

    coordinator_id: str
    day: str
    owner: str
    entries: list[DigestEntry]
    usage: UsageTotal | None = None  # what the attempts spent that day
    top_lanes: list[UsageTotal] = field(default_factory=list)  # the costliest first
    owner_display_name: str = ""
    """The user whose e-mail address ``owner`` is, by display name ("" when none is)."""


@dataclass(slots=True)
class EventPage:
    """A page of the event log and the coordinator's revision when it was read."""

    events: list[Event]
    next_page_token: str
    revision: int


@dataclass(frozen=True, slots=True)
class EntryResult(Generic[_T]):
    """The answer to one entry of a batched worker write: its value when it applied, else the
    error the single call would have raised (the other entries are not affected)."""

    lease_id: str
    value: _T | None = None
    error: WorkcoordError | None = None
