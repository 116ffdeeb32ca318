"""What workers report (run identity, evidence, checkpoint, failure) is typed in the domain and
stored as proto3 JSON: the typed values' JSON is exactly what the protos' own JSON mapping
writes, so stored records keep their shape, and it reads back to the same values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.model import ItemKind
from workcoord.coordinator.domain.specs import (
    Checkpoint,
    Evidence,
    Receipt,
    RunIdentity,
    Verdict,
)
from workcoord.coordinator.transport import mapping as m
from workcoord.kit.errors import InvalidArgument

STARTED = datetime(2025, 3, 4, 5, 6, 7, 123000, tzinfo=UTC)


def _proto_json(message: Message) -> dict[str, object]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _identity_pb(**changes: object) -> lane_pb2.RunIdentity:
    pb = lane_pb2.RunIdentity(
        pid=4242,
        agent_id="agent-1",
        engine="codex",
        account="ci-bot",
        hostname="host-1",
        worktree_path="/srv/work/tree",
        branch="main",
    )
    pb.started_at.FromDatetime(STARTED)
    for name, value in changes.items():
        setattr(pb, name, value)
    return pb


@pytest.mark.parametrize("micros", [0, 123000, 123456])
def test_a_run_identity_is_stored_as_the_proto_json(micros: int) -> None:
    pb = _identity_pb()
    pb.started_at.FromDatetime(STARTED.replace(microsecond=micros))
    identity = m.run_identity_from_pb(pb)
    assert identity.to_json() == _proto_json(pb)
    assert RunIdentity.from_json(identity.to_json()) == identity
    assert identity.started_at == STARTED.replace(microsecond=micros)


def test_evidence_is_stored_as_the_proto_json() -> None:
    pb = lane_pb2.Evidence(
        summary="all green",
        links=["https://example.test/pr/1"],
        artifacts=[lane_pb2.Artifact(name="wheel", uri="s3://b/w.whl", sha256="ab" * 32)],
        checks=[lane_pb2.Check(name="pytest", status=lane_pb2.Check.PASSED)],
        verdict=lane_pb2.Evidence.FAIL,
        findings=["missing test"],
        receipt=lane_pb2.Receipt(environment="prod", version="1.4.2", url="https://x.test"),
    )
    pb.receipt.time.FromDatetime(STARTED)
    evidence = m.evidence_from_pb(pb)
    assert evidence.verdict == Verdict.FAIL
    assert evidence.to_json() == _proto_json(pb)
    assert Evidence.from_json(evidence.to_json()) == evidence
    empty = lane_pb2.Evidence()
    assert m.evidence_from_pb(empty).to_json() == _proto_json(empty) == {}


def test_a_checkpoint_and_a_failure_are_stored_as_the_proto_json() -> None:
    checkpoint_pb = lane_pb2.Checkpoint(
        summary="half", files_changed=["a.py", "b.py"], blocked_reason="secret"
    )
    checkpoint = m.checkpoint_from_pb(checkpoint_pb)
    assert checkpoint.to_json() == _proto_json(checkpoint_pb)
    assert Checkpoint.from_json(checkpoint.to_json()) == checkpoint
    assert m.checkpoint_to_pb(checkpoint) == checkpoint_pb
    for error_pb in (
        lane_pb2.ErrorInfo(message="boom", type="Timeout", retryable=True),
        lane_pb2.ErrorInfo(message="bad"),
    ):
        assert m.failure_from_pb(error_pb).to_json() == _proto_json(error_pb)


def test_the_domain_refuses_a_credential_account_and_a_start_in_the_future() -> None:
    now = STARTED
    ok = RunIdentity(pid=1, account="ci-bot", started_at=now)
    rules.check_run_identity(ok, "run_identity", now)
    with pytest.raises(InvalidArgument) as caught:
        rules.check_run_identity(RunIdentity(account="ghp_" + "a1B2c3D4" * 5), "run_identity", now)
    assert caught.value.field_violations[0].field == "run_identity.account"
    late = RunIdentity(started_at=now.replace(minute=now.minute + 1))
    with pytest.raises(InvalidArgument):
        rules.check_run_identity(late, "run_identity", now)


def test_review_and_ship_evidence_rules() -> None:
    rules.check_evidence(ItemKind.TASK, Evidence())
    with pytest.raises(InvalidArgument, match="verdict"):
        rules.check_evidence(ItemKind.REVIEW, Evidence(summary="looked"))
    rules.check_evidence(ItemKind.REVIEW, Evidence(verdict=Verdict.PASS))
    for receipt in (None, Receipt()):
        with pytest.raises(InvalidArgument, match="receipt"):
            rules.check_evidence(ItemKind.SHIP, Evidence(receipt=receipt))
    rules.check_evidence(ItemKind.SHIP, Evidence(receipt=Receipt("prod", "1.0")))
