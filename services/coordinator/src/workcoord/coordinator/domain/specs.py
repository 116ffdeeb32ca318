"""What the engine's commands take, as plain dataclasses: what a worker asks for and reports,
what a caller specifies for a lane, item, ticket or work coordinator, and a decision. What the
commands answer is in :mod:`.results`.

What a worker reports (its run identity, evidence, checkpoint, failure) is typed here as
:class:`~.documents.Document` values; the records keep them as JSON objects, written by
``to_json`` and read back, strictly, by ``from_json`` (see :mod:`.documents`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .budgets import BudgetLimit
from .documents import Document
from .model import ItemKind, JsonObject, RetryPolicy, ReviewPolicy, Scope, Template, served_classes


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
class Usage(Document):
    """What one attempt spent so far, as running totals its worker reports (tokens, cost in
    millionths of a US dollar, the model). Totals only grow (``rules.check_usage``)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_micros: int = 0
    model: str = ""

    @property
    def tokens(self) -> int:
        """Every token counted: input, output and both cache kinds."""
        cached = self.cache_read_tokens + self.cache_write_tokens
        return self.input_tokens + self.output_tokens + cached


#: The totals of a :class:`Usage`, in the order the proto declares them.
USAGE_TOTALS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micros",
)


@dataclass(frozen=True, slots=True)
class LeaseAsk:
    """A worker asking for work: up to ``max_items`` of its classes, each leased for
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
    # Further classes wanted beside ``worker_class`` (see ``classes``).
    worker_classes: tuple[str, ...] = ()

    @property
    def classes(self) -> tuple[str, ...]:
        """Every class asked for: ``worker_class`` first, then the others, each once."""
        return served_classes(self.worker_class, self.worker_classes)


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
    # max_run_duration of one attempt, in seconds (None: the coordinator's for the class).
    max_run_seconds: int | None = None


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
    # The lane's lifetime budget (None: none).
    budget: BudgetLimit | None = None


@dataclass(slots=True)
class CoordinatorSpec:
    scope: Scope | None
    org_slug: str = ""
    display_name: str = ""
    enabled: bool | None = None
    changes: dict[str, Any] = field(default_factory=dict)
