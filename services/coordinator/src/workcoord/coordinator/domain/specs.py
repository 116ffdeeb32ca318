"""Inputs and outputs of the engine's commands, as plain dataclasses.

What a worker reports (its run identity, evidence, checkpoint, failure) is typed here as
:class:`~.documents.Document` values; the records keep them as JSON objects, written by
``to_json`` and read back, strictly, by ``from_json`` (see :mod:`.documents`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from .documents import Document
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


@dataclass(frozen=True, slots=True)
class CapacityEntries:
    """An update of some entries of ``class_capacity`` (update mask paths such as
    ``class_capacity.codex``): each named class gets its new capacity, or is removed (None).
    The other classes keep theirs."""

    entries: Mapping[str, int | None]

    def over(self, current: Mapping[str, int]) -> dict[str, int]:
        merged = dict(current)
        for name, capacity in self.entries.items():
            if capacity is None:
                merged.pop(name, None)
            else:
                merged[name] = capacity
        return merged


# ---------------------------------------------------------------------- what workers report
# Stored in: attempts.run_identity, items.evidence, attempts.checkpoint, attempts.error and
# items.last_error, lanes.receipt. A field's name is its stored key: renaming one needs
# ``stored_as("old_name")`` (docs/adding-a-field.md).


@dataclass(frozen=True, slots=True)
class RunIdentity(Document):
    """Who runs an attempt and where; reported when it starts and immutable afterwards."""

    pid: int = 0
    agent_id: str = ""
    engine: str = ""
    account: str = ""
    hostname: str = ""
    worktree_path: str = ""
    branch: str = ""
    started_at: datetime | None = None


class Verdict(enum.StrEnum):
    """A review's verdict."""

    PASS = "PASS"  # noqa: S105 - a verdict, not a password
    FAIL = "FAIL"


class CheckStatus(enum.StrEnum):
    """The outcome of one check."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


@dataclass(frozen=True, slots=True)
class Artifact(Document):
    """One output of a run."""

    name: str
    uri: str
    sha256: str = ""


@dataclass(frozen=True, slots=True)
class CheckResult(Document):
    """One check a run performed, and its outcome."""

    name: str
    status: CheckStatus | None = None


@dataclass(frozen=True, slots=True)
class Receipt(Document):
    """That a change shipped: where, which version, and when."""

    environment: str = ""
    version: str = ""
    url: str = ""
    time: datetime | None = None


@dataclass(frozen=True, slots=True)
class Evidence(Document):
    """What a worker hands in when it completes an item."""

    summary: str = ""
    links: tuple[str, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    verdict: Verdict | None = None  # REVIEW items
    findings: tuple[str, ...] = ()  # REVIEW items, handed to the FIX after a FAIL
    receipt: Receipt | None = None  # SHIP items


@dataclass(frozen=True, slots=True)
class Checkpoint(Document):
    """Where an attempt stands when it ends with a continuation; private to the lane's
    workers. A ``blocked_reason`` stops automatic continuation for a human."""

    summary: str = ""
    files_changed: tuple[str, ...] = ()
    next_action: str = ""
    blocked_reason: str = ""


@dataclass(frozen=True, slots=True)
class Failure(Document):
    """The failure a worker reports; ``retryable`` says whether another attempt may succeed.

    An attempt the coordinator ended itself (its class of action no longer allowed) carries no
    report but the ``cause`` (``rules.POLICY_CAUSE``), which readers are not shown: the
    worker's next write answers LEASE_LOST with it."""

    message: str = ""
    type: str = ""
    retryable: bool = False
    cause: str = ""


@dataclass(frozen=True, slots=True)
class LeaseAsk:
    """A worker asking for work: up to ``max_items`` of its class, each leased for
    ``lease_seconds``, waiting up to ``wait_seconds``; with a run identity the leases start
    at once (RUNNING)."""

    worker_id: str
    worker_class: str
    max_items: int = 1
    lease_seconds: int = 60
    wait_seconds: int = 0
    run_identity: RunIdentity | None = None
    # Makes a retry answer the same leases (scoped to the caller and the worker); "" for none.
    request_id: str = ""


class Decision(enum.StrEnum):
    """What is decided about an item: all but CANCEL are for humans only."""

    APPROVE = "approve"
    DENY = "deny"
    RESUME = "resume"
    RETRY = "retry"
    CANCEL = "cancel"


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
    checkpoint: Checkpoint | None


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


@dataclass(slots=True)
class EventPage:
    """A page of the event log and the coordinator's revision when it was read."""

    events: list[Event]
    next_page_token: str
    revision: int
