"""A lane's budget, end to end under ``workcoord worker run``: the command writes
``$WORKCOORD_USAGE_FILE`` with a cost growing by 0.40 $ between heartbeats (one every 4 s, the
lease being 12 s) and then hangs; the heartbeat that carries 1.20 $ against the lane's 1-dollar
budget is answered ``stop BUDGET_EXHAUSTED``, the supervisor kills the command's process group
(its shell and the shell's child gone), reports the final usage and releases the item (no
retry burned). ``why`` shows the budget gate; a human raising the budget with ``workcoord lane
update`` lets the next lease through."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import rest

from .harness import System
from .rest import Tenant
from .supervisors import git_checkout, gone, services_target, start_supervisor
from .test_cli_humans import cli_json

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.pg,
    pytest.mark.redis,
    pytest.mark.xdist_group(name="e2e"),
]

# 0.40 $ at once, 0.80 $ after 6 s, 1.20 $ after 10 s (heartbeats at about 4, 8 and 12 s), then
# a child that outlives the shell unless the whole group is killed.
_SPEND = """
usage() { printf '{"costMicros": "%s", "model": "opus"}' "$1" > "$WORKCOORD_USAGE_FILE"; }
echo $$ > "$PIDS/shell"
usage 400000; sleep 6
usage 800000; sleep 4
usage 1200000
sleep 600 &
echo $! > "$PIDS/child"
wait
"""


def test_a_spent_lane_budget_stops_worker_run_and_a_raise_lets_the_next_lease_through(
    system: System, tenant: Tenant, tmp_path: Path
) -> None:
    target = services_target(system)
    checkout = git_checkout(tmp_path / "checkout", "fix/parser")
    report_dir = tmp_path / "reports"
    report_dir.mkdir()
    pids = tmp_path / "pids"
    pids.mkdir()
    lane = tenant.create_lane(
        {
            "title": "budgeted",
            "template": "CUSTOM",
            "items": [rest.task("a", "machine")],
            "budget": {"costMicros": "1000000"},
        }
    )
    supervisor = start_supervisor(
        target,
        tenant.key["secret"],
        tenant.coordinator_id,
        "machine",
        checkout,
        report_dir,
        "--once",
        lease_seconds=12,
        command=["sh", "-c", f'PIDS="{pids}"; {_SPEND}'],
    )
    try:
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()
    assert "BUDGET_EXHAUSTED" in supervisor.output()
    shell, child = (int((pids / name).read_text()) for name in ("shell", "child"))
    assert gone(shell) and gone(child)  # the whole process group

    (item,) = lane["items"]
    waiting = tenant.item(lane["laneId"], item["itemId"])
    assert waiting["state"] == "QUEUED"
    assert waiting.get("attemptCount", 0) == 0  # released: no retry burned
    [attempt] = waiting["attempts"]
    assert attempt["status"] == "RELEASED"
    assert attempt["usage"]["costMicros"] == "1200000"  # the final usage was reported
    types = [e["type"] for e in tenant.events()]
    assert types.index("BUDGET_WARNING") < types.index("BUDGET_EXHAUSTED")

    admin, cid = system.admin_token, tenant.coordinator_id
    why = cli_json(system, admin, "why", "--item", item["itemId"], "--coordinator", cid)
    [gate] = [g for g in why["explanation"]["gates"] if g["gate"] == "BUDGET"]
    assert "cost $1.20 / $1.00" in gate["detail"]
    assert tenant.lease("machine") == []

    raised = cli_json(
        system,
        admin,
        *("lane", "update", lane["laneId"], "--budget-cost", "2", "--coordinator", cid),
        *("-o", "json"),
    )
    assert raised.get("lane", raised)["budget"] == {"costMicros": "2000000"}
    [again] = tenant.lease("machine")
    assert again["item"]["itemId"] == item["itemId"]
