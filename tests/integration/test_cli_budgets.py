"""``workcoord coordinators update --daily-cost``, ``workcoord lane update --budget-cost`` and
``workcoord budget`` against the real coordinator: a human sets and reads budgets (dollars in,
micro-dollars out), a work key is refused the lane's budget naming the field, a bad amount is a
usage error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.support.harness import Stack, task
from workcoord.cli.main import main


async def _cli(
    stack: Stack,
    capsys: pytest.CaptureFixture[str],
    *argv: str,
    expect: int = 0,
    token: str | None = None,
    scoped: bool = True,
    raw: bool = False,
) -> Any:
    where = ["--coordinator", stack.cid] if scoped else []
    flags = [*where, "--address", stack.address, "--token", token or stack.admin_token]
    # main() runs its own event loop: give it a thread.
    code = await asyncio.to_thread(main, [*argv, *flags])
    out, err = capsys.readouterr()
    assert code == expect, err
    if expect:
        return err
    if raw:
        return out
    return json.loads(out) if out.strip() else {}


async def test_a_human_sets_and_reads_budgets_from_the_cli(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    lane = await stack.create_lane(task("a"))
    updated = await _cli(
        stack,
        capsys,
        *("coordinators", "update", stack.cid, "--daily-cost", "5.25", "-o", "json"),
        scoped=False,
    )
    coordinator = updated.get("workCoordinator", updated)
    assert coordinator["budget"] == {"dailyCostMicros": "5250000"}

    edited = await _cli(
        stack,
        capsys,
        *("lane", "update", lane.lane_id, "--budget-cost", "1.50", "--budget-tokens", "900"),
        "-o",
        "json",
    )
    assert edited.get("lane", edited)["budget"] == {"costMicros": "1500000", "tokens": "900"}

    read = await _cli(stack, capsys, "budget", "--lane", lane.lane_id, "-o", "json")
    assert read["workCoordinator"]["costLimitMicros"] == "5250000"
    assert read["workCoordinator"]["costLeftMicros"] == "5250000"
    assert read["lane"]["costLimitMicros"] == "1500000"
    assert read["lane"]["tokenLimit"] == "900"
    table = await _cli(stack, capsys, "budget", "--lane", lane.lane_id, "-o", "table", raw=True)
    assert "lane.costLimitMicros: 1500000" in table

    # The key may not change the lane's budget: PERMISSION_DENIED naming the field.
    err = await _cli(
        stack,
        capsys,
        *("lane", "update", lane.lane_id, "--budget-cost", "none"),
        expect=1,
        token=stack.key_secret,
    )
    assert "lane.budget" in err
    # A bad amount is a usage error, before any call.
    err = await _cli(
        stack, capsys, *("lane", "update", lane.lane_id, "--budget-cost", "1.0000001"), expect=2
    )
    assert "dollars" in err

    removed = await _cli(
        stack,
        capsys,
        *("coordinators", "update", stack.cid, "--daily-cost", "none", "-o", "json"),
        scoped=False,
    )
    assert "budget" not in removed.get("workCoordinator", removed)
