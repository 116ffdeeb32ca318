"""Pure rules of the domain: backoff, fencing, DAG checks, policy stops, labels.

Placement and exclusive keys live in :mod:`.placement` (re-exported here under their old
names); which gates hold an item (what a queued item's label shows) is decided in
:mod:`.leasability`.

Nothing here does I/O; the engine calls these with records it loaded in its transaction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from workcoord.kit.errors import (
    CoordinationDisabled,
    FieldViolation,
    IllegalTransition,
    InvalidArgument,
    LeaseLost,
)
from workcoord.kit.secrets import hash_secret, looks_like_credential, secrets_equal

from .auth import Access, Principal
from .leasability import Gate, LaneHold, Surroundings, held_keys, holding_gates
from .model import (
    DEFAULT_RETRY_POLICY,
    MAX_RUN_SECONDS_LIMIT,
    MIN_RUN_SECONDS,
    Attempt,
    AttemptStatus,
    Coordinator,
    CoordinatorConfig,
    Item,
    ItemKind,
    ItemState,
    Lane,
    LaneState,
    RetryPolicy,
    Scope,
    Worker,
)
from .placement import PLACEMENT_FIELDS as PLACEMENT_FIELDS
from .placement import exclusive_keys as exclusive_keys
from .placement import placement_matches as placement_matches
from .placement import placement_problems as placement_problems
from .placement import placement_resources as placement_resources
from .specs import CapacityEntries, Checkpoint, Evidence, Failure, ItemSpec, RunIdentity

JITTER = 0.10
# A worker's last ask is written at most this often (see ask_is_fresh).
ASK_REFRESH_SECONDS = 5.0
CHECKPOINT_BLOCKED_REASONS = frozenset(
    {"human", "secret", "destructive", "policy", "dependency", "unavailable"}
)


def retry_delay(policy: RetryPolicy, counted_attempts: int, uniform: Callable[[], float]) -> float:
    """Seconds to wait before the next attempt after ``counted_attempts`` failed ones.

    ``initial * coefficient^(n-1)``, capped at the maximum, with ±10 % jitter so a fleet that
    failed together does not retry together. ``uniform`` returns a float in [0, 1).
    """
    initial = policy.initial_interval or 0.0
    coefficient = policy.backoff_coefficient or 1.0
    maximum = policy.maximum_interval if policy.maximum_interval is not None else initial
    exponent = max(counted_attempts - 1, 0)
    # Cap the exponent: the delay saturates at the maximum long before it overflows.
    base = min(initial * coefficient ** min(exponent, 64), maximum)
    return max(0.0, base * (1.0 + JITTER * (2.0 * uniform() - 1.0)))


def effective_retry_policy(
    item_policy: RetryPolicy, lane_policy: RetryPolicy, coordinator_policy: RetryPolicy
) -> RetryPolicy:
    """The policy an item retries under: its own, then its lane's, then the coordinator's,
    then the defaults — each level filling what the one above left unset."""
    return item_policy.over(lane_policy.over(coordinator_policy.over(DEFAULT_RETRY_POLICY)))


class CapacityUsage(NamedTuple):
    """Per worker class: (in use, capacity), and the live lease ids holding it."""

    capacity: dict[str, tuple[int, int]]
    holding: dict[str, list[str]]


def class_usage(live: Iterable[Attempt], class_capacity: Mapping[str, int]) -> CapacityUsage:
    """Capacity in use per class as (in use, capacity), and the live lease ids holding it."""
    holding: dict[str, list[str]] = {}
    for attempt in live:
        holding.setdefault(attempt.worker_class, []).append(attempt.lease_id)
    capacity = {cls: (len(holding.get(cls, [])), cap) for cls, cap in class_capacity.items()}
    return CapacityUsage(capacity, holding)


def attempts_remaining(policy: RetryPolicy, item: Item) -> bool:
    """Whether another counted attempt is allowed after the current ones."""
    maximum = policy.maximum_attempts or 1
    return item.attempt_count < maximum


# The LEASE_LOST cause of a lease ended because its item's action class was disallowed.
POLICY_CAUSE = "policy"


def fence(attempt: Attempt | None, item: Item | None, lease_token: str, now: datetime) -> None:
    """Refuse a worker write unless it names the item's live lease with its token, unexpired.

    Checked against the server clock on every write, so a lease is lost the instant it expires,
    even before recovery sweeps it.
    """
    if attempt is None or item is None:
        raise LeaseLost("superseded", "lease lost: no such lease")
    if not secrets_equal(hash_secret(lease_token), attempt.token_hash):
        raise LeaseLost("superseded", "lease lost: the token does not match this lease")
    if attempt.status == AttemptStatus.DEAD:
        raise LeaseLost("expired", "lease lost: the lease expired")
    if not attempt.live and Failure.from_json(attempt.error or {}).cause == POLICY_CAUSE:
        raise LeaseLost("policy", "lease lost: the item's action class is no longer allowed")
    if not attempt.live:
        raise LeaseLost("terminal", f"lease lost: the attempt is already {attempt.status.value}")
    if item.current_lease_id != attempt.lease_id:
        raise LeaseLost("superseded", "lease lost: the item has another live attempt")
    if now >= attempt.lease_expire_time:
        raise LeaseLost("expired", "lease lost: the lease expired")


def fenced(
    found: tuple[Attempt | None, Item | None],
    coordinator_id: str,
    lease_token: str,
    now: datetime,
) -> tuple[Attempt, Item]:
    """The attempt and item ``found`` for a lease of ``coordinator_id`` if ``lease_token``
    holds that live lease (:func:`fence`); an attempt of another work coordinator counts as
    none (LEASE_LOST, never a hint that it exists)."""
    attempt, item = found
    if attempt is not None and attempt.coordinator_id != coordinator_id:
        attempt, item = None, None
    fence(attempt, item, lease_token, now)
    assert attempt is not None and item is not None
    return attempt, item


def require_running(attempt: Attempt, action: str) -> None:
    if attempt.status != AttemptStatus.RUNNING:
        raise IllegalTransition(
            f"cannot {action} an attempt that is {attempt.status.value}: "
            "start it with its run identity first"
        )


def dag_violations(
    keys: Sequence[str], depends_on: Sequence[Sequence[str]], path: str = "lane.items"
) -> list[FieldViolation]:
    """Duplicate keys, unknown or self dependencies, and cycles of a lane's items."""
    out: list[FieldViolation] = []
    seen: dict[str, int] = {}
    for index, key in enumerate(keys):
        if not key:
            out.append(FieldViolation(f"{path}[{index}].key", "is required"))
        elif key in seen:
            out.append(FieldViolation(f"{path}[{index}].key", f"duplicates the key {key!r}"))
        else:
            seen[key] = index
    for index, deps in enumerate(depends_on):
        for dep_index, dep in enumerate(deps):
            where = f"{path}[{index}].depends_on[{dep_index}]"
            if dep == keys[index]:
                out.append(FieldViolation(where, "an item cannot depend on itself"))
            elif dep not in seen:
                out.append(FieldViolation(where, f"names no item of the lane: {dep!r}"))
    if out:
        return out
    cycle = find_cycle({k: list(d) for k, d in zip(keys, depends_on, strict=True)})
    if cycle:
        index = seen[cycle[0]]
        out.append(
            FieldViolation(f"{path}[{index}].depends_on", "forms a cycle: " + " -> ".join(cycle))
        )
    return out


def find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """A cycle in ``graph`` (node → nodes it depends on) as a closed path, or []."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(graph, white)
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        color[node] = grey
        stack.append(node)
        for nxt in graph.get(node, ()):
            if color.get(nxt, black) == grey:
                return [*stack[stack.index(nxt) :], nxt]
            if color.get(nxt) == white:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        color[node] = black
        return []

    for node in sorted(graph):
        if color[node] == white:
            found = visit(node)
            if found:
                return found
    return []


# --- policy stops ----------------------------------------------------------------------------

# Conservative on purpose: a false positive costs a human a click, a false negative may cost a
# production outage. Each pattern names the phrase it reports.
_SENSITIVE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, re.IGNORECASE))
    for label, pattern in (
        ("production deploy", r"\b(deploy|release|ship|push|rollout)\w*\b.{0,40}\bprod(uction)?\b"),
        ("production deploy", r"\bprod(uction)?\b.{0,20}\b(deploy|release|rollout)\w*\b"),
        (
            "deleting data",
            r"\b(delete|drop|truncate|purge|wipe|destroy|erase)\w*\b.{0,40}"
            r"\b(data|database|table|bucket|backups?|records?|users?|prod\w*|volume|cluster)\b",
        ),
        ("deleting data", r"\brm\s+-rf\b"),
        ("force push", r"\bforce[- ]push\w*\b|\bpush\b.{0,20}--force\b|\bgit\s+push\s+-f\b"),
        (
            "credential change",
            r"\b(rotate|change|reset|revoke|update|set)\w*\b.{0,30}"
            r"\b(credential|password|secret|api[- ]?key|token|ssh[- ]key|certificate)s?\b",
        ),
        (
            "payment",
            r"\b(payments?|payouts?|refunds?|invoices?|wire transfers?|billing|purchases?"
            r"|charge (the )?(card|customer)s?)\b",
        ),
        ("permission change", r"\b(grant|give)\w*\b.{0,30}\b(admin|root|owner)\b"),
        ("destructive infrastructure", r"\bterraform\s+destroy\b|\bkubectl\s+delete\b"),
    )
)


def sensitive_phrase(*texts: str) -> str:
    """The first sensitive action found in ``texts``, as '<label>: "<matched text>"', or ''."""
    for text in texts:
        if not text:
            continue
        for label, pattern in _SENSITIVE_PATTERNS:
            match = pattern.search(text)
            if match:
                return f'{label}: "{match.group(0)}"'
    return ""


class PolicyStop(NamedTuple):
    """Why an item stops for a human ('' when it does not), and whether it was sensitive."""

    reason: str
    sensitive: bool


def policy_stop_reason(item: Item, allowed_action_classes: Iterable[str]) -> PolicyStop:
    """Why a new or resumed item must stop for a human, and whether it was sensitive.

    Returns ("", False) when nothing stops it.
    """
    allowed = set(allowed_action_classes)
    for action_class in item.action_classes:
        if action_class not in allowed:
            return PolicyStop(f"action class not allowed: {action_class}", False)
    if item.needs_human:
        return PolicyStop("needs a human", False)
    phrase = sensitive_phrase(item.title, item.brief)
    if phrase:
        return PolicyStop(f"sensitive action: {phrase}", True)
    return PolicyStop("", False)


# --- labels ----------------------------------------------------------------------------------


def item_next_action(item: Item, around: Surroundings | None = None) -> str:
    """The next-action label of an item. A queued one shows the first gate holding it
    (:func:`~.leasability.holding_gates`, its lane's hold read through its ``held`` mirror;
    ``around`` None: capacity, keys and backoff are not known and not shown)."""
    kind = item.kind.value.lower()
    state = item.state
    if state == ItemState.QUEUED:
        gates = holding_gates(item, LaneHold.mirrored(item), around)
        if gates and around is not None:
            return _queued_label(item, gates[0], around)
        if gates:
            return "wait: lane held"  # without ``around`` only the lane's hold is known
        return f"lease {kind} ({item.worker_class})"
    if state == ItemState.WAITING:
        return "wait: dependencies"
    if state == ItemState.LEASED:
        return f"start {kind} ({item.worker_class})"
    if state == ItemState.RUNNING:
        return f"running {kind} ({item.worker_class})"
    if state == ItemState.AWAITING_APPROVAL:
        return f"approve {kind}"
    if state == ItemState.STOPPED:
        return "human: resume or cancel"
    if state == ItemState.DEAD:
        return "human: retry or cancel"
    if state == ItemState.SUCCEEDED:
        return "done"
    return "cancelled"


def _queued_label(item: Item, gate: Gate, around: Surroundings) -> str:
    if gate == Gate.DISABLED:
        return "wait: switched off"
    if gate in (Gate.PAUSED, Gate.BLOCKED):
        return "wait: lane held"
    if gate == Gate.BACKOFF:
        return "wait: backoff"
    if gate == Gate.CAPACITY:
        used, cap = around.capacity.get(item.worker_class, (0, 0))
        return f"wait: {item.worker_class} {used}/{cap}"
    if gate in (Gate.EXCLUSIVE, Gate.FENCED):
        return f"wait: {', '.join(held_keys(item, around))} held"
    return "wait: budget"


_LANE_LABELS = {
    LaneState.LIVE: "live",
    LaneState.DONE: "done",
    LaneState.CLOSED_OUT: "human close-out",
    LaneState.CANCELLED: "cancelled",
}

_ITEM_ORDER = {
    ItemState.AWAITING_APPROVAL: 0,
    ItemState.STOPPED: 1,
    ItemState.DEAD: 2,
    ItemState.RUNNING: 3,
    ItemState.LEASED: 4,
    ItemState.QUEUED: 5,
    ItemState.WAITING: 6,
}


def lane_next_action(
    lane: Lane,
    items: Sequence[Item],
    open_blockers: int = 0,
    around: Surroundings | None = None,
) -> str:
    """The next-action label of a lane: its terminal label, its gate, or its most urgent item."""
    if lane.state in _LANE_LABELS:
        return _LANE_LABELS[lane.state]
    if lane.paused:
        return "paused"
    if open_blockers:
        return "blocked"
    pending = [i for i in items if i.state in _ITEM_ORDER]
    if not pending:
        return "done" if items else "add items"
    first = min(pending, key=lambda i: (_ITEM_ORDER[i.state], -i.priority, i.seq))
    return item_next_action(first, around)


def stage_class_defaults() -> dict[str, str]:
    """Default worker classes of the STANDARD stages."""
    return {
        ItemKind.BUILD.value: "codex",
        ItemKind.REVIEW.value: "claude",
        ItemKind.FIX.value: "codex",
        ItemKind.INTEGRATE.value: "machine",
        ItemKind.SHIP.value: "machine",
    }


def lease_expiry(now: datetime, lease_seconds: int) -> datetime:
    return now + timedelta(seconds=lease_seconds)


# --- the switch ------------------------------------------------------------------------------

# What a person keeps while coordination is switched off: seeing the state and administering
# (the coordinator's configuration, keys, grants), so that it can be switched back on. Work —
# leasing, changing lanes and items, decisions, maintenance — stops for everyone, and a work key
# or the service key loses every call on the coordinator, reads included.
_KEPT_BY_HUMANS_WHILE_OFF = frozenset({Access.READ, Access.CONFIGURE})


def coordination_on(coordinator: Coordinator | None, platform_enabled: bool) -> bool:
    """Whether coordination is switched on for the platform (and for ``coordinator``)."""
    return platform_enabled and (coordinator is None or coordinator.enabled)


def switch_refusal(
    principal: Principal, coordinator: Coordinator | None, platform_enabled: bool, access: Access
) -> CoordinationDisabled | None:
    """The one decision of the switch: the refusal of ``principal``'s ``access`` to
    ``coordinator`` (None: the platform only) while coordination is switched off, else None.
    Called only once ``principal`` is authorized, so a caller who may not see the coordinator
    never learns whether it is switched off."""
    if principal.is_human and access in _KEPT_BY_HUMANS_WHILE_OFF:
        return None
    if not platform_enabled:
        return CoordinationDisabled("coordination is switched off for the platform")
    if coordinator is not None and not coordinator.enabled:
        return CoordinationDisabled(
            f"coordination is switched off for work coordinator {coordinator.coordinator_id}"
        )
    return None


def require_coordination_on(
    principal: Principal, coordinator: Coordinator | None, platform_enabled: bool, access: Access
) -> None:
    """Raise :func:`switch_refusal`'s refusal, if there is one."""
    refusal = switch_refusal(principal, coordinator, platform_enabled, access)
    if refusal is not None:
        raise refusal


# --- leasing ---------------------------------------------------------------------------------


def ask_is_fresh(worker: Worker | None, now: datetime) -> bool:
    """Whether the worker's last ask is recent enough not to be written again: a long-poll
    re-asks on every wake, and one write per few seconds is plenty for why/escalation."""
    return (
        worker is not None
        and worker.last_ask_time is not None
        and now - worker.last_ask_time < timedelta(seconds=ASK_REFRESH_SECONDS)
    )


def check_run_identity(identity: RunIdentity, path: str, now: datetime) -> None:
    """Refuse a run identity whose account looks like a credential or that started after
    ``now`` (the server's time, with a second of slack). The transport's field rules say the
    same; the domain keeps them because a credential must never be stored, whoever calls."""
    if identity.account and looks_like_credential(identity.account):
        raise InvalidArgument.single(
            f"{path}.account", "looks like a credential; give a non-secret account label"
        )
    if identity.started_at is not None and identity.started_at > now + timedelta(seconds=1):
        raise InvalidArgument.single(f"{path}.started_at", "must not be after the server's time")


def check_evidence(kind: ItemKind, evidence: Evidence) -> None:
    """A REVIEW completes with a verdict, a SHIP with a receipt."""
    if kind == ItemKind.REVIEW and evidence.verdict is None:
        raise InvalidArgument.single("evidence.verdict", "is required for a REVIEW item")
    if kind == ItemKind.SHIP and not (evidence.receipt and evidence.receipt.to_json()):
        raise InvalidArgument.single("evidence.receipt", "is required for a SHIP item")


def check_checkpoint(checkpoint: Checkpoint) -> None:
    blocked = checkpoint.blocked_reason
    if blocked and blocked not in CHECKPOINT_BLOCKED_REASONS:
        raise InvalidArgument.single(
            "checkpoint.blocked_reason",
            "must be one of " + ", ".join(sorted(CHECKPOINT_BLOCKED_REASONS)),
        )


# --- specs and configuration -----------------------------------------------------------------


def check_item_specs(
    class_capacity: Mapping[str, int], specs: Sequence[ItemSpec], path: str
) -> None:
    """Refuse CUSTOM-lane item specs without a key or a known worker class, with a kind other
    than TASK, a malformed placement or a backoff coefficient below 1."""
    violations: list[FieldViolation] = []
    single = path == "item"
    for index, spec in enumerate(specs):
        where = path if single else f"{path}[{index}]"
        if not spec.key:
            violations.append(FieldViolation(f"{where}.key", "is required"))
        if spec.kind not in (None, ItemKind.TASK):
            violations.append(FieldViolation(f"{where}.kind", "must be TASK in a CUSTOM lane"))
        if not spec.worker_class:
            violations.append(FieldViolation(f"{where}.worker_class", "is required"))
        elif spec.worker_class not in class_capacity:
            violations.append(
                FieldViolation(
                    f"{where}.worker_class",
                    f"unknown worker class {spec.worker_class!r} "
                    f"(known: {', '.join(sorted(class_capacity))})",
                )
            )
        for problem in placement_problems(spec.placement):
            violations.append(FieldViolation(f"{where}.placement", problem))
        problem = max_run_problem(spec.max_run_seconds)
        if problem:
            violations.append(FieldViolation(f"{where}.max_run_duration", problem))
        policy = spec.retry_policy
        if policy.backoff_coefficient is not None and policy.backoff_coefficient < 1.0:
            violations.append(
                FieldViolation(f"{where}.retry_policy.backoff_coefficient", "must be at least 1.0")
            )
    if violations:
        raise InvalidArgument(violations)


def max_run_problem(seconds: int | None) -> str:
    """What is wrong with a max_run_duration ("" when nothing: unset, or 1 minute to 7 days)."""
    if seconds is None or MIN_RUN_SECONDS <= seconds <= MAX_RUN_SECONDS_LIMIT:
        return ""
    return f"must be between {MIN_RUN_SECONDS}s and {MAX_RUN_SECONDS_LIMIT}s"


# A worker class's name, as the protos' class patterns have it.
_CLASS_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")

_CONFIG_FIELDS = {
    "class_capacity",
    "max_run_seconds",
    "retry_policy",
    "review_policy",
    "allowed_action_classes",
    "digest_owner",
    "escalate_after_seconds",
    "parent_coordinator_id",
}


def apply_config_changes(config: CoordinatorConfig, changes: dict[str, Any]) -> CoordinatorConfig:
    """A new configuration with ``changes`` (already parsed by transport) applied."""
    unknown = set(changes) - _CONFIG_FIELDS
    if unknown:
        raise InvalidArgument.single("update_mask", f"cannot update {', '.join(sorted(unknown))}")
    capacity = changes.get("class_capacity")
    if isinstance(capacity, CapacityEntries):
        changes = {**changes, "class_capacity": capacity.over(config.class_capacity)}
    max_run = changes.get("max_run_seconds")
    if isinstance(max_run, CapacityEntries):
        changes = {**changes, "max_run_seconds": max_run.over(config.max_run_seconds)}
    updated = replace(config, **changes)
    violations: list[FieldViolation] = []
    if "retry_policy" in changes:
        policy: RetryPolicy = changes["retry_policy"].over(config.retry_policy)
        updated = replace(updated, retry_policy=policy)
        if policy.backoff_coefficient is not None and policy.backoff_coefficient < 1.0:
            violations.append(
                FieldViolation(
                    "work_coordinator.retry_policy.backoff_coefficient", "must be at least 1.0"
                )
            )
        if policy.maximum_attempts is not None and not 1 <= policy.maximum_attempts <= 10:
            violations.append(
                FieldViolation(
                    "work_coordinator.retry_policy.maximum_attempts", "must be between 1 and 10"
                )
            )
    for worker_class, seconds in sorted(updated.max_run_seconds.items()):
        problem = max_run_problem(seconds)
        if not _CLASS_NAME.fullmatch(worker_class):
            problem = "names no worker class (a-z, 0-9 and '-', at most 32)"
        if problem and "max_run_seconds" in changes:
            violations.append(
                FieldViolation(f"work_coordinator.max_run_duration[{worker_class}]", problem)
            )
    if "review_policy" in changes:
        updated = replace(
            updated, review_policy=changes["review_policy"].over(config.review_policy)
        )
    if violations:
        raise InvalidArgument(violations)
    return updated


# An address as mail servers take it: one "@", no spaces or angle brackets, a dotted domain.
_EMAIL = re.compile(r"[^@\s<>\"(),;:]+@[^@\s<>\"(),;:]+\.[A-Za-z0-9-]{2,}")


def require_digest_owner(scope: Scope, config: CoordinatorConfig) -> None:
    """An ORG work coordinator's digest owner is required; any digest owner is an e-mail
    address (the daily digest and the HUMAN_NEEDED mails go to it)."""
    owner = config.digest_owner
    where = "work_coordinator.digest_owner"
    if not owner:
        if scope == Scope.ORG:
            raise InvalidArgument.single(where, "is required for an ORG work coordinator")
        return
    if _EMAIL.fullmatch(owner) is None:
        raise InvalidArgument.single(where, f"must be an e-mail address, not {owner!r}")
