"""What agents spend, end to end: ``worker run`` passes on the totals its command writes to
``$WORKCOORD_USAGE_FILE``, the attempt keeps them, and ``workcoord usage`` shows the roll-ups."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import rest

from .harness import System
from .rest import Tenant
from .supervisors import git_checkout, services_target, start_supervisor
from .test_cli_humans import cli, cli_json

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.pg,
    pytest.mark.redis,
    pytest.mark.xdist_group(name="e2e"),
]


def test_worker_run_reports_the_usage_file_and_the_cli_shows_the_spend(
    system: System, tenant: Tenant, tmp_path: Path
) -> None:
    target = services_target(system)
    checkout = git_checkout(tmp_path / "checkout", "fix/parser")
    report_dir = tmp_path / "reports"
    report_dir.mkdir()
    lane = tenant.create_lane(
        {"title": "spend", "template": "CUSTOM", "items": [rest.task("a", "machine")]}
    )
    script = (
        'printf \'{"inputTokens": "1200", "outputTokens": "300", "costMicros": "400000", '
        '"model": "opus"}\' > "$WORKCOORD_USAGE_FILE"'
    )
    supervisor = start_supervisor(
        target,
        tenant.key["secret"],
        tenant.coordinator_id,
        "machine",
        checkout,
        report_dir,
        "--once",
        command=["sh", "-c", script],
    )
    try:
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()
    (item,) = lane["items"]
    done = tenant.item(lane["laneId"], item["itemId"])
    assert done["state"] == "SUCCEEDED"
    assert done["attempts"][0]["usage"] == {
        "inputTokens": "1200",
        "outputTokens": "300",
        "costMicros": "400000",
        "model": "opus",
    }

    admin, cid = system.admin_token, tenant.coordinator_id
    day = system.today()  # the services' day, by their clock (the CLI's default is the caller's)
    spent = cli_json(system, admin, "usage", day, "--coordinator", cid, "--by", "LANE")
    assert spent["total"]["costMicros"] == "400000"
    assert [g["key"] for g in spent["groups"]] == [lane["laneId"]]
    models = cli_json(system, admin, "usage", "--all-time", "--coordinator", cid, "--by", "MODEL")
    assert [(g["key"], g["tokens"]) for g in models["groups"]] == [("opus", "1500")]
    code, _, err = cli(system, admin, "usage", "2026-01-01", "--all-time", "--coordinator", cid)
    assert code == 2, err
