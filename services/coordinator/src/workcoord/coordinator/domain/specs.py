"""Inputs and outputs of the engine's commands, as plain dataclasses.

What a worker reports (its run identity, evidence, checkpoint, failure) is typed here; the
records keep it as proto3 JSON with proto field names (how storage holds it), and the only
conversions between the two are the ``to_json`` / ``from_json`` methods below.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from .leasability import Surroundings
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


# ---------------------------------------------------------------------- what workers report


def _time_to_json(value: datetime) -> str:
    """RFC 3339 in UTC as proto3 JSON writes a Timestamp: 'Z', and 0, 3 or 6 fraction digits."""
    utc = value.astimezone(UTC)
    text = utc.replace(tzinfo=None, microsecond=0).isoformat()
    if utc.microsecond == 0:
        return text + "Z"
    if utc.microsecond % 1000 == 0:
        return f"{text}.{utc.microsecond // 1000:03d}Z"
    return f"{text}.{utc.microsecond:06d}Z"


def _time_from_json(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


def _present(**fields: Any) -> JsonObject:
    """Proto3 JSON leaves out fields at their default (empty, zero, false, unset)."""
    return {name: value for name, value in fields.items() if value not in ("", 0, False, None, [])}


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


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """Who runs an attempt and where; reported when it starts and immutable afterwards."""

    pid: int = 0
    agent_id: str = ""
    engine: str = ""
    account: str = ""
    hostname: str = ""
    worktree_path: str = ""
    branch: str = ""
    started_at: datetime | None = None

    def to_json(self) -> JsonObject:
        return _present(
            pid=str(self.pid) if self.pid else "",  # proto3 JSON writes an int64 as a string
            agent_id=self.agent_id,
            engine=self.engine,
            account=self.account,
            hostname=self.hostname,
            worktree_path=self.worktree_path,
            branch=self.branch,
            started_at=_time_to_json(self.started_at) if self.started_at else None,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunIdentity:
        return cls(
            pid=int(data.get("pid") or 0),
            agent_id=str(data.get("agent_id", "")),
            engine=str(data.get("engine", "")),
            account=str(data.get("account", "")),
            hostname=str(data.get("hostname", "")),
            worktree_path=str(data.get("worktree_path", "")),
            branch=str(data.get("branch", "")),
            started_at=_time_from_json(data.get("started_at")),
        )


class Verdict(enum.StrEnum):
    """A review's verdict."""

    PASS = "PASS"  # noqa: S105 - a verdict, not a password
    FAIL = "FAIL"


@dataclass(frozen=True, slots=True)
class Artifact:
    """One output of a run."""

    name: str
    uri: str
    sha256: str = ""

    def to_json(self) -> JsonObject:
        return _present(name=self.name, uri=self.uri, sha256=self.sha256)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check a run performed, and its outcome (PASSED, FAILED or SKIPPED)."""

    name: str
    status: str

    def to_json(self) -> JsonObject:
        return _present(name=self.name, status=self.status)


@dataclass(frozen=True, slots=True)
class Receipt:
    """That a change shipped: where, which version, and when."""

    environment: str = ""
    version: str = ""
    url: str = ""
    time: datetime | None = None

    def to_json(self) -> JsonObject:
        return _present(
            environment=self.environment,
            version=self.version,
            url=self.url,
            time=_time_to_json(self.time) if self.time else None,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Receipt:
        return cls(
            environment=str(data.get("environment", "")),
            version=str(data.get("version", "")),
            url=str(data.get("url", "")),
            time=_time_from_json(data.get("time")),
        )


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a worker hands in when it completes an item."""

    summary: str = ""
    links: tuple[str, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    verdict: Verdict | None = None  # REVIEW items
    findings: tuple[str, ...] = ()  # REVIEW items, handed to the FIX after a FAIL
    receipt: Receipt | None = None  # SHIP items

    def to_json(self) -> JsonObject:
        out = _present(
            summary=self.summary,
            links=list(self.links),
            artifacts=[a.to_json() for a in self.artifacts],
            checks=[c.to_json() for c in self.checks],
            verdict=self.verdict.value if self.verdict else None,
            findings=list(self.findings),
        )
        if self.receipt is not None:
            out["receipt"] = self.receipt.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        receipt = data.get("receipt")
        verdict = data.get("verdict")
        return cls(
            summary=str(data.get("summary", "")),
            links=_strings(data.get("links")),
            artifacts=tuple(
                Artifact(str(a.get("name", "")), str(a.get("uri", "")), str(a.get("sha256", "")))
                for a in data.get("artifacts") or ()
            ),
            checks=tuple(
                CheckResult(str(c.get("name", "")), str(c.get("status", "")))
                for c in data.get("checks") or ()
            ),
            verdict=Verdict(verdict) if verdict in tuple(Verdict) else None,
            findings=_strings(data.get("findings")),
            receipt=Receipt.from_json(receipt) if isinstance(receipt, Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where an attempt stands when it ends with a continuation; private to the lane's
    workers. A ``blocked_reason`` stops automatic continuation for a human."""

    summary: str = ""
    files_changed: tuple[str, ...] = ()
    next_action: str = ""
    blocked_reason: str = ""

    def to_json(self) -> JsonObject:
        return _present(
            summary=self.summary,
            files_changed=list(self.files_changed),
            next_action=self.next_action,
            blocked_reason=self.blocked_reason,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Checkpoint:
        return cls(
            summary=str(data.get("summary", "")),
            files_changed=_strings(data.get("files_changed")),
            next_action=str(data.get("next_action", "")),
            blocked_reason=str(data.get("blocked_reason", "")),
        )


@dataclass(frozen=True, slots=True)
class Failure:
    """The failure a worker reports; ``retryable`` says whether another attempt may succeed."""

    message: str = ""
    type: str = ""
    retryable: bool = False

    def to_json(self) -> JsonObject:
        return _present(message=self.message, type=self.type, retryable=self.retryable)


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
    # What the labels of its queued items read besides them (capacity in use, key holders,
    # now); None: not read (the labels show only the lane's hold).
    surroundings: Surroundings | None = None

    @property
    def open_blockers(self) -> int:
        return sum(1 for b in self.blockers if b.open)


@dataclass(slots=True)
class ItemDetail:
    item: Item
    attempts: list[Attempt]
    surroundings: Surroundings | None = None  # as LaneDetail's


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
