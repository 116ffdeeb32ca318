"""``workcoord worker run`` as a real process running real commands, against the services on
PostgreSQL and against ``workcoord dev``: outcomes, the run identity it records, the command's
environment, lost leases killing the command and its children, SIGTERM releasing, the STANDARD
workflow through evidence files, repository roots, and one supervisor serving two work
coordinators and two classes."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support import rest
from tests.support.rest import JSON, ok

from .harness import System
from .rest import Tenant, make_tenant
from .supervisors import (
    DevTarget,
    SupervisorProcess,
    Target,
    git_checkout,
    gone,
    reports,
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

ONE_ATTEMPT = {"maximumAttempts": 1}


@pytest.fixture(scope="module")
def dev_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    dev = DevTarget(tmp_path_factory.mktemp("supervisor-dev"))
    try:
        yield dev.start()
    finally:
        assert dev.stop() == 0, dev.log()
        assert "Traceback" not in dev.log(), dev.log()


@pytest.fixture(params=["services", "dev"])
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "dev":
        dev: Target = request.getfixturevalue("dev_target")
        return dev
    system: System = request.getfixturevalue("system")
    return services_target(system)


@pytest.fixture
def tenant(target: Target) -> Iterator[Tenant]:
    created = make_tenant(target)
    try:
        yield created
    finally:
        created.close()


@pytest.fixture
def workdir(tmp_path: Path) -> tuple[Path, Path]:
    """(a checkout on ``fix/parser`` the supervisor starts in, the command's report folder)."""
    reports_dir = tmp_path / "reports"
    reports_dir.mkdir()
    return git_checkout(tmp_path / "checkout", "fix/parser"), reports_dir


def custom_lane(tenant: Tenant, *items: JSON) -> JSON:
    lane: JSON = {"title": "supervised", "template": "CUSTOM", "items": list(items)}
    return tenant.create_lane(lane)


def task(key: str, **inputs: object) -> JSON:
    return rest.task(key, "machine", inputs=inputs)


def item_of(tenant: Tenant, lane: JSON, key: str) -> JSON:
    item_id = next(i["itemId"] for i in lane["items"] if i["key"] == key)
    return tenant.item(lane["laneId"], item_id)


def cancel(tenant: Tenant, lane: JSON, key: str) -> None:
    item_id = next(i["itemId"] for i in lane["items"] if i["key"] == key)
    ok(tenant.worker.post(f"{tenant.base}/lanes/{lane['laneId']}/items/{item_id}/cancel", json={}))


# --------------------------------------------------------------------------- outcomes


def test_outcomes_identity_and_environment(
    target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    checkout, report_dir = workdir
    evidence = {"summary": "parser fixed", "checks": [{"name": "pytest", "status": "PASSED"}]}
    lane = custom_lane(
        tenant,
        task("evidence", mode="evidence", evidence=evidence, answer=42),
        {**task("fail", mode="fail", status=3), "retryPolicy": ONE_ATTEMPT},
        task(
            "checkpoint",
            mode="checkpoint",
            status=1,
            checkpoint={
                "summary": "half way",
                "filesChanged": ["src/p.py"],
                "blockedReason": "human",
            },
        ),
        task("plain", mode="plain"),
    )
    supervisor = start_supervisor(
        target, tenant.key["secret"], tenant.coordinator_id, "machine", checkout, report_dir
    )
    try:
        supervisor.wait_for_outcomes(len(lane["items"]))
        supervisor.process.send_signal(signal.SIGTERM)  # idle in a long poll: stops at once
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()

    done = item_of(tenant, lane, "evidence")
    assert done["state"] == "SUCCEEDED"
    assert done["evidence"]["summary"] == "parser fixed"
    assert done["evidence"]["checks"] == [{"name": "pytest", "status": "PASSED"}]
    [attempt] = done["attempts"]
    identity = attempt["runIdentity"]
    assert int(identity["pid"]) == supervisor.pid
    assert identity["hostname"] == socket.gethostname()
    assert identity["worktreePath"] == str(checkout)
    assert identity["branch"] == "fix/parser"
    assert (identity["agentId"], identity["engine"], identity["account"]) == (
        "agent-7", "shell", "fleet-bot",
    )  # fmt: skip
    assert datetime.fromisoformat(identity["startedAt"]) <= datetime.now(UTC)

    report = wait_for_report(report_dir, done["itemId"])
    env = report["env"]
    assert report["cwd"] == str(checkout)
    assert report["pgid"] == report["pid"]  # its own process group
    assert env["WORKCOORD_LEASE_ID"] == attempt["leaseId"]
    assert env["WORKCOORD_ITEM_ID"] == done["itemId"]
    assert env["WORKCOORD_LANE_ID"] == lane["laneId"]
    assert env["WORKCOORD_ITEM_KIND"] == "TASK"
    assert report["inputs"] == {"mode": "evidence", "evidence": evidence, "answer": 42}
    assert "WORKCOORD_TOKEN" not in env
    assert not any(tenant.key["secret"] in value for value in env.values())
    for name in ("WORKCOORD_INPUTS_FILE", "WORKCOORD_EVIDENCE_FILE", "WORKCOORD_CHECKPOINT_FILE"):
        assert not Path(env[name]).exists()  # the attempt's private folder is gone

    failed = item_of(tenant, lane, "fail")
    assert (failed["state"], failed["deadLetterReason"]) == ("DEAD", "EXHAUSTED")
    error = failed["attempts"][0]["error"]
    assert error["message"].endswith("exited with status 3")
    assert (error["type"], error["retryable"]) == ("EXIT_STATUS", True)

    checkpointed = item_of(tenant, lane, "checkpoint")
    assert checkpointed["state"] == "STOPPED"  # the checkpoint won over exit status 1
    assert checkpointed["attempts"][0]["status"] == "CHECKPOINTED"

    plain = item_of(tenant, lane, "plain")
    assert plain["state"] == "SUCCEEDED"
    assert plain["evidence"]["summary"] == f"{Path(sys.executable).name} exited 0"

    # Every token stayed private: never printed by the supervisor.
    assert "wcl_" not in supervisor.output()
    assert tenant.key["secret"] not in supervisor.output()


# --------------------------------------------------------------------------- lost leases


@pytest.mark.parametrize("cause", ["cancelled", "expired"])
def test_a_lost_lease_kills_the_command_and_its_children(
    cause: str, target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    checkout, report_dir = workdir
    # Expired: the command ignores SIGTERM, so only SIGKILL after the grace period ends it.
    lane = custom_lane(tenant, task("hang", mode="hang", ignoreTerm=cause == "expired"))
    supervisor = start_supervisor(
        target, tenant.key["secret"], tenant.coordinator_id, "machine", checkout, report_dir
    )
    try:
        item = item_of(tenant, lane, "hang")
        report = wait_for_report(report_dir, item["itemId"])
        pids = [report["pid"], report["childPid"]]
        assert not any(gone(pid) for pid in pids)
        if cause == "cancelled":
            cancel(tenant, lane, "hang")
        else:
            target.advance_clock(3600)
        assert supervisor.wait_exit() == 3, supervisor.output()
    finally:
        supervisor.kill()
    lost = supervisor.wait_for("lease_lost")
    assert lost["detail"].startswith("terminal" if cause == "cancelled" else "expired")
    killed = supervisor.wait_for("killed")
    assert all(gone(pid) for pid in pids), (pids, killed)
    if cause == "expired":
        assert set(killed["pids"]) == set(pids)  # both outlived SIGTERM: SIGKILL ended them
    # Nothing was written after the loss: the attempt ended by the server's decision only.
    lease_id = lost["lease"]
    events = [e for e in tenant.events() if e.get("leaseId") == lease_id]
    assert [e["type"] for e in events][:2] == ["ITEM_LEASED", "ITEM_STARTED"]
    assert not {"ITEM_SUCCEEDED", "ITEM_FAILED", "ITEM_RELEASED", "ITEM_CHECKPOINTED"} & {
        e["type"] for e in events
    }
    assert supervisor.kinds()[-1] == "exit"


def test_sigterm_forwards_then_kills_and_releases_without_burning_an_attempt(
    target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    checkout, report_dir = workdir
    lane = custom_lane(tenant, task("hang", mode="hang", ignoreTerm=True))
    supervisor = start_supervisor(
        target, tenant.key["secret"], tenant.coordinator_id, "machine", checkout, report_dir
    )
    try:
        item = item_of(tenant, lane, "hang")
        report = wait_for_report(report_dir, item["itemId"])
        supervisor.process.send_signal(signal.SIGTERM)
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()
    assert gone(report["pid"]) and gone(report["childPid"])
    assert supervisor.wait_for("forwarded")["signal"] == "SIGTERM"
    after = item_of(tenant, lane, "hang")
    assert after["state"] == "QUEUED"
    assert after["attempts"][0]["status"] == "RELEASED"
    assert int(after.get("attemptCount", 0)) == 0


def test_a_command_that_finishes_on_sigterm_is_judged_by_its_end(
    target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    """Stopped by the forwarded signal it did not finish: released, no attempt burned."""
    checkout, report_dir = workdir
    lane = custom_lane(tenant, task("hang", mode="hang"))
    supervisor = start_supervisor(
        target,
        tenant.key["secret"],
        tenant.coordinator_id,
        "machine",
        checkout,
        report_dir,
        "--kill-grace",
        "60",  # it ends by itself long before: nothing is killed
    )
    try:
        report = wait_for_report(report_dir, item_of(tenant, lane, "hang")["itemId"])
        supervisor.process.send_signal(signal.SIGINT)
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()
    assert gone(report["pid"]) and gone(report["childPid"])
    assert supervisor.wait_for("forwarded")["signal"] == "SIGINT"
    assert "killed" not in supervisor.kinds()
    assert item_of(tenant, lane, "hang")["attempts"][0]["status"] == "RELEASED"


# --------------------------------------------------------------------------- the workflow


def test_a_fleet_runs_the_standard_workflow_through_evidence_files(
    target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    """One supervisor per class, no code of their own: BUILD, a REVIEW that FAILs with findings,
    FIX, a REVIEW that PASSes, SHIP (after a human's approval) with its receipt: LIVE."""
    checkout, report_dir = workdir
    fleet: list[SupervisorProcess] = []
    try:
        lane = tenant.create_lane(
            {
                "title": "Speed up the parser",
                "template": "STANDARD",
                "inputs": {"mode": "workflow"},
                "workerClasses": {"build": "codex", "review": "claude", "ship": "machine"},
            }
        )
        fleet = [
            start_supervisor(
                target,
                tenant.key["secret"],
                tenant.coordinator_id,
                worker_class,
                checkout,
                report_dir,
            )
            for worker_class in ("codex", "claude", "machine")
        ]
        # The second review passes: SHIP waits for a human in the same transaction.
        fleet[1].wait_for("completed", kind="REVIEW", detail="looks right")
        ship = next(i for i in tenant.lane(lane["laneId"])["items"] if i["kind"] == "SHIP")
        assert ship["state"] == "AWAITING_APPROVAL"
        ok(
            tenant.admin.post(
                f"{tenant.base}/lanes/{lane['laneId']}/items/{ship['itemId']}/approve", json={}
            )
        )
        fleet[2].wait_for("completed", kind="SHIP")
        final = tenant.lane(lane["laneId"])
        assert final["state"] == "LIVE", final
        kinds = [item["kind"] for item in final["items"]]
        assert kinds == ["BUILD", "REVIEW", "FIX", "REVIEW", "SHIP"]
        fix = next(item for item in final["items"] if item["kind"] == "FIX")
        fix_inputs = wait_for_report(report_dir, fix["itemId"])["inputs"]
        assert fix_inputs["findings"] == ["parser drops the last token"]
        shipped = tenant.item(lane["laneId"], ship["itemId"])
        assert shipped["evidence"]["receipt"]["version"] == "1.4.2"
        for supervisor in fleet:
            supervisor.process.send_signal(signal.SIGTERM)
            assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        for supervisor in fleet:
            supervisor.kill()


# --------------------------------------------------------------------------- roots


def test_repository_roots(
    target: Target, tenant: Tenant, tmp_path: Path, workdir: tuple[Path, Path]
) -> None:
    """Inside a root it runs there; outside, through a symlink escaping a root, in a sibling
    whose name only starts like a root, or in a folder that is no checkout, it refuses without
    running anything: not retryable, WORKTREE_REFUSED, naming the path."""
    checkout, report_dir = workdir
    base = Path(os.path.realpath(tmp_path))
    root = base / "srv" / "lanes"
    inside = git_checkout(root / "parser", "lane/parser")
    outside = git_checkout(base / "outside", "main")
    sibling = git_checkout(base / "srv" / "lanes2" / "x", "main")
    (root / "escape").symlink_to(outside)
    (root / "plain").mkdir()
    refused = {"outside": outside, "escape": root / "escape", "sibling": sibling}
    lane = custom_lane(
        tenant,
        task("inside", mode="plain", worktree=str(inside)),
        *(task(key, mode="plain", worktree=str(path)) for key, path in refused.items()),
        task("plain", mode="plain", worktree=str(root / "plain")),
    )
    supervisor = start_supervisor(
        target,
        tenant.key["secret"],
        tenant.coordinator_id,
        "machine",
        checkout,
        report_dir,
        roots=[str(root)],
    )
    try:
        outcomes = supervisor.wait_for_outcomes(len(lane["items"]))
        assert sorted(o["event"] for o in outcomes) == ["completed"] + ["failed"] * 4
        supervisor.process.send_signal(signal.SIGTERM)
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()

    ran = item_of(tenant, lane, "inside")
    assert ran["state"] == "SUCCEEDED"
    identity = ran["attempts"][0]["runIdentity"]
    assert (identity["worktreePath"], identity["branch"]) == (str(inside), "lane/parser")
    assert wait_for_report(report_dir, ran["itemId"])["cwd"] == str(inside)

    for key, path in [*refused.items(), ("plain", root / "plain")]:
        item = item_of(tenant, lane, key)
        assert (item["state"], item["deadLetterReason"]) == ("DEAD", "NON_RETRYABLE"), key
        [attempt] = item["attempts"]
        assert attempt["error"]["type"] == "WORKTREE_REFUSED"
        assert attempt["error"].get("retryable", False) is False  # proto3 JSON omits false
        assert json.dumps(str(path)) in attempt["error"]["message"]
        assert "runIdentity" not in attempt  # refused before it started
    assert [path.name for path in reports(report_dir)] == [f"{ran['itemId']}-1.json"]


def test_a_plain_shell_command(target: Target, tenant: Tenant, workdir: tuple[Path, Path]) -> None:
    """``--once`` with nothing but ``sh``: the evidence file written by a shell one-liner."""
    checkout, report_dir = workdir
    lane = custom_lane(tenant, task("sh"))
    script = (
        'branch=$(git branch --show-current) && printf \'{"summary": "%s on %s"}\' '
        '"$WORKCOORD_ITEM_KIND" "$branch" > "$WORKCOORD_EVIDENCE_FILE"'
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
    done = item_of(tenant, lane, "sh")
    assert (done["state"], done["evidence"]["summary"]) == ("SUCCEEDED", "TASK on fix/parser")
    assert supervisor.kinds()[-2:] == ["completed", "exit"]


# --------------------------------------------------------------------------- a machine's scope
# One ``worker run --coordinator A,B --class machine,agent``: both classes of two work
# coordinators under one worker id, one loop per coordinator (one's command runs while the
# other's hangs), each command in its own process group, and the same fencing (a lease lost on
# one coordinator kills its command and ends the supervisor with exit 3, the other loop's
# command released without burning an attempt).

CLASSES = "machine,agent"


class Scope:
    """Two work coordinators of one org and one work key on both."""

    def __init__(self, tenant: Tenant) -> None:
        self.first = tenant
        second = ok(
            tenant.admin.post(
                "/v1/work-coordinators",
                json={
                    "scope": "ORG",
                    "orgSlug": tenant.org_slug,
                    "displayName": f"{tenant.org_slug} second",
                    "digestOwner": f"ops@{tenant.org_slug}.test",
                },
            )
        )
        self.ids = [tenant.coordinator_id, second["coordinatorId"]]
        key = ok(
            tenant.admin.post(
                "/v1/work-keys",
                json={
                    "displayName": "fleet-both",
                    "orgSlug": tenant.org_slug,
                    "coordinatorIds": self.ids,
                    "capabilities": ["READ", "LEASE", "WRITE"],
                },
            )
        )
        self.secret: str = key["secret"]
        self.second = Tenant(
            org_slug=tenant.org_slug,
            coordinator=second,
            key=key,
            admin=tenant.admin,
            worker=rest.rest_client(str(tenant.admin.base_url), self.secret),
        )


def classed(key: str, worker_class: str, **inputs: object) -> JSON:
    return rest.task(key, worker_class, inputs=inputs)


def test_one_supervisor_serves_both_classes_of_two_coordinators(
    target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    checkout, report_dir = workdir
    scope = Scope(tenant)
    first, second = scope.first, scope.second
    lane_a = custom_lane(first, classed("a-m", "machine"), classed("a-a", "agent"))
    lane_b = custom_lane(
        second,
        {**classed("b-m", "machine"), "priority": 5},
        {**classed("b-a", "agent"), "priority": 5},
        classed("b-hang", "agent", mode="hang"),  # last: priority 0
    )
    supervisor = start_supervisor(
        target, scope.secret, ",".join(scope.ids), CLASSES, checkout, report_dir
    )
    try:
        hang = wait_for_report(report_dir, item_of(second, lane_b, "b-hang")["itemId"])
        # The second coordinator's loop is busy with b-hang: the first's still takes new work.
        late = custom_lane(first, classed("a-late", "machine"))
        supervisor.wait_for("completed", coordinator=scope.ids[0], item=late["items"][0]["itemId"])
        assert not gone(hang["pid"])
        supervisor.process.send_signal(signal.SIGTERM)
        assert supervisor.wait_exit() == 0, supervisor.output()
    finally:
        supervisor.kill()

    ready = supervisor.wait_for("ready")
    assert (ready["coordinators"], ready["workerClasses"]) == (scope.ids, ["machine", "agent"])
    done = [
        *(item_of(first, lane_a, key) for key in ("a-m", "a-a")),
        *(item_of(second, lane_b, key) for key in ("b-m", "b-a")),
        item_of(first, late, "a-late"),
    ]
    assert [item["state"] for item in done] == ["SUCCEEDED"] * 5
    attempts = [item["attempts"][0] for item in done]
    assert {a["workerId"] for a in attempts} == {ready["worker"]}  # one worker id for all
    assert {int(a["runIdentity"]["pid"]) for a in attempts} == {supervisor.pid}
    for item, coordinator_id in zip(
        done, [*scope.ids[:1] * 2, *scope.ids[1:] * 2, scope.ids[0]], strict=True
    ):
        report = wait_for_report(report_dir, item["itemId"])
        assert report["pgid"] == report["pid"]  # each command in its own process group
        assert report["env"]["WORKCOORD_COORDINATOR_ID"] == coordinator_id
        assert report["env"]["WORKCOORD_WORKER_CLASS"] == item["workerClass"]
    # SIGTERM drained the hanging one: forwarded, released, no attempt burned.
    assert gone(hang["pid"]) and gone(hang["childPid"])
    released = item_of(second, lane_b, "b-hang")
    assert released["state"] == "QUEUED"
    assert released["attempts"][0]["status"] == "RELEASED"
    assert "wcl_" not in supervisor.output() and scope.secret not in supervisor.output()


def test_a_lease_lost_on_one_coordinator_ends_the_supervisor_and_drains_the_other(
    target: Target, tenant: Tenant, workdir: tuple[Path, Path]
) -> None:
    checkout, report_dir = workdir
    scope = Scope(tenant)
    first, second = scope.first, scope.second
    lane_a = custom_lane(first, classed("a-hang", "machine", mode="hang"))
    lane_b = custom_lane(second, classed("b-hang", "agent", mode="hang"))
    supervisor = start_supervisor(
        target, scope.secret, ",".join(scope.ids), CLASSES, checkout, report_dir
    )
    try:
        kept = wait_for_report(report_dir, item_of(first, lane_a, "a-hang")["itemId"])
        lost = wait_for_report(report_dir, item_of(second, lane_b, "b-hang")["itemId"])
        cancel(second, lane_b, "b-hang")
        assert supervisor.wait_exit() == 3, supervisor.output()
    finally:
        supervisor.kill()
    assert supervisor.wait_for("lease_lost", coordinator=scope.ids[1])
    for report in (kept, lost):
        assert gone(report["pid"]) and gone(report["childPid"])
    # The other coordinator's item was handed back, not failed: no attempt burned.
    after = item_of(first, lane_a, "a-hang")
    assert after["state"] == "QUEUED"
    assert after["attempts"][0]["status"] == "RELEASED"
    assert int(after.get("attemptCount", 0)) == 0
    assert supervisor.kinds()[-1] == "exit"
