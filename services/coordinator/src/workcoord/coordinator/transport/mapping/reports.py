"""What workers report: run identities, evidence, lease asks, checkpoints and failures.

Both ways field by field: a report is stored as its domain document (``domain/documents.py``),
never as the message's JSON, so a message field renamed breaks these mappers (and their
round-trip tests, which set every field of every message) instead of what is stored."""

from __future__ import annotations

from workcoord.api.v1 import (
    lane_pb2,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.coordinator.domain.model import UsageTotal
from workcoord.coordinator.domain.results import UsageReport
from workcoord.coordinator.domain.specs import (
    Artifact,
    Checkpoint,
    CheckResult,
    CheckStatus,
    Evidence,
    Failure,
    LeaseAsk,
    Receipt,
    RunIdentity,
    Usage,
    Verdict,
)

from .fields import copied
from .scalars import enum_from_pb, from_optional_ts, set_message, ts

# Fields of one name and type in the message and the record, copied as they are.
_RUN_IDENTITY = ("pid", "agent_id", "engine", "account", "hostname", "worktree_path", "branch")
_LEASE_ASK = (
    "worker_id",
    "worker_class",
    "max_items",
    "lease_seconds",
    "wait_seconds",
    "request_id",
)
_CHECKPOINT = ("summary", "next_action", "blocked_reason")
_ARTIFACT = ("name", "uri", "sha256")
_RECEIPT = ("environment", "version", "url")
_FAILURE = ("message", "type", "retryable")
_USAGE = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micros",
    "model",
)


def run_identity_from_pb(r: lane_pb2.RunIdentity) -> RunIdentity:
    return RunIdentity(**copied(r, _RUN_IDENTITY), started_at=from_optional_ts(r, "started_at"))


def run_identity_to_pb(r: RunIdentity) -> lane_pb2.RunIdentity:
    out = lane_pb2.RunIdentity(**copied(r, _RUN_IDENTITY))
    set_message(out, "started_at", ts(r.started_at))
    return out


def receipt_from_pb(r: lane_pb2.Receipt) -> Receipt:
    return Receipt(**copied(r, _RECEIPT), time=from_optional_ts(r, "time"))


def receipt_to_pb(r: Receipt) -> lane_pb2.Receipt:
    out = lane_pb2.Receipt(**copied(r, _RECEIPT))
    set_message(out, "time", ts(r.time))
    return out


def evidence_from_pb(e: lane_pb2.Evidence) -> Evidence:
    return Evidence(
        summary=e.summary,
        links=tuple(e.links),
        artifacts=tuple(Artifact(**copied(a, _ARTIFACT)) for a in e.artifacts),
        checks=tuple(
            CheckResult(c.name, enum_from_pb(lane_pb2.Check.Status, c.status, CheckStatus))
            for c in e.checks
        ),
        verdict=enum_from_pb(lane_pb2.Evidence.Verdict, e.verdict, Verdict),
        findings=tuple(e.findings),
        receipt=receipt_from_pb(e.receipt) if e.HasField("receipt") else None,
    )


def evidence_to_pb(e: Evidence) -> lane_pb2.Evidence:
    out = lane_pb2.Evidence(
        summary=e.summary,
        links=list(e.links),
        artifacts=[lane_pb2.Artifact(**copied(a, _ARTIFACT)) for a in e.artifacts],
        checks=[
            lane_pb2.Check(name=c.name, status=c.status.value if c.status else None)
            for c in e.checks
        ],
        verdict=e.verdict.value if e.verdict else None,
        findings=list(e.findings),
    )
    set_message(out, "receipt", receipt_to_pb(e.receipt) if e.receipt is not None else None)
    return out


def lease_ask_from_pb(request: worker_pb2.LeaseRequest) -> LeaseAsk:
    identity = request.run_identity
    return LeaseAsk(
        **copied(request, _LEASE_ASK),
        worker_classes=tuple(request.worker_classes),
        run_identity=run_identity_from_pb(identity) if request.HasField("run_identity") else None,
    )


def checkpoint_from_pb(c: lane_pb2.Checkpoint) -> Checkpoint:
    return Checkpoint(**copied(c, _CHECKPOINT), files_changed=tuple(c.files_changed))


def checkpoint_to_pb(c: Checkpoint) -> lane_pb2.Checkpoint:
    return lane_pb2.Checkpoint(**copied(c, _CHECKPOINT), files_changed=list(c.files_changed))


def failure_from_pb(e: lane_pb2.ErrorInfo) -> Failure:
    return Failure(**copied(e, _FAILURE))


def failure_to_pb(f: Failure) -> lane_pb2.ErrorInfo | None:
    """The failure as readers see it; None for an attempt the coordinator ended without a
    report (only its ``cause``, which is not shown)."""
    shown = copied(f, _FAILURE)
    return lane_pb2.ErrorInfo(**shown) if any(shown.values()) else None


def usage_from_pb(request: object) -> Usage | None:
    """The ``usage`` a worker write carries, or None when it carries none."""
    if not request.HasField("usage"):  # type: ignore[attr-defined]
        return None
    u: lane_pb2.Usage = request.usage  # type: ignore[attr-defined]
    return Usage(**copied(u, _USAGE))


def usage_to_pb(u: Usage) -> lane_pb2.Usage:
    return lane_pb2.Usage(**copied(u, _USAGE))


_USAGE_TOTAL = (
    "key",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micros",
    "tokens",
)


def usage_total_to_pb(total: UsageTotal) -> lane_pb2.UsageTotal:
    return lane_pb2.UsageTotal(**copied(total, _USAGE_TOTAL))


def usage_report_to_pb(report: UsageReport) -> work_coordinator_pb2.GetUsageResponse:
    total = usage_total_to_pb(report.total)
    total.key = ""
    return work_coordinator_pb2.GetUsageResponse(
        day=report.day, total=total, groups=[usage_total_to_pb(g) for g in report.groups]
    )
