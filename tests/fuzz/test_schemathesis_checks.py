"""The fuzz run's Status check tells a proper google.rpc.Status from everything else."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fuzz.schemathesis_checks import ERROR_INFO, status_problem

JSON = "application/json"


def _status(code: int, reason: str = "INVALID_ARGUMENT", **extra: Any) -> bytes:
    info = {"@type": ERROR_INFO, "reason": reason, "domain": "workcoord"}
    return json.dumps({"code": code, "message": "no", "details": [info], **extra}).encode()


def test_a_proper_status_passes() -> None:
    assert status_problem(400, JSON, _status(3)) is None
    assert status_problem(503, JSON, _status(14, "COORDINATION_DISABLED")) is None
    # Statuses the gateway answers on its own keep their own HTTP status.
    assert status_problem(413, "application/json; charset=utf-8", _status(3, "TOO_LARGE")) is None


@pytest.mark.parametrize(
    ("status", "content_type", "body", "problem"),
    [
        (500, "text/plain", b"Internal Server Error", "not JSON"),
        (400, JSON, b"{", "body is not JSON"),
        (400, JSON, b"[]", "not a google.rpc.Status"),
        (400, JSON, _status(3, extra_field=1), "not a google.rpc.Status"),
        (400, JSON, _status(0), "non-zero"),
        (404, JSON, _status(3), "does not map to HTTP 404"),
        (400, JSON, json.dumps({"code": 3, "message": "no"}).encode(), "0 ErrorInfo"),
        (400, JSON, _status(3, "invalid argument"), "UPPER_SNAKE"),
    ],
)
def test_anything_else_is_named(status: int, content_type: str, body: bytes, problem: str) -> None:
    found = status_problem(status, content_type, body)
    assert found is not None and problem in found, found
