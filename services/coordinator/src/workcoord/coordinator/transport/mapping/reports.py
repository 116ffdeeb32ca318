"""What workers report: run identities, evidence, lease asks, checkpoints and failures."""

from __future__ import annotations

from workcoord.api.v1 import (
    lane_pb2,
    worker_pb2,
)
from workcoord.coordinator.domain.specs import (
    Artifact,
    Checkpoint,
    CheckResult,
    Evidence,
    Failure,
    LeaseAsk,
    Receipt,
    RunIdentity,
    Verdict,
)

from .fields import copied
from .scalars import enum_from_pb, from_optional_ts

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


def run_identity_from_pb(r: lane_pb2.RunIdentity) -> RunIdentity:
    return RunIdentity(**copied(r, _RUN_IDENTITY), started_at=from_optional_ts(r, "started_at"))


def evidence_from_pb(e: lane_pb2.Evidence) -> Evidence:
    receipt = e.receipt
    return Evidence(
        summary=e.summary,
        links=tuple(e.links),
        artifacts=tuple(Artifact(a.name, a.uri, a.sha256) for a in e.artifacts),
        checks=tuple(
            CheckResult(c.name, lane_pb2.Check.Status.Name(c.status) if c.status else "")
            for c in e.checks
        ),
        verdict=enum_from_pb(lane_pb2.Evidence.Verdict, e.verdict, Verdict),
        findings=tuple(e.findings),
        receipt=Receipt(
            environment=receipt.environment,
            version=receipt.version,
            url=receipt.url,
            time=from_optional_ts(receipt, "time"),
        )
        if e.HasField("receipt")
        else None,
    )


def lease_ask_from_pb(request: worker_pb2.LeaseRequest) -> LeaseAsk:
    identity = request.run_identity
    return LeaseAsk(
        **copied(request, _LEASE_ASK),
        run_identity=run_identity_from_pb(identity) if request.HasField("run_identity") else None,
    )


def checkpoint_from_pb(c: lane_pb2.Checkpoint) -> Checkpoint:
    return Checkpoint(**copied(c, _CHECKPOINT), files_changed=tuple(c.files_changed))


def checkpoint_to_pb(c: Checkpoint) -> lane_pb2.Checkpoint:
    return lane_pb2.Checkpoint(**copied(c, _CHECKPOINT), files_changed=list(c.files_changed))


def failure_from_pb(e: lane_pb2.ErrorInfo) -> Failure:
    return Failure(message=e.message, type=e.type, retryable=e.retryable)
