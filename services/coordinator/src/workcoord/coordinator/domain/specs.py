"""Inputs and outputs of the engine's commands, as plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from .model import (
    Attempt,
    Blocker,
    Coordinator,
    DigestEntry,
    Escalation,
    Event,
    Item,
    ItemKind,
    JsonObject,
    Lane,
    PendingAction,
    RetryPolicy,
    ReviewPolicy,
    Scope,
    Template,
    Ticket,
    Worker,
)
from .ports import Leadership, WorkKeyRecord

_T = TypeVar("_T")


@dataclass(slots=True)
class ItemSpec:
    key: str = ""
    kind: ItemKind | None = None
    worker_class: str = ""
    title: str = ""
    brief: str = ""
    depends_on: list[str] = field(default_factory=list)
    inputs: JsonObject = field(default_factory=dict)
    placement: JsonObject | None = None
    exclusive_key: str = ""
    priority: int | None = None
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    action_classes: list[str] = field(default_factory=list)
    needs_human: bool = False
    requires_approval: bool = False


@dataclass(slots=True)
class TicketSpec:
    tracker: str
    key: str
    url: str = ""


@dataclass(slots=True)
class LaneSpec:
    title: str
    template: Template | None
    priority: int = 0
    inputs: JsonObject = field(default_factory=dict)
    items: list[ItemSpec] = field(default_factory=list)
    tickets: list[TicketSpec] = field(default_factory=list)
    worker_classes: dict[str, str] = field(default_factory=dict)
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    review_policy: ReviewPolicy = field(default_factory=ReviewPolicy)
    placement: JsonObject | None = None
    brief: str = ""


@dataclass(slots=True)
class CoordinatorSpec:
    scope: Scope | None
    org_slug: str = ""
    display_name: str = ""
    enabled: bool | None = None
    changes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class LaneDetail:
    lane: Lane
    items: list[Item]
    blockers: list[Blocker] = field(default_factory=list)
    tickets: list[Ticket] = field(default_factory=list)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    capacity: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def open_blockers(self) -> int:
        return sum(1 for b in self.blockers if b.open)


@dataclass(slots=True)
class ItemDetail:
    item: Item
    attempts: list[Attempt]
    capacity: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(slots=True)
class GrantedLease:
    attempt: Attempt
    lease_token: str
    item: Item
    lane: Lane
    checkpoint: JsonObject | None


@dataclass(slots=True)
class GateInfo:
    gate: str
    detail: str
    since: datetime | None
    lease_ids: list[str] = field(default_factory=list)
    counts_toward_escalation: bool = False


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


# ---------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class PlatformSettings:
    """The platform's switch, when it last changed, and its version (the etag)."""

    enabled: bool
    update_time: datetime
    version: int


@dataclass(frozen=True, slots=True)
class IssuedUserToken:
    """A new API token of a user: its secret is shown here only."""

    token_id: str
    secret: str
    create_time: datetime


@dataclass(frozen=True, slots=True)
class IssuedWorkKey:
    """A new work key: its secret is shown here only."""

    key: WorkKeyRecord
    secret: str


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
class LeadershipClaim:
    """The leadership as it stands, and whether the caller holds it."""

    leadership: Leadership
    held: bool


@dataclass(frozen=True, slots=True)
class PendingActionsRun:
    """One pass over the due pending actions."""

    attempted: int = 0
    succeeded: int = 0


@dataclass(slots=True)
class Digest:
    """One UTC day's digest of a work coordinator: its owner and entries."""

    coordinator_id: str
    day: str
    owner: str
    entries: list[DigestEntry]


@dataclass(slots=True)
class EventPage:
    """A page of the event log and the coordinator's revision when it was read."""

    events: list[Event]
    next_page_token: str
    revision: int
