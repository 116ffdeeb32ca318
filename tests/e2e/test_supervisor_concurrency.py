"""``workcoord worker run --concurrency N`` as a real process against the services on
PostgreSQL: N commands at once, each in its own process group with its own attempt files, their
heartbeats batched; one command's failure or lost lease is its own; SIGTERM drains them all."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import rest
from tests.support.rest import JSON, ok

from .harness import System
from .rest import Tenant, make_tenant
from .supervisors import (
    Target,
    git_checkout,
    gone,
    services_target,
    start_supervisor,
    wait_for_report,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.pg,
    pytest.mark.redis,
    pytest.mark.xdist_group(name="e2e"),
]

WAIT_SECONDS = 60.0


@pytest.fixture
def target(system: System) -> Target:
    return services_target(system)


@pytest.fixture
def tenant(target: Target) -> Iterator[Tenant]:
    created = make_tenant(target)
    # Room for every command of these tests at once (the default capacity of "machine" is 2).
    ok(
        created.admin.patch(
            f"/v1/work-coordinators/{created.coordinator_id}",
            json={"classCapacity": {"machine": 5}},
        )
    )
    try:
        yield created
    finally:
        created.close()


@pytest.fixture
def workdir(tmp_path: Path) -> tuple[Path, Path]:
    reports_dir = tmp_path / "reports"
    reports_dir.mkdir()
    return git_checkout(tmp_path / "checkout", "fix/parser"), reports_dir


def task(key: str, **inputs: object) -> JSON:
    return rest.task(key, "machine", inputs=inputs)


def items_by_key(tenant: Tenant, lane: JSON) -> dict[str, JSON]:
    return {i["key"]: tenant.item(lane["laneId"], i["itemId"]) for i in lane["items"]}


def calls_logged(system: System, method: str) -> int:
    """How many calls of ``WorkerService/<method>`` the coordinator's access log holds."""
    text = system.coordinator.log_path.read_text(errors="replace")
    return len(re.findall(rf"rpc /workcoord\.api\.v1\.WorkerService/{method} OK", text))


def wait_until(check: Callable[[], bool], what: str, timeout: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_n_commands_at_once_batched_and_each_on_its_own(
    system: System, target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    checkout, report_dir = workdir
    evidence = {"summary": "gated"}
    lane = tenant.create_lane(
        {
            "title": "concurrent",
            "template": "CUSTOM",
            "items": [
                *(task(f"gated-{n}", mode="gate", gate="go", evidence=evidence) for n in range(3)),
                task("hang", mode="hang"),
                {**task("fail", mode="fail", status=3), "retryPolicy": {"maximumAttempts": 1}},
            ],
        }
    )
    ids = {i["key"]: i["itemId"] for i in lane["items"]}
    heartbeats_before = calls_logged(system, "BatchHeartbeat")
    supervisor = start_supervisor(
        target,
        tenant.key["secret"],
        tenant.coordinator_id,
        "machine",
        checkout,
        report_dir,
        "--concurrency",
        "5",
        lease_seconds=6,
    )
    try:
        # All five commands run at the same time: the gated ones cannot end before "go".
        running = {key: wait_for_report(report_dir, ids[key]) for key in ids}
        # The failing command's attempt ends alone; the others keep running.
        supervisor.wait_for("failed", item=ids["fail"])
        # Every held lease is heartbeated by one batched call per interval.
        wait_until(
            lambda: calls_logged(system, "BatchHeartbeat") > heartbeats_before,
            "a BatchHeartbeat",
        )
        # A lost lease stops only its own command.
        ok(tenant.worker.post(f"{tenant.base}/lanes/{lane['laneId']}/items/{ids['hang']}/cancel"))
        lost = supervisor.wait_for("lease_lost", item=ids["hang"])
        supervisor.wait_for("killed", lease=lost["lease"])
        assert gone(running["hang"]["pid"]) and gone(running["hang"]["childPid"])
        assert not any(gone(running[f"gated-{n}"]["pid"]) for n in range(3))
        (report_dir / "go").write_text("")
        # The others finish and write their outcomes; after the loss nothing new is leased.
        assert supervisor.wait_exit() == 3, supervisor.output()
    finally:
        supervisor.kill()

    ready = supervisor.wait_for("ready")
    assert ready["concurrency"] == 5
    after = items_by_key(tenant, lane)
    assert [after[f"gated-{n}"]["state"] for n in range(3)] == ["SUCCEEDED"] * 3
    assert all(after[f"gated-{n}"]["evidence"]["summary"] == "gated" for n in range(3))
    assert (after["fail"]["state"], after["fail"]["deadLetterReason"]) == ("DEAD", "EXHAUSTED")
    assert after["fail"]["attempts"][0]["error"]["type"] == "EXIT_STATUS"
    assert after["hang"]["state"] == "CANCELLED"
    # Each command in its own process group with its own attempt files.
    assert all(report["pgid"] == report["pid"] for report in running.values())
    assert len({report["pgid"] for report in running.values()}) == 5
    for name in ("WORKCOORD_INPUTS_FILE", "WORKCOORD_EVIDENCE_FILE", "WORKCOORD_USAGE_FILE"):
        assert len({report["env"][name] for report in running.values()}) == 5
    assert {int(item["attempts"][0]["runIdentity"]["pid"]) for item in after.values()} == {
        supervisor.pid
    }
    assert "wcl_" not in supervisor.output()


def test_sigterm_drains_every_command(
    target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    checkout, report_dir = workdir
    lane = tenant.create_lane(
        {
            "title": "drained",
            "template": "CUSTOM",
            "items": [task(f"hang-{n}", mode="hang") for n in range(3)],
        }
    )
    supervisor = start_supervisor(
        target,
        tenant.key["secret"],
        tenant.coordinator_id,
        "machine",
        checkout,
        report_dir,
        "--concurrency",
        "3",
    )
    try:
        running = [wait_for_report(report_dir, i["itemId"]) for i in lane["items"]]
        supervisor.process.send_signal(signal.SIGTERM)
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()
    assert all(gone(report["pid"]) and gone(report["childPid"]) for report in running)
    forwarded = [line for line in supervisor.events if line["event"] == "forwarded"]
    assert len(forwarded) == 3 and {line["signal"] for line in forwarded} == {"SIGTERM"}
    for item in items_by_key(tenant, lane).values():
        assert item["state"] == "QUEUED"
        assert item["attempts"][0]["status"] == "RELEASED"
        assert int(item.get("attemptCount", 0)) == 0
