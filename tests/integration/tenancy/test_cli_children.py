"""``workcoord children …`` and ``workcoord worker report|list`` against the real coordinator:
a parent reads and steers a child through the grants the child gave it, and nothing without."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.integration.tenancy.world import Permission, create_global, grant, in_days, set_parent
from tests.support.harness import Stack, task
from workcoord.api.v1 import lane_pb2
from workcoord.cli.main import main


async def _cli(
    stack: Stack, capsys: pytest.CaptureFixture[str], *argv: str, expect: int = 0
) -> Any:
    # main() runs its own event loop: give it a thread.
    code = await asyncio.to_thread(
        main, [*argv, "--address", stack.address, "--token", stack.admin_token]
    )
    out, err = capsys.readouterr()
    assert code == expect, err
    if expect:
        return err
    return json.loads(out) if out.strip() else {}


async def test_a_parent_steers_a_child_from_the_cli(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = await create_global(stack)
    await set_parent(stack.admin, stack.cid, parent)
    lane = await stack.create_lane(task("a"))
    [item] = lane.items
    on = ("--coordinator", parent)

    # No grant yet: refused, by the coordinator (exit 1), with its reason.
    err = await _cli(stack, capsys, "children", "summary", stack.cid, *on, expect=1)
    assert "PERMISSION_DENIED" in err or "NOT_FOUND" in err, err

    await grant(
        stack.admin,
        stack.cid,
        parent,
        [Permission.SUMMARY, Permission.STEER, Permission.ESCALATE, Permission.ESCALATIONS],
        in_days(stack, 7),
    )
    summary = await _cli(stack, capsys, "children", "summary", stack.cid, *on)
    assert summary["summary"]
    steered = await _cli(
        stack,
        capsys,
        *("children", "steer", stack.cid, "--lane", lane.lane_id, "--priority", "77", *on),
    )
    assert steered["lane"]["priority"] == 77
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    assert got.lane.priority == 77

    raised = await _cli(
        stack,
        capsys,
        *("children", "escalate", stack.cid, "--lane", lane.lane_id, "--item", item.item_id),
        *("--reason", "waiting on a GPU", *on),
    )
    listed = await _cli(stack, capsys, "children", "escalations", stack.cid, *on)
    assert [e["escalationId"] for e in listed["escalations"]] == [
        raised["escalation"]["escalationId"]
    ]
    # ASSIGN was not granted: refused.
    await _cli(
        stack,
        capsys,
        *("children", "assign", stack.cid, "--lane", lane.lane_id, "--item", item.item_id),
        *("--worker", "gpu-box-1", *on),
        expect=1,
    )


async def test_worker_report_registers_a_worker_the_list_shows(
    stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    worker = tmp_path / "worker.json"
    worker.write_text(
        json.dumps({"workerId": "cli-box-1", "workerClass": "machine", "cpuCount": 4}),
        encoding="utf-8",
    )
    on = ("--coordinator", stack.cid)
    reported = await _cli(stack, capsys, "worker", "report", "--file", str(worker), *on)
    assert reported["worker"]["workerId"] == "cli-box-1"
    listed = await _cli(stack, capsys, "worker", "list", *on)
    assert "cli-box-1" in {w["workerId"] for w in listed["workers"]}
    # A bad class is the server's INVALID_ARGUMENT naming the field, exit 1.
    worker.write_text(json.dumps({"workerId": "cli-box-2", "workerClass": "BAD"}), "utf-8")
    err = await _cli(stack, capsys, "worker", "report", "--file", str(worker), *on, expect=1)
    assert "INVALID_ARGUMENT" in err and "worker_class" in err.replace(
        "workerClass", "worker_class"
    )
