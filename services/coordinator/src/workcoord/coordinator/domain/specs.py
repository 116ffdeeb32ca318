"""Inputs and outputs of the engine's commands, as plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from .model import (
    Attempt,
    Blocker,
    Coordinator,
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
