"""``workcoord tracker …``: the requests it builds, and where the credential comes from (an
environment variable or a file, never a flag's value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workcoord.api.v1 import tracker_pb2
from workcoord.cli import trackers
from workcoord.cli.common import CliError
from workcoord.cli.main import build_parser


def parse(*argv: str) -> object:
    return build_parser().parse_args(["tracker", *argv, "--coordinator", "wc_1"])


def test_create_reads_the_credential_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(trackers.CREDENTIAL_ENV, "glpat-fromTheEnvironment\n")
    args = parse("create", "--tracker", "gitlab", "--project", "a/b", "--project", "a/c")
    request = trackers._create_request(args)  # type: ignore[arg-type]
    assert request == tracker_pb2.CreateTrackerConnectionRequest(
        coordinator_id="wc_1",
        tracker_connection=tracker_pb2.TrackerConnection(
            tracker="gitlab", projects=["a/b", "a/c"], credential="glpat-fromTheEnvironment"
        ),
    )


def test_rotate_reads_a_file_and_names_what_changes(tmp_path: Path) -> None:
    secret = tmp_path / "credential"
    secret.write_text("bot@acme.test:ATATT3new\n")
    args = parse("rotate", "trk_1", "--credential-file", str(secret), "--done-status", "Shipped")
    request = trackers._rotate_request(args)  # type: ignore[arg-type]
    assert request.tracker_id == "trk_1"
    assert request.tracker_connection.credential == "bot@acme.test:ATATT3new"
    assert request.tracker_connection.done_status == "Shipped"
    assert list(request.update_mask.paths) == ["credential", "done_status"]


def test_a_missing_credential_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(trackers.CREDENTIAL_ENV, raising=False)
    args = parse("create", "--tracker", "github", "--project", "o/r")
    with pytest.raises(CliError, match="no credential in \\$WORKCOORD_TRACKER_CREDENTIAL"):
        trackers._create_request(args)  # type: ignore[arg-type]
    with pytest.raises(SystemExit):  # there is no flag taking the credential itself
        parse("create", "--tracker", "github", "--project", "o/r", "--credential", "ghp_x")


def test_the_tables_show_health_and_stuck_closures() -> None:
    from workcoord.api.v1 import work_coordinator_pb2
    from workcoord.cli.output import render_table

    listing = tracker_pb2.ListTrackerConnectionsResponse(
        tracker_connections=[
            tracker_pb2.TrackerConnection(
                tracker_id="trk_1",
                tracker="jira",
                projects=["OPS"],
                credential_fingerprint="fp:0123456789ab",
                credential_set=True,
                last_error="Jira answered 401",
            )
        ]
    )
    table = render_table(listing)
    assert "trk_1" in table and "fp:0123456789ab" in table and "Jira answered 401" in table
    why = work_coordinator_pb2.Explanation(
        lane_id="ln_1",
        stuck_closures=[
            work_coordinator_pb2.StuckClosure(
                pending_action=work_coordinator_pb2.PendingAction(
                    attempts=3, last_error="tracker connection trk_1 (jira…): 401"
                ),
                tracker_connection=tracker_pb2.TrackerConnection(tracker_id="trk_1"),
            )
        ],
    )
    assert "TICKET NOT CLOSED" in render_table(why)
    assert "tracker connection trk_1" in render_table(why)
