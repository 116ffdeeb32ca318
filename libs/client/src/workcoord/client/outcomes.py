"""What a worker's handler answers for one lease: complete, fail, checkpoint or release."""

from __future__ import annotations

from dataclasses import dataclass, field

from workcoord.api.v1 import lane_pb2

__all__ = [
    "Checkpointed",
    "Completed",
    "Failed",
    "HandlerResult",
    "Outcome",
    "Released",
    "as_outcome",
    "outcome_detail",
    "outcome_kind",
]


@dataclass(frozen=True, slots=True)
class Completed:
    """Finish successfully with ``evidence`` (a verdict for REVIEW, a receipt for SHIP)."""

    evidence: lane_pb2.Evidence = field(default_factory=lane_pb2.Evidence)


@dataclass(frozen=True, slots=True)
class Failed:
    """Fail the attempt; a retryable failure requeues with backoff while attempts remain."""

    message: str
    error_type: str = ""
    retryable: bool = True


@dataclass(frozen=True, slots=True)
class Checkpointed:
    """End the attempt with a checkpoint; the item requeues for a continuation."""

    checkpoint: lane_pb2.Checkpoint


@dataclass(frozen=True, slots=True)
class Released:
    """Give the lease back without burning an attempt."""

    reason: str = ""


Outcome = Completed | Failed | Checkpointed | Released
# A handler may also return bare evidence (completed with it) or None (completed, no evidence).
HandlerResult = Outcome | lane_pb2.Evidence | None


def as_outcome(result: HandlerResult) -> Outcome:
    if result is None:
        return Completed()
    if isinstance(result, lane_pb2.Evidence):
        return Completed(result)
    return result


def outcome_kind(outcome: Outcome) -> str:
    if isinstance(outcome, Completed):
        return "completed"
    if isinstance(outcome, Failed):
        return "failed"
    if isinstance(outcome, Checkpointed):
        return "checkpointed"
    return "released"


def outcome_detail(outcome: Outcome) -> str:
    if isinstance(outcome, Completed):
        return outcome.evidence.summary
    if isinstance(outcome, Failed):
        retry = "retryable" if outcome.retryable else "not retryable"
        return f"{outcome.error_type or 'error'} ({retry}): {outcome.message}"
    if isinstance(outcome, Checkpointed):
        return outcome.checkpoint.summary
    return outcome.reason
