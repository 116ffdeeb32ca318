"""A step of a recovery pass that fails while the rest of the pass runs (the tracker down) is
visible: in the pass's report, in ``GetRecoveryStatus``, in the recovery metrics and, once a
day per step, in the coordinator's digest."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tests.support.rest import ok

from .system import LaneSystem, standard_lane

pytestmark = [pytest.mark.pg, pytest.mark.redis]

STEPS = ("close_tickets", "sync_tickets")


def step_failures_counted(step: str) -> float:
    value = REGISTRY.get_sample_value("workcoord_recovery_step_failures_total", {"step": step})
    return value or 0.0


async def test_a_tracker_down_fails_its_steps_visibly_and_the_rest_of_the_pass_runs(
    system: LaneSystem,
) -> None:
    lane_id = (
        await system.create_lane(standard_lane(tickets=[{"tracker": "github", "key": "o/r#13"}]))
    )["laneId"]
    await system.build_and_review(lane_id, ["PASS"])
    system.github.fail_next(1, 502)  # the closure tried right after the lane goes LIVE
    await system.ship(lane_id)
    await system.settle()
    counted_before = {step: step_failures_counted(step) for step in STEPS}

    # The tracker goes away for two passes: each tries the closure (PATCH) and the sync (GET).
    system.github.fail_next(4, "reset")
    for _ in range(2):
        system.clock.advance(7200)  # past the closure's backoff
        report = await system.maintain()
        failures = {f["step"]: f for f in report["stepFailures"]}
        assert sorted(failures) == list(STEPS), report
        for failure in failures.values():
            assert failure["failures"] == 1
            assert failure["error"].startswith("GitHub unreachable"), failure
        # The rest of the pass ran: the report is a whole one.
        assert report["pendingActionsAttempted"] == 1 and report["coordinatorId"] == system.cid

    status = ok(await system.service.get("/v1/recovery/status"))
    counts = {c["step"]: c for c in status["stepFailures"]}
    assert sorted(counts) == list(STEPS)
    for count in counts.values():
        assert count["failedPasses"] == "2"
        assert count["coordinatorId"] == system.cid
        assert count["lastError"].startswith("GitHub unreachable")
        assert count["lastFailureTime"]
    for step in STEPS:
        assert step_failures_counted(step) == counted_before[step] + 2

    # Today's digest says so once per step, however many passes failed.
    digest = ok(await system.admin.get(f"{system.base}/digests/{system.clock.now().date()}"))
    lines = [e for e in digest["entries"] if e["kind"] == "MAINTENANCE_STEP_FAILED"]
    assert sorted(e["reason"].partition(":")[0] for e in lines) == list(STEPS), lines
    assert all("GitHub unreachable" in e["reason"] for e in lines)

    # The tracker is back: the pass is clean, the closure done; the day's lines stay.
    system.clock.advance(7200)
    report = await system.maintain()
    assert "stepFailures" not in report, report
    assert report["pendingActionsSucceeded"] == 1
    assert system.github.state("o/r#13") == "closed"
    digest = ok(await system.admin.get(f"{system.base}/digests/{system.clock.now().date()}"))
    assert len([e for e in digest["entries"] if e["kind"] == "MAINTENANCE_STEP_FAILED"]) == 2
