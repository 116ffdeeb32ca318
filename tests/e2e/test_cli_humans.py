"""The CLI for humans against the running services: work coordinators, the human decisions on
items and lanes, digests and pending actions, ``--output table``, and ``watch`` following the
feed over gRPC (resuming by revision when the coordinator restarts under it)."""

from __future__ import annotations

import contextlib
import io
import json
import queue
import signal
import subprocess
import threading
import time
from typing import Any

import pytest

from tests.support.processes import (
    STOP_TIMEOUT_SECONDS,
    WAIT_SECONDS,
    run_in_thread,
    service_env,
    workcoord_command,
)
from tests.support.rest import items_by_key, ok
from workcoord.cli.main import main

from .harness import System
from .rest import (
    BUILD_EVIDENCE,
    REVIEW_EVIDENCE,
    Tenant,
    item_of,
    lane_awaiting_ship,
    ship_it,
    unique_slug,
    work,
)

pytestmark = [pytest.mark.e2e]

LINE_TIMEOUT_SECONDS = WAIT_SECONDS


def cli(system: System, token: str, *argv: str) -> tuple[int, str, str]:
    """Run ``workcoord argv…`` in this process (a thread of its own: the CLI runs its own
    event loop); exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()

    def go() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                return main([*argv, "--address", system.coordinator_address, "--token", token])
            except SystemExit as exit_:
                return int(exit_.code or 0)

    code = run_in_thread(go)
    return code, out.getvalue(), err.getvalue()


def cli_json(system: System, token: str, *argv: str) -> Any:
    code, out, err = cli(system, token, *argv)
    assert code == 0, err
    return json.loads(out)


def test_coordinators_create_list_get_update(system: System, tenant: Tenant) -> None:
    admin = system.admin_token
    made = cli_json(
        system,
        admin,
        "coordinators",
        "create",
        "--org",
        tenant.org_slug,
        "--display-name",
        "Made by the CLI",
        "--digest-owner",
        "ops@example.test",
        "--capacity",
        "machine=3",
        "--capacity",
        "codex=1",
    )
    made = made["workCoordinator"]
    cid = made["coordinatorId"]
    assert made["scope"] == "ORG" and made["orgSlug"] == tenant.org_slug
    assert made["classCapacity"] == {"machine": 3, "codex": 1}

    code, out, _ = cli(
        system, admin, "coordinators", "list", "--org", tenant.org_slug, "-o", "table"
    )
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "SCOPE", "ORG", "NAME", "ENABLED", "REVISION"]
    assert any(row.startswith(cid) and "Made by the CLI" in row for row in rows), out

    updated = cli_json(
        system,
        admin,
        "coordinators",
        "update",
        cid,
        "--enabled",
        "false",
        "--display-name",
        "Renamed",
    )
    updated = updated["workCoordinator"]
    assert updated["enabled"] is False and updated["displayName"] == "Renamed"
    assert updated["classCapacity"] == {"machine": 3, "codex": 1}  # untouched: not in the mask
    code, out, _ = cli(system, admin, "coordinators", "get", cid, "-o", "table")
    assert code == 0
    assert "Renamed" in out and "enabled:       no" in out

    code, _, err = cli(system, admin, "coordinators", "update", cid)
    assert code == 2 and "nothing to change" in err
    code, _, err = cli(system, admin, "coordinators", "create", "--capacity", "machine")
    assert code == 2 and "CLASS=N" in err


def test_approve_show_prints_the_facts_and_decides_nothing(system: System, tenant: Tenant) -> None:
    admin, key = system.admin_token, tenant.key["secret"]
    cid = tenant.coordinator_id
    lane = lane_awaiting_ship(
        tenant,
        "Show me the facts",
        build=BUILD_EVIDENCE,
        review=REVIEW_EVIDENCE,
        inputs={"repo": "acme/app", "token_hint": "lane-secret-input"},
        tickets=[{"tracker": "github", "key": "acme/app#7"}],
    )
    ship = item_of(lane, "SHIP")
    show = ("item", "approve", ship["itemId"], "--coordinator", cid, "--show")

    facts = cli_json(system, admin, *show)
    assert facts["laneId"] == lane["laneId"] and facts["state"] == "AWAITING_APPROVAL"
    assert facts["requestedBy"] == f"key:{tenant.key['keyId']}"  # the review's worker
    assert facts["requestTime"]
    assert [t["key"] for t in facts["tickets"]] == ["acme/app#7"]
    assert facts["laneInputs"] == {"repo": "acme/app", "token_hint": "lane-secret-input"}
    steps = {step["kind"]: step for step in facts["steps"]}
    assert steps["BUILD"]["evidence"] == BUILD_EVIDENCE
    assert steps["REVIEW"]["evidence"]["verdict"] == "PASS"
    assert steps["BUILD"]["run"] == {
        "engine": "codex",
        "agentId": "agent-codex",
        "branch": "fix/parser",
        "worktreePath": "/srv/lanes/parser",
        "hostname": "build-3",
    }

    code, out, _ = cli(system, admin, *show, "-o", "table")
    assert code == 0
    for text in (
        "ship (SHIP) of lane “Show me the facts”",
        f"requested by key:{tenant.key['keyId']}",
        "ticket: acme/app#7",
        '"token_hint": "lane-secret-input"',
        "build (BUILD) SUCCEEDED · attempts 1 · codex · agent-codex · branch fix/parser · "
        "worktree /srv/lanes/parser",
        "summary: parser rewritten without the global state",
        "checks: pytest PASSED, lint PASSED",
        "link: https://ci.example.test/runs/7",
        "artifact: wheel https://ci.example.test/runs/7/parser.whl",
        "verdict: PASS",
        "link: https://git.example.test/acme/app/pull/7",
    ):
        assert text in out, (text, out)
    # A work key reads the lane but not its inputs: it learns only that there are some.
    code, out, _ = cli(system, key, *show, "-o", "table")
    assert code == 0
    assert "lane inputs: hidden (your role may not read them)" in out
    assert "lane-secret-input" not in out
    # Nothing was decided.
    assert tenant.item(lane["laneId"], ship["itemId"])["state"] == "AWAITING_APPROVAL"

    # A lane that failed a review first: the facts hold the failed review with its findings,
    # the fix, and the review that passed, in the lane's order.
    fixed = tenant.create_lane({"title": "Fixed after review", "template": "STANDARD"})
    for lease in work(tenant, "codex"):
        ok(tenant.lease_call(lease, "complete", evidence={"summary": "built"}))
    failing = {"summary": "misses a test", "verdict": "FAIL", "findings": ["add a parser test"]}
    for lease in work(tenant, "claude"):
        ok(tenant.lease_call(lease, "complete", evidence=failing))
    for lease in work(tenant, "codex"):
        ok(tenant.lease_call(lease, "complete", evidence={"summary": "test added"}))
    for lease in work(tenant, "claude"):
        ok(tenant.lease_call(lease, "complete", evidence=REVIEW_EVIDENCE))
    ship = item_of(tenant.lane(fixed["laneId"]), "SHIP")
    assert ship["state"] == "AWAITING_APPROVAL"
    facts = cli_json(
        system, admin, "item", "approve", ship["itemId"], "--coordinator", cid, "--show"
    )
    verdicts = [(step["kind"], step["evidence"].get("verdict", "")) for step in facts["steps"]]
    assert verdicts == [("BUILD", ""), ("REVIEW", "FAIL"), ("FIX", ""), ("REVIEW", "PASS")]
    assert facts["steps"][1]["evidence"]["findings"] == ["add a parser test"]
    code, out, _ = cli(
        system,
        admin,
        "item",
        "approve",
        ship["itemId"],
        "--coordinator",
        cid,
        "--show",
        "-o",
        "table",
    )
    assert code == 0 and "finding: add a parser test" in out and "summary: test added" in out


def test_item_decisions(system: System, tenant: Tenant) -> None:
    admin, key = system.admin_token, tenant.key["secret"]
    cid = tenant.coordinator_id
    approve_me = item_of(lane_awaiting_ship(tenant, "Approve me"), "SHIP")
    deny_lane = lane_awaiting_ship(tenant, "Deny me")
    deny_me = item_of(deny_lane, "SHIP")

    # A work key can never decide: the coordinator refuses, the CLI says why.
    code, _, err = cli(system, key, "item", "approve", approve_me["itemId"], "--coordinator", cid)
    assert code == 1 and "PERMISSION_DENIED" in err
    # Without --lane the item's lane is looked up.
    approved = cli_json(
        system, admin, "item", "approve", approve_me["itemId"], "--coordinator", cid, "--note", "go"
    )
    assert approved["item"]["state"] == "QUEUED"

    code, _, err = cli(system, admin, "item", "deny", deny_me["itemId"], "--coordinator", cid)
    assert code == 2 and "--reason" in err  # a denial needs a reason
    code, out, _ = cli(
        system,
        admin,
        "item",
        "deny",
        deny_me["itemId"],
        "--lane",
        deny_lane["laneId"],
        "--reason",
        "not this week",
        "--coordinator",
        cid,
        "-o",
        "table",
    )
    assert code == 0
    assert "CANCELLED" in out.splitlines()[1]
    assert tenant.lane(deny_lane["laneId"])["state"] == "CLOSED_OUT"
    # Deciding again is refused with the API's reason.
    code, _, err = cli(system, admin, "item", "approve", approve_me["itemId"], "--coordinator", cid)
    assert code == 1 and "ILLEGAL_TRANSITION" in err

    custom = tenant.create_lane(
        {
            "title": "Custom",
            "template": "CUSTOM",
            "items": [
                {
                    "key": "dump",
                    "kind": "TASK",
                    "workerClass": "machine",
                    "retryPolicy": {"maximumAttempts": 1},
                },
                {"key": "announce", "kind": "TASK", "workerClass": "agent", "needsHuman": True},
                {"key": "later", "kind": "TASK", "workerClass": "agent", "dependsOn": ["dump"]},
            ],
        }
    )
    items = items_by_key(custom)
    for lease in work(tenant, "machine"):
        if lease["item"]["itemId"] == items["dump"]["itemId"]:
            error = {"message": "connection refused", "retryable": False}
            ok(tenant.lease_call(lease, "fail", error=error))
    assert tenant.item(custom["laneId"], items["dump"]["itemId"])["state"] == "DEAD"
    for verb, key_name in (("retry", "dump"), ("resume", "announce")):
        answer = cli_json(
            system, admin, "item", verb, items[key_name]["itemId"], "--coordinator", cid
        )
        assert answer["item"]["state"] == "QUEUED", (verb, answer)
    cancelled = cli_json(
        system,
        admin,
        "item",
        "cancel",
        items["later"]["itemId"],
        "--coordinator",
        cid,
        "--reason",
        "x",
    )
    assert cancelled["item"]["state"] == "CANCELLED"


def test_lane_pause_resume_cancel(system: System, tenant: Tenant) -> None:
    admin, cid = system.admin_token, tenant.coordinator_id
    lane = tenant.create_lane({"title": "Pause me", "template": "STANDARD"})
    paused = cli_json(system, admin, "lane", "pause", lane["laneId"], "--coordinator", cid)
    assert paused["lane"]["paused"] is True
    code, out, _ = cli(
        system, admin, "lane", "get", lane["laneId"], "--coordinator", cid, "-o", "table"
    )
    assert code == 0 and "(paused)" in out.splitlines()[0]
    resumed = cli_json(system, admin, "lane", "resume", lane["laneId"], "--coordinator", cid)
    assert not resumed["lane"].get("paused", False)
    cancelled = cli_json(
        system, admin, "lane", "cancel", lane["laneId"], "--coordinator", cid, "--reason", "dropped"
    )
    assert cancelled["lane"]["state"] == "CANCELLED"


def test_digest_and_pending_actions(system: System, tenant: Tenant) -> None:
    admin, cid = system.admin_token, tenant.coordinator_id
    lane = lane_awaiting_ship(tenant, "Ship it", tickets=[{"tracker": "github", "key": "o/r#7"}])
    ok(
        tenant.admin.post(
            f"{tenant.base}/lanes/{lane['laneId']}/items/{item_of(lane, 'SHIP')['itemId']}/approve",
            json={},
        )
    )
    ship_it(tenant)  # no tracker is configured here: closing the ticket fails, an action opens

    code, out, _ = cli(
        system,
        admin,
        "pending-actions",
        "list",
        "--state",
        "OPEN",
        "--coordinator",
        cid,
        "-o",
        "table",
    )
    assert code == 0
    header, row = out.splitlines()
    assert header.split()[:4] == ["ACTION", "STATE", "KIND", "TICKET"]
    action_id, state, kind, ticket = row.split()[:4]
    assert (state, kind, ticket) == ("OPEN", "CLOSE_TICKET", "o/r#7")

    today = system.today()
    digest = cli_json(system, admin, "digest", today, "--coordinator", cid)["digest"]
    assert digest["day"] == today
    assert {entry["kind"] for entry in digest["entries"]} >= {"PENDING_ACTION"}
    code, out, _ = cli(system, admin, "digest", "2000-01-01", "--coordinator", cid, "-o", "table")
    assert code == 0 and "(nothing this day)" in out

    resolved = cli_json(
        system,
        admin,
        "pending-actions",
        "resolve",
        action_id,
        "--resolution",
        "closed by hand",
        "--coordinator",
        cid,
    )
    resolved = resolved["pendingAction"]
    assert resolved["state"] == "RESOLVED" and resolved["resolution"] == "closed by hand"
    listed = cli_json(
        system, admin, "pending-actions", "list", "--state", "OPEN", "--coordinator", cid
    )
    assert not listed.get("pendingActions")


class Watching:
    """``workcoord watch`` as a child process, its stdout read line by line."""

    def __init__(self, system: System, token: str, *argv: str) -> None:
        env = service_env(WORKCOORD_ADDRESS=system.coordinator_address, WORKCOORD_TOKEN=token)
        self.process = subprocess.Popen(
            [*workcoord_command(), "watch", *argv],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line.rstrip("\n"))

    def next_line(self) -> str:
        deadline = time.monotonic() + LINE_TIMEOUT_SECONDS
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no event printed; stderr: {self.errors}") from None
        assert line is not None, f"watch ended; stderr: {self.errors}"
        return line

    def until(self, text: str) -> list[str]:
        seen: list[str] = []
        while not seen or text not in seen[-1]:
            seen.append(self.next_line())
        return seen

    def interrupt(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=STOP_TIMEOUT_SECONDS)


def test_watch_prints_one_line_per_event_and_resumes_by_revision(
    system: System, tenant: Tenant
) -> None:
    key, cid = tenant.key["secret"], tenant.coordinator_id
    start = tenant.revision()
    watching = Watching(system, key, "--coordinator", cid, "--since", str(start), "-o", "table")
    try:
        first = tenant.create_lane({"title": f"First {unique_slug()}", "template": "STANDARD"})
        lines = watching.until("ITEM_QUEUED")
        assert lines[0].startswith(f"#{start + 1}  ") and "LANE_CREATED" in lines[0]
        assert f"lane={first['laneId']}" in lines[0]

        # The coordinator stops under the stream; the watch resumes where it was.
        assert system.coordinator.stop() == 0
        system.coordinator.start()
        system.wait_ready()
        second = tenant.create_lane({"title": f"Second {unique_slug()}", "template": "STANDARD"})
        lines += watching.until("ITEM_QUEUED")
        assert f"lane={second['laneId']}" in "\n".join(lines)
        revisions = [int(line.split()[0].lstrip("#")) for line in lines]
        assert revisions == list(range(start + 1, start + 1 + len(revisions))), lines
        assert any("resuming from revision" in line for line in watching.errors), watching.errors
    finally:
        code = watching.interrupt()
    assert code == 130, watching.errors
    assert not any("Traceback" in line for line in watching.errors), watching.errors

    # --since replays the same events, as JSON, and --max-events stops the watch.
    count = len(revisions)
    replay = Watching(
        system, key, "--coordinator", cid, "--since", str(start), "--max-events", str(count)
    )
    events = [json.loads(replay.next_line()) for _ in range(count)]
    assert replay.process.wait(timeout=STOP_TIMEOUT_SECONDS) == 0
    assert [int(event["revision"]) for event in events] == revisions
    assert events[0]["type"] == "LANE_CREATED"
