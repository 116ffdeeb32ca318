from __future__ import annotations

import subprocess
import sys

import pytest

from workcoord.kit import errors
from workcoord.kit.errors import (
    Code,
    FieldViolation,
    InvalidArgument,
    LeaseLost,
    Violations,
    WorkcoordError,
    http_status_for,
)

TABLE = [
    (errors.InvalidArgument, "INVALID_ARGUMENT", Code.INVALID_ARGUMENT, 400),
    (errors.Unauthenticated, "UNAUTHENTICATED", Code.UNAUTHENTICATED, 401),
    (errors.PermissionDenied, "PERMISSION_DENIED", Code.PERMISSION_DENIED, 403),
    (errors.NotFound, "NOT_FOUND", Code.NOT_FOUND, 404),
    (errors.LeaseLost, "LEASE_LOST", Code.ABORTED, 409),
    (errors.EtagMismatch, "ETAG_MISMATCH", Code.ABORTED, 409),
    (errors.AlreadyExists, "ALREADY_EXISTS", Code.ALREADY_EXISTS, 409),
    (errors.IllegalTransition, "ILLEGAL_TRANSITION", Code.FAILED_PRECONDITION, 400),
    (errors.WorkerFenced, "WORKER_FENCED", Code.FAILED_PRECONDITION, 400),
    (errors.CoordinationDisabled, "COORDINATION_DISABLED", Code.UNAVAILABLE, 503),
    (errors.PoolFull, "POOL_FULL", Code.RESOURCE_EXHAUSTED, 429),
    (errors.TooLarge, "TOO_LARGE", Code.RESOURCE_EXHAUSTED, 429),
    (errors.Unimplemented, "UNIMPLEMENTED", Code.UNIMPLEMENTED, 501),
    (errors.Internal, "INTERNAL", Code.INTERNAL, 500),
]


@pytest.mark.parametrize(("cls", "reason", "code", "http"), TABLE)
def test_error_table_matches_api_md(
    cls: type[WorkcoordError], reason: str, code: Code, http: int
) -> None:
    assert cls.reason == reason
    assert cls.code is code
    assert http_status_for(cls.code) == http
    assert issubclass(cls, WorkcoordError)
    assert errors.error_class_for_reason(reason) is cls


def test_http_mapping_follows_code_proto() -> None:
    assert http_status_for(Code.CANCELLED) == 499
    assert http_status_for(Code.DEADLINE_EXCEEDED) == 504
    assert http_status_for(Code.OUT_OF_RANGE) == 400
    assert http_status_for(Code.DATA_LOSS) == 500
    assert http_status_for(Code.UNKNOWN) == 500
    assert http_status_for(99) == 500
    assert [c.value for c in Code] == list(range(17))


def test_invalid_argument_summarises_violations() -> None:
    err = InvalidArgument(
        [FieldViolation("lease_seconds", "must be between 5 and 300"), FieldViolation("a", "b")]
    )
    assert err.message == "invalid argument: lease_seconds must be between 5 and 300; a b"
    assert str(err) == err.message
    assert len(err.field_violations) == 2
    many = InvalidArgument([FieldViolation(f"f{i}", "is required") for i in range(8)])
    assert many.message.endswith("(and 3 more)")


def test_lease_lost_carries_cause() -> None:
    err = LeaseLost("superseded")
    assert err.metadata == {"cause": "superseded"}
    assert err.cause == "superseded"
    assert err.message == "lease lost: superseded"


def test_default_messages_and_metadata() -> None:
    err = errors.NotFound(metadata={"resource": "lane"})
    assert err.message == "not found"
    assert err.metadata == {"resource": "lane"}
    assert errors.Internal().message == "internal error"


def test_violations_collector() -> None:
    v = Violations()
    v.raise_if_any()
    v.add("worker_id", "is required")
    nested = Violations("items[0]")
    nested.add("kind", "is required")
    v.extend(nested)
    assert len(v) == 2 and bool(v)
    with pytest.raises(InvalidArgument) as raised:
        v.raise_if_any()
    assert [f.field for f in raised.value.field_violations] == ["worker_id", "items[0].kind"]


def test_generic_error_keeps_received_code_and_reason() -> None:
    err = errors.generic_error(Code.RESOURCE_EXHAUSTED, "slow down", reason="QUOTA")
    assert err.code is Code.RESOURCE_EXHAUSTED
    assert err.reason == "QUOTA"
    assert WorkcoordError.reason == "UNKNOWN"


def test_errors_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, workcoord.kit.errors; "
        "heavy = ('grpc', 'google.protobuf', 'sqlalchemy', 'pydantic'); "
        "bad = [m for m in heavy if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
