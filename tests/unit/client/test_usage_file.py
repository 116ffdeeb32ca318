"""``$WORKCOORD_USAGE_FILE``: ``worker run`` passes on the totals its command writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.cli.usage_file import UsageFile

from .fakes import GOOD_TOKEN, FakeCoordinator
from .test_supervisor import checkout, labels, run_cli

__all__ = ["checkout", "labels"]  # fixtures


def test_good_totals_are_read_and_bad_or_lower_ones_skipped(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    usage = UsageFile(path)
    assert usage.read() is None  # no file yet
    path.write_text(json.dumps({"inputTokens": "100", "costMicros": "5000", "model": "opus"}))
    first = lane_pb2.Usage(input_tokens=100, cost_micros=5000, model="opus")
    assert usage.read() == first
    for bad in ('{"inputTokens": "1', '{"costMicros": "-3"}', '{"nope": 1}', ""):
        path.write_text(bad)
        assert usage.read() == first, bad
    path.write_text(json.dumps({"inputTokens": "99", "costMicros": "6000"}))  # lower: skipped
    assert usage.read() == first
    path.write_text("{" + " " * 5000 + "}")  # too large
    assert usage.read() == first
    path.write_text(json.dumps({"inputTokens": "150", "costMicros": "6000", "model": "opus"}))
    assert usage.read() == lane_pb2.Usage(input_tokens=150, cost_micros=6000, model="opus")


def test_the_final_write_carries_the_commands_usage(
    labels: None,
    coordinator: FakeCoordinator,
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKCOORD_TOKEN", GOOD_TOKEN)
    script = (
        'echo \'{"outputTokens": "42", "costMicros": "1500", "model": "m1"}\' '
        '> "$WORKCOORD_USAGE_FILE"'
    )
    code, out, _ = run_cli(
        capsys, "--coordinator", "c1", "--class", "machine", "--address", coordinator.address,
        "--once", "--json", "--", "sh", "-c", script,
    )  # fmt: skip
    assert code == 0, out
    complete, _ = coordinator.recorded.last("Complete")
    assert isinstance(complete, worker_pb2.CompleteRequest)
    assert complete.usage == lane_pb2.Usage(output_tokens=42, cost_micros=1500, model="m1")
