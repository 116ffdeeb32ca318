"""The coordinator's records as plain typed Python.

Storage maps rows to these dataclasses and back; transport maps them to and from protos. Free
form parts that mirror a proto message (evidence, run identity, placement, checkpoint, error)
are kept as proto3-JSON dictionaries with proto field names, so nothing here depends on the
generated code.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, Self

from .budgets import BudgetLimit

JsonObject = dict[str, Any]

DEFAULT_CLASS_CAPACITY: dict[str, int] = {
    "codex": 4,
    "claude": 4,
    "machine": 2,
    "agent": 4,
    "person": 1,
}
DEFAULT_ACTION_CLASSES: tuple[str, ...] = (
    "repo_inspect",
    "repo_edit",
    "local_checks",
    "state_updates",
)
DEFAULT_ESCALATE_AFTER_SECONDS = 3600.0
# max_run_duration per worker class: 2 h for agent classes, 1 h for machine, none for person.
DEFAULT_MAX_RUN_SECONDS: dict[str, int] = {
    "codex": 7200,
    "claude": 7200,
    "agent": 7200,
    "machine": 3600,
}
MAX_RUN_SECONDS_LIMIT = 7 * 24 * 3600
MIN_RUN_SECONDS = 60
WORKER_POOL_CAP = 256
WORKER_EVICT_AFTER_SECONDS = 7 * 24 * 3600.0


class Scope(enum.StrEnum):
    GLOBAL = "GLOBAL"
    ORG = "ORG"


class Template(enum.StrEnum):
    STANDARD = "STANDARD"
    CUSTOM = "CUSTOM"


class LaneState(enum.StrEnum):
    ACTIVE = "ACTIVE"
    LIVE = "LIVE"
    DONE = "DONE"
    CLOSED_OUT = "CLOSED_OUT"
    CANCELLED = "CANCELLED"


class ItemKind(enum.StrEnum):
    BUILD = "BUILD"
    REVIEW = "REVIEW"
    FIX = "FIX"
    INTEGRATE = "INTEGRATE"
    SHIP = "SHIP"
    TASK = "TASK"


class ItemState(enum.StrEnum):
    WAITING = "WAITING"
    QUEUED = "QUEUED"
    LEASED = "LEASED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    DEAD = "DEAD"
    CANCELLED = "CANCELLED"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    STOPPED = "STOPPED"


TERMINAL_ITEM_STATES = frozenset({ItemState.SUCCEEDED, ItemState.DEAD, ItemState.CANCELLED})
LIVE_ITEM_STATES = frozenset({ItemState.LEASED, ItemState.RUNNING})


class DeadLetterReason(enum.StrEnum):
    EXHAUSTED = "EXHAUSTED"
    NON_RETRYABLE = "NON_RETRYABLE"
    POLICY = "POLICY"


class AttemptStatus(enum.StrEnum):
    LEASED = "LEASED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CHECKPOINTED = "CHECKPOINTED"
    RELEASED = "RELEASED"
    DEAD = "DEAD"


LIVE_ATTEMPT_STATUSES = frozenset({AttemptStatus.LEASED, AttemptStatus.RUNNING})


class EventType(enum.StrEnum):
    """Mirrors ``Event.Type`` of the contract (names are the wire names)."""

    COORDINATOR_CREATED = "COORDINATOR_CREATED"
    COORDINATOR_UPDATED = "COORDINATOR_UPDATED"
    LANE_CREATED = "LANE_CREATED"
    ITEM_CREATED = "ITEM_CREATED"
    ITEM_QUEUED = "ITEM_QUEUED"
    ITEM_LEASED = "ITEM_LEASED"
    ITEM_STARTED = "ITEM_STARTED"
    ITEM_SUCCEEDED = "ITEM_SUCCEEDED"
    ITEM_FAILED = "ITEM_FAILED"
    RETRY_SCHEDULED = "RETRY_SCHEDULED"
    ATTEMPT_EXPIRED = "ATTEMPT_EXPIRED"
    ITEM_DEAD_LETTERED = "ITEM_DEAD_LETTERED"
    ITEM_CHECKPOINTED = "ITEM_CHECKPOINTED"
    ITEM_RELEASED = "ITEM_RELEASED"
    ITEM_STOPPED = "ITEM_STOPPED"
    ITEM_RESUMED = "ITEM_RESUMED"
    ITEM_CANCELLED = "ITEM_CANCELLED"
    APPROVAL_REQUESTED = "APPROVAL_REQUESTED"
    ITEM_APPROVED = "ITEM_APPROVED"
    ITEM_DENIED = "ITEM_DENIED"
    ITEM_REDRIVEN = "ITEM_REDRIVEN"
    REVIEW_PASSED = "REVIEW_PASSED"
    REVIEW_FAILED = "REVIEW_FAILED"
    LANE_PAUSED = "LANE_PAUSED"
    LANE_RESUMED = "LANE_RESUMED"
    LANE_CANCELLED = "LANE_CANCELLED"
    LANE_LIVE = "LANE_LIVE"
    LANE_DONE = "LANE_DONE"
    LANE_CLOSED_OUT = "LANE_CLOSED_OUT"
    BLOCKER_ADDED = "BLOCKER_ADDED"
    BLOCKER_RESOLVED = "BLOCKER_RESOLVED"
    TICKET_LINKED = "TICKET_LINKED"
    TICKET_CLOSED = "TICKET_CLOSED"
    TICKET_SYNCED = "TICKET_SYNCED"
    PENDING_ACTION_OPENED = "PENDING_ACTION_OPENED"
    PENDING_ACTION_RETRIED = "PENDING_ACTION_RETRIED"
    PENDING_ACTION_RESOLVED = "PENDING_ACTION_RESOLVED"
    ESCALATED = "ESCALATED"
    WORKER_REGISTERED = "WORKER_REGISTERED"
    WORKER_EVICTED = "WORKER_EVICTED"
    WORKER_FENCED = "WORKER_FENCED"
    WORKER_UNFENCED = "WORKER_UNFENCED"
    WORKER_FORGOTTEN = "WORKER_FORGOTTEN"
    GRANT_CREATED = "GRANT_CREATED"
    GRANT_REVOKED = "GRANT_REVOKED"
    PARENT_ACTION = "PARENT_ACTION"
    POLICY_WEAKENED = "POLICY_WEAKENED"
    POLICY_NARROWED = "POLICY_NARROWED"
    LANE_UPDATED = "LANE_UPDATED"
    BUDGET_WARNING = "BUDGET_WARNING"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"


@dataclass(frozen=True, slots=True)
class _Inheriting:
    """A policy whose unset (``None``) fields inherit from the next level up."""

    def over(self, base: Self) -> Self:
        """This policy with unset fields taken from ``base``."""
        unset = {
            f.name: getattr(base, f.name) for f in fields(self) if getattr(self, f.name) is None
        }
        return replace(self, **unset)


@dataclass(frozen=True, slots=True)
class RetryPolicy(_Inheriting):
    """A retry policy; ``None`` fields inherit from the next level up."""

    initial_interval: float | None = None
    backoff_coefficient: float | None = None
    maximum_interval: float | None = None
    maximum_attempts: int | None = None

    def is_empty(self) -> bool:
        return self == RetryPolicy()


DEFAULT_RETRY_POLICY = RetryPolicy(
    initial_interval=5.0, backoff_coefficient=3.0, maximum_interval=300.0, maximum_attempts=4
)


class OnPass(enum.StrEnum):
    SHIP = "SHIP"
    INTEGRATE_THEN_SHIP = "INTEGRATE_THEN_SHIP"
    NONE = "NONE"


@dataclass(frozen=True, slots=True)
class ReviewPolicy(_Inheriting):
    """A review policy; ``None`` fields inherit."""

    max_fail_rounds: int | None = None
    on_pass: OnPass | None = None
    ship_requires_approval: bool | None = None


DEFAULT_REVIEW_POLICY = ReviewPolicy(
    max_fail_rounds=2, on_pass=OnPass.SHIP, ship_requires_approval=True
)


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """What an admin configures on a work coordinator."""

    class_capacity: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_CLASS_CAPACITY))
    retry_policy: RetryPolicy = DEFAULT_RETRY_POLICY
    review_policy: ReviewPolicy = DEFAULT_REVIEW_POLICY
    allowed_action_classes: tuple[str, ...] = DEFAULT_ACTION_CLASSES
    digest_owner: str = ""
    escalate_after_seconds: float = DEFAULT_ESCALATE_AFTER_SECONDS
    parent_coordinator_id: str = ""
    # Worker class → max_run_duration in seconds of one attempt (a class not named: none).
    max_run_seconds: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_MAX_RUN_SECONDS))


@dataclass(frozen=True, slots=True)
class MailMarks:
    """What the digest owner was last mailed (``domain/mail_marks.py``): the last UTC day
    whose digest went out, the last event revision whose HUMAN_NEEDED mail went out and when
    (ISO 8601, UTC). Unset (None) until the first mail."""

    digest_day: str | None = None
    human_needed_revision: int | None = None
    human_needed_time: str | None = None


@dataclass(slots=True)
class Coordinator:
    coordinator_id: str
    scope: Scope
    org_slug: str
    display_name: str
    enabled: bool
    revision: int
    config: CoordinatorConfig
    config_version: int
    create_time: datetime
    update_time: datetime
    mail_marks: MailMarks = field(default_factory=MailMarks)
    # Enabled webhooks → the event types each selects (see domain/webhooks.py).
    webhook_filters: dict[str, list[str]] = field(default_factory=dict)
    # The day budget (per UTC day; None: none). See domain/budgets.py.
    budget: BudgetLimit | None = None
    # Whether any of its lanes was ever given a budget: only then do heartbeats and the claim
    # read lane budgets (set once, never cleared).
    lane_budgets: bool = False


@dataclass(slots=True)
class Lane:
    lane_id: str
    coordinator_id: str
    title: str
    template: Template
    priority: int
    inputs: JsonObject
    state: LaneState
    paused: bool
    create_time: datetime
    update_time: datetime
    worker_classes: dict[str, str] = field(default_factory=dict)
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    review_policy: ReviewPolicy = field(default_factory=ReviewPolicy)
    placement: JsonObject | None = None
    brief: str = ""
    fail_rounds: int = 0
    close_reason: str = ""
    receipt: JsonObject | None = None
    paused_time: datetime | None = None
    request_id: str = ""
    version: int = 1
    # The lane's lifetime budget (None: none). See domain/budgets.py.
    budget: BudgetLimit | None = None


@dataclass(slots=True)
class Blocker:
    blocker_id: str
    lane_id: str
    reason: str
    open: bool
    create_time: datetime
    resolve_time: datetime | None = None


@dataclass(slots=True)
class Ticket:
    lane_id: str
    tracker: str
    key: str
    url: str = ""
    state: str = ""
    observe_time: datetime | None = None


@dataclass(slots=True)
class Item:
    item_id: str
    coordinator_id: str
    lane_id: str
    key: str
    kind: ItemKind
    worker_class: str
    state: ItemState
    create_time: datetime
    update_time: datetime
    title: str = ""
    brief: str = ""
    depends_on: list[str] = field(default_factory=list)
    inputs: JsonObject = field(default_factory=dict)
    placement: JsonObject | None = None
    exclusive_key: str = ""
    priority: int = 0
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    action_classes: list[str] = field(default_factory=list)
    needs_human: bool = False
    requires_approval: bool = False
    attempt_count: int = 0
    attempt_seq: int = 0
    not_before: datetime | None = None
    dead_letter_reason: DeadLetterReason | None = None
    stop_reason: str = ""
    sensitive: bool = False
    evidence: JsonObject | None = None
    last_error: JsonObject | None = None
    current_lease_id: str = ""
    continues_lease_id: str = ""
    ready_time: datetime | None = None
    held: bool = False
    seq: int = 0
    # The item's own max_run_duration in seconds (None: the coordinator's default for its class).
    max_run_seconds: int | None = None

    def copy(self) -> Item:
        return replace(self)


@dataclass(slots=True)
class Attempt:
    lease_id: str
    coordinator_id: str
    item_id: str
    lane_id: str
    attempt: int
    status: AttemptStatus
    token_hash: str
    worker_id: str
    worker_class: str
    principal: str
    lease_seconds: int
    lease_expire_time: datetime
    create_time: datetime
    start_time: datetime | None = None
    end_time: datetime | None = None
    run_identity: JsonObject | None = None
    progress: str = ""
    error: JsonObject | None = None
    continues_lease_id: str = ""
    counted: bool = True
    exclusive_key: str = ""
    checkpoint: JsonObject | None = None
    # Which Lease call granted it: a digest of (principal, worker id, request id), "" when the
    # call named no request id. A retry of that call returns this attempt again while live.
    lease_request: str = ""
    # The random salt its lease token is derived from (never the token itself): with the
    # server's lease-token key, a retry can hand out the same token again.
    token_nonce: str = ""
    # What the attempt spent so far (a ``specs.Usage`` document; None until its worker reports).
    usage: JsonObject | None = None
    # When it must wind down (its max_run_duration after its lease; None: no deadline).
    deadline_time: datetime | None = None

    @property
    def live(self) -> bool:
        return self.status in LIVE_ATTEMPT_STATUSES


class UsageScope(enum.StrEnum):
    """What a usage roll-up totals: the work coordinator, one lane, item, worker class or model."""

    COORDINATOR = "COORDINATOR"
    LANE = "LANE"
    ITEM = "ITEM"
    WORKER_CLASS = "WORKER_CLASS"
    MODEL = "MODEL"


@dataclass(slots=True)
class UsageTotal:
    """A usage roll-up: what the attempts of one ``scope`` and ``key`` (a lane id, item id,
    class or model; "" for the work coordinator) spent on one UTC ``day`` (``YYYY-MM-DD``), or
    ever (``day`` ""). Kept by adding each reported increase in the write's transaction."""

    coordinator_id: str
    scope: UsageScope
    key: str
    day: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_micros: int = 0

    @property
    def tokens(self) -> int:
        """Every token counted: input, output and both cache kinds."""
        cached = self.cache_read_tokens + self.cache_write_tokens
        return self.input_tokens + self.output_tokens + cached


def served_classes(primary: str, others: Sequence[str]) -> tuple[str, ...]:
    """``primary`` and then ``others``, each class once, in that order."""
    return tuple(dict.fromkeys((primary, *others)))


@dataclass(slots=True)
class Worker:
    coordinator_id: str
    worker_id: str
    worker_class: str
    create_time: datetime
    observe_time: datetime
    principal: str = ""
    capabilities: list[str] = field(default_factory=list)
    toolchains: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    cpu_count: int = 0
    memory_bytes: int = 0
    disk_bytes: int = 0
    last_ask_time: datetime | None = None
    # Set while the worker is fenced (see :class:`WorkerFence`), as its JSON form.
    fence: JsonObject | None = None
    # Every class it serves, ``worker_class`` first (empty: that class only); see ``classes``.
    worker_classes: list[str] = field(default_factory=list)

    @property
    def classes(self) -> tuple[str, ...]:
        """The classes the worker serves: ``worker_class``, then the others, each once."""
        return served_classes(self.worker_class, self.worker_classes)


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append in the current transaction (its revision is assigned at append)."""

    type: EventType
    lane_id: str = ""
    item_id: str = ""
    lease_id: str = ""
    data: JsonObject = field(default_factory=dict)

    @classmethod
    def for_item(
        cls, type: EventType, item: Item, lease_id: str = "", data: JsonObject | None = None
    ) -> NewEvent:
        """An event about ``item`` (in its lane), optionally about one of its leases."""
        return cls(type, item.lane_id, item.item_id, lease_id, dict(data or {}))


@dataclass(frozen=True, slots=True)
class Event:
    coordinator_id: str
    revision: int
    type: EventType
    time: datetime
    lane_id: str
    item_id: str
    lease_id: str
    actor: str
    data: JsonObject


class DigestKind(enum.StrEnum):
    DEAD_LETTERED = "DEAD_LETTERED"
    CLOSED_OUT = "CLOSED_OUT"
    CLOSE_OUT_ACTION_FAILED = "CLOSE_OUT_ACTION_FAILED"
    PENDING_ACTION = "PENDING_ACTION"
    STOPPED = "STOPPED"
    ESCALATED = "ESCALATED"
    MAINTENANCE_STEP_FAILED = "MAINTENANCE_STEP_FAILED"
    WEBHOOK_DISABLED = "WEBHOOK_DISABLED"


@dataclass(frozen=True, slots=True)
class DigestEntry:
    entry_id: str
    coordinator_id: str
    day: str
    owner: str
    kind: DigestKind
    time: datetime
    lane_id: str = ""
    item_id: str = ""
    action_id: str = ""
    reason: str = ""


class PendingActionState(enum.StrEnum):
    OPEN = "OPEN"
    SUCCEEDED = "SUCCEEDED"
    RESOLVED = "RESOLVED"


@dataclass(slots=True)
class PendingAction:
    """Owned follow-up work (closing a ticket after shipping), retried until it succeeds or a
    human resolves it."""

    action_id: str
    coordinator_id: str
    lane_id: str
    kind: str
    state: PendingActionState
    owner: str
    create_time: datetime
    update_time: datetime
    ticket_tracker: str = ""
    ticket_key: str = ""
    attempts: int = 0
    next_attempt_time: datetime | None = None
    last_error: str = ""
    resolution: str = ""


@dataclass(slots=True)
class Escalation:
    escalation_id: str
    coordinator_id: str
    lane_id: str
    item_id: str
    reason: str
    escalated_to: list[str]
    open: bool
    create_time: datetime
    resolve_time: datetime | None = None
