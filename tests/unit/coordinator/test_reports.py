"""What workers report (run identity, evidence and its receipt, checkpoint, failure) is typed
in the domain and stored as a strict document (``domain/documents.py``): every field of every
message survives the round trip, what is stored is the proto's own JSON (so release 0.1 reads
it), what 0.1 stored still reads and is written back unchanged, and a stored key that names no
field is refused by name rather than dropped. The placement (stored by the proto's own mapping)
and a worker's fence are read strictly too."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf import json_format

from tests.contract.records import attempt, item
from tests.support.reports import (
    COLUMNS,
    RELEASES,
    REPORTS,
    current_documents,
    every_field_set,
    proto_json,
    release_0_1_documents,
    stored_documents,
)
from workcoord.api.v1 import lane_pb2, policy_pb2
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.documents import Document, UnreadableDocument, stored_as
from workcoord.coordinator.domain.model import ItemKind
from workcoord.coordinator.domain.specs import (
    Artifact,
    Checkpoint,
    Evidence,
    Failure,
    Receipt,
    RunIdentity,
    Verdict,
)
from workcoord.coordinator.transport import mapping as m
from workcoord.kit.errors import InvalidArgument

STARTED = datetime(2025, 3, 4, 5, 6, 7, 123000, tzinfo=UTC)
KINDS = sorted(REPORTS)


def _through_a_json_column(document: dict[str, Any]) -> Any:
    return json.loads(json.dumps(document))


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_of_a_report_survives_the_stored_round_trip(kind: str) -> None:
    report = REPORTS[kind]
    pb = every_field_set(report.message)
    value = report.from_pb(pb)
    stored = _through_a_json_column(value.to_json())
    assert report.document.from_json(stored) == value
    assert report.to_pb(report.document.from_json(stored)) == pb


@pytest.mark.parametrize("kind", KINDS)
def test_what_is_stored_is_the_protos_own_json(kind: str) -> None:
    # Release 0.1 parsed these documents with the proto's JSON parser: while it may run on the
    # same database (a rolling upgrade, a rollback) the stored keys stay the proto's names.
    report = REPORTS[kind]
    pb = every_field_set(report.message)
    assert report.from_pb(pb).to_json() == proto_json(pb)
    empty = report.message()
    assert report.from_pb(empty).to_json() == proto_json(empty) == {}


@pytest.mark.parametrize("micros", [0, 123000, 123456])
def test_times_are_written_as_the_proto_json_writes_them(micros: int) -> None:
    pb = every_field_set(lane_pb2.RunIdentity)
    assert isinstance(pb, lane_pb2.RunIdentity)
    pb.started_at.FromDatetime(STARTED.replace(microsecond=micros))
    identity = m.run_identity_from_pb(pb)
    assert identity.to_json() == proto_json(pb)
    assert RunIdentity.from_json(identity.to_json()) == identity
    assert identity.started_at == STARTED.replace(microsecond=micros)


# ------------------------------------------------------------------ what release 0.1 stored


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_documents_stored_by_earlier_releases_read_and_are_written_back_unchanged(
    column: str, release: str
) -> None:
    report = REPORTS[COLUMNS[column]]
    for stored in stored_documents(release)[column]:
        assert report.document.from_json(stored).to_json() == stored


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_readers_are_shown_what_release_0_1_showed(column: str) -> None:
    # 0.1 parsed each stored document into its message, dropping what the message lacks.
    report = REPORTS[COLUMNS[column]]
    for stored in release_0_1_documents()[column]:
        shown_by_0_1 = report.message()
        json_format.ParseDict(stored, shown_by_0_1, ignore_unknown_fields=True)
        shown = report.to_pb(report.document.from_json(stored))
        assert (shown if shown is not None else report.message()) == shown_by_0_1


def _paths(document: Any, prefix: str = "") -> set[str]:
    """Every key of ``document``, nested ones as ``outer.inner`` (list items as ``outer[]``)."""
    if isinstance(document, list):
        return {p for item in document for p in _paths(item, prefix + "[]")}
    if not isinstance(document, dict):
        return set()
    out: set[str] = set()
    for key, value in document.items():
        path = f"{prefix}.{key}" if prefix else key
        out |= {path} | _paths(value, path)
    return out


@pytest.mark.parametrize("column", [*sorted(COLUMNS), "workers.fence"])
def test_this_release_writes_only_keys_the_previous_release_stored(column: str) -> None:
    # Old and new coordinators share one database during a rollout, and a rollback runs the
    # previous release on what this one wrote: a key it does not know would fail its reads.
    # A new stored field ships in two releases (docs/adding-a-field.md).
    written = set().union(*(_paths(d) for d in current_documents()[column]))
    known = set().union(*(_paths(d) for d in stored_documents(RELEASES[-1])[column]))
    assert written <= known, f"not readable by the previous release: {sorted(written - known)}"


def test_numbers_written_as_numbers_read_too() -> None:
    # proto3 JSON readers take an int64 as a string or a number; so does the document.
    assert RunIdentity.from_json({"pid": 42, "engine": "codex"}) == RunIdentity(42, engine="codex")
    assert RunIdentity.from_json({"pid": "42"}).pid == 42


def test_a_key_left_out_reads_as_the_default() -> None:
    assert Artifact.from_json({"uri": "s3://b/x"}) == Artifact("", "s3://b/x")
    assert Evidence.from_json({}) == Evidence()
    assert Evidence.from_json({"receipt": {}}) == Evidence(receipt=Receipt())


# ------------------------------------------------------------------ refused, by name


@pytest.mark.parametrize(
    ("document", "stored", "path"),
    [
        (RunIdentity, {"pid": "1", "worktree": "/srv/x"}, "worktree"),
        (Evidence, {"receipt": {"environment": "prod", "when": "today"}}, "receipt.when"),
        (Evidence, {"artifacts": [{"name": "a"}, {"name": "b", "url": "u"}]}, "artifacts[1].url"),
        (Evidence, {"checks": [{"name": "pytest", "outcome": "PASSED"}]}, "checks[0].outcome"),
        (Checkpoint, {"summary": "half", "files": ["a.py"]}, "files"),
        (Failure, {"message": "boom", "retriable": True}, "retriable"),
        (Receipt, {"environment": "prod", "shipped_at": "2026-01-01T00:00:00Z"}, "shipped_at"),
    ],
)
def test_a_stored_key_that_names_no_field_is_refused_by_name(
    document: type[Document], stored: dict[str, Any], path: str
) -> None:
    with pytest.raises(UnreadableDocument) as caught:
        document.from_json(stored)
    assert caught.value.path == path
    assert f"stored {document.__name__}: {path}: unknown field" in str(caught.value)


@pytest.mark.parametrize(
    ("document", "stored", "path"),
    [
        (RunIdentity, {"pid": "forty"}, "pid"),
        (RunIdentity, {"pid": True}, "pid"),
        (RunIdentity, {"started_at": "yesterday"}, "started_at"),
        (RunIdentity, {"started_at": "2026-01-01T00:00:00"}, "started_at"),  # no offset
        (RunIdentity, {"engine": 7}, "engine"),
        (Evidence, {"verdict": "MAYBE"}, "verdict"),
        (Evidence, {"checks": [{"name": "pytest", "status": "GREEN"}]}, "checks[0].status"),
        (Evidence, {"links": "https://x.test"}, "links"),
        (Evidence, {"receipt": ["prod"]}, "receipt"),
        (Failure, {"message": "boom", "retryable": "yes"}, "retryable"),
    ],
)
def test_a_stored_value_of_the_wrong_type_is_refused_by_name(
    document: type[Document], stored: dict[str, Any], path: str
) -> None:
    with pytest.raises(UnreadableDocument) as caught:
        document.from_json(stored)
    assert caught.value.path == path


def test_readers_of_items_and_attempts_refuse_an_unknown_stored_field() -> None:
    work = item("it_a", "ln_a")
    with pytest.raises(UnreadableDocument, match=r"stored Evidence: verdict_v2: unknown"):
        m.item_to_pb(replace(work, evidence={"summary": "ok", "verdict_v2": "PASS"}))
    with pytest.raises(UnreadableDocument, match=r"stored Failure: retriable"):
        m.item_to_pb(replace(work, evidence=None, last_error={"retriable": True}))
    lease = attempt("ls_a", work)
    with pytest.raises(UnreadableDocument, match=r"stored RunIdentity: worktree"):
        m.attempt_to_pb(replace(lease, run_identity={"pid": "1", "worktree": "/x"}))


def test_a_renamed_field_keeps_reading_and_writing_its_stored_name() -> None:
    @dataclass(frozen=True, slots=True)
    class Renamed(Document):
        workdir: str = stored_as("worktree_path", "")

    assert Renamed.from_json({"worktree_path": "/srv/x"}) == Renamed("/srv/x")
    assert Renamed("/srv/x").to_json() == {"worktree_path": "/srv/x"}
    with pytest.raises(UnreadableDocument, match="workdir: unknown field"):
        Renamed.from_json({"workdir": "/srv/x"})


# ------------------------------------------------------------------ an attempt ended by policy


def test_an_attempt_the_coordinator_ended_keeps_its_cause_and_shows_no_error() -> None:
    (stored,) = (e for e in release_0_1_documents()["attempts.error"] if "cause" in e)
    ended = Failure.from_json(stored)
    assert ended == Failure(cause=rules.POLICY_CAUSE)
    assert ended.to_json() == stored
    assert m.failure_to_pb(ended) is None
    lease = replace(attempt("ls_a", item("it_a", "ln_a")), error=stored)
    assert not m.attempt_to_pb(lease).HasField("error")


# ------------------------------------------------------------------ placement and fences


def test_the_placement_fields_the_rules_know_are_the_protos() -> None:
    assert {f.name for f in policy_pb2.Placement.DESCRIPTOR.fields} == rules.PLACEMENT_FIELDS


def test_a_stored_placement_reads_strictly() -> None:
    for stored in release_0_1_documents()["placement"]:
        shown = policy_pb2.Placement()
        m.placement_to_pb(stored, shown)
        assert proto_json(shown) == stored
    with pytest.raises(UnreadableDocument, match="Placement"):
        m.from_dict({"worker_id": "w1", "near": "repo"}, policy_pb2.Placement())
    with pytest.raises(UnreadableDocument, match="Placement"):
        m.from_dict({"worker_id": 7}, policy_pb2.Placement())


def test_a_malformed_stored_placement_is_shown_with_what_still_reads() -> None:
    # Handled, not refused: the item is held back and explained, a worker holding it fenced.
    stored = {"worker_id": "w1", "exclusive": "gpu:0", "near": "repo"}
    assert rules.placement_problems(stored)
    shown = policy_pb2.Placement()
    m.placement_to_pb(stored, shown)
    assert shown == policy_pb2.Placement(worker_id="w1")
    assert stored == {"worker_id": "w1", "exclusive": "gpu:0", "near": "repo"}  # untouched


def test_a_stored_fence_reads_and_an_unknown_or_mistyped_key_is_refused() -> None:
    (stored,) = release_0_1_documents()["workers.fence"]
    shown = m.worker_fence_to_pb(stored)
    assert (shown.reason, shown.lease_id, shown.item_id, shown.lane_id) == (
        stored["reason"],
        "ls_1",
        "it_1",
        "ln_1",
    )
    assert list(shown.exclusive) == stored["exclusive"]
    assert shown.since.ToDatetime(tzinfo=UTC) == datetime.fromisoformat(stored["since"])
    assert shown.expire_time.ToDatetime(tzinfo=UTC) == datetime.fromisoformat(stored["expire_time"])
    for bad, path in (
        ({**stored, "lifted": True}, "lifted"),
        ({**stored, "exclusive": "resource:gpu-0"}, "exclusive"),
        ({**stored, "lease_id": 1}, "lease_id"),
        ({**stored, "since": "last week"}, "since"),
    ):
        with pytest.raises(UnreadableDocument) as caught:
            m.worker_fence_to_pb(bad)
        assert caught.value.path == path


# ------------------------------------------------------------------ the rules on reports


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


# ------------------------------------------------------------------ a batch's run identities


def test_a_run_identity_shared_by_many_attempts_is_converted_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker loop's leases share one run identity: a batch's answer converts it once, and
    each attempt still gets its own copy (changing one leaves the others alone)."""
    reads: list[object] = []
    real = RunIdentity.from_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type[RunIdentity], data: Any) -> RunIdentity:
        reads.append(data)
        return real(cls, data)  # type: ignore[no-any-return]

    monkeypatch.setattr(RunIdentity, "from_json", classmethod(counting))
    stored = {"pid": 4242, "agent_id": "batch-shared-identity", "hostname": "h1"}
    lease = replace(attempt("ls_a", item("it_a", "ln_a")), run_identity=stored)
    first, second = (m.attempt_to_pb(replace(lease, lease_id=f"ls_{n}")) for n in (1, 2))
    assert len(reads) == 1
    assert first.run_identity == second.run_identity
    assert first.run_identity.agent_id == "batch-shared-identity"
    first.run_identity.agent_id = "changed"
    assert m.attempt_to_pb(lease).run_identity.agent_id == "batch-shared-identity"
    # Another document (the same values but another type) is read on its own.
    m.attempt_to_pb(replace(lease, run_identity={**stored, "pid": "4242"}))
    assert len(reads) == 2
