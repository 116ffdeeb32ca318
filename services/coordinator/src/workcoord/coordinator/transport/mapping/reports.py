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

from .scalars import from_ts


def run_identity_from_pb(r: lane_pb2.RunIdentity) -> RunIdentity:
    return RunIdentity(
        pid=r.pid,
        agent_id=r.agent_id,
        engine=r.engine,
        account=r.account,
        hostname=r.hostname,
        worktree_path=r.worktree_path,
        branch=r.branch,
        started_at=from_ts(r.started_at) if r.HasField("started_at") else None,
    )


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
        verdict=Verdict(lane_pb2.Evidence.Verdict.Name(e.verdict)) if e.verdict else None,
        findings=tuple(e.findings),
        receipt=Receipt(
            environment=receipt.environment,
            version=receipt.version,
            url=receipt.url,
            time=from_ts(receipt.time) if receipt.HasField("time") else None,
        )
        if e.HasField("receipt")
        else None,
    )


def lease_ask_from_pb(request: worker_pb2.LeaseRequest) -> LeaseAsk:
    identity = request.run_identity
    return LeaseAsk(
        worker_id=request.worker_id,
        worker_class=request.worker_class,
        max_items=request.max_items,
        lease_seconds=request.lease_seconds,
        wait_seconds=request.wait_seconds,
        run_identity=run_identity_from_pb(identity) if request.HasField("run_identity") else None,
        request_id=request.request_id,
    )


def checkpoint_from_pb(c: lane_pb2.Checkpoint) -> Checkpoint:
    return Checkpoint(
        summary=c.summary,
        files_changed=tuple(c.files_changed),
        next_action=c.next_action,
        blocked_reason=c.blocked_reason,
    )


def checkpoint_to_pb(c: Checkpoint) -> lane_pb2.Checkpoint:
    return lane_pb2.Checkpoint(
        summary=c.summary,
        files_changed=list(c.files_changed),
        next_action=c.next_action,
        blocked_reason=c.blocked_reason,
    )


def failure_from_pb(e: lane_pb2.ErrorInfo) -> Failure:
    return Failure(message=e.message, type=e.type, retryable=e.retryable)
