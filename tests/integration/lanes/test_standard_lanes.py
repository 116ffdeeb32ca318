"""STANDARD lanes end to end through REST: build → review → fix → ship, tickets, digests."""

from __future__ import annotations

import pytest

from tests.support.rest import items_by_key, ok, parse_time

from .system import DIGEST_OWNER, RECEIPT, LaneSystem, forbidden, standard_lane

pytestmark = [pytest.mark.pg, pytest.mark.redis]


async def test_a_lane_that_passes_first_time_goes_live_and_closes_its_ticket(
    system: LaneSystem,
) -> None:
    lane = await system.create_lane(standard_lane(tickets=[{"tracker": "github", "key": "o/r#12"}]))
    lane_id = lane["laneId"]
    assert lane["state"] == "ACTIVE"
    assert lane["nextAction"] == "lease build (codex)"
    assert [(i["key"], i["kind"], i["state"]) for i in lane["items"]] == [
        ("build", "BUILD", "QUEUED")
    ]

    build = await system.work("codex", "BUILD", summary="built")
    assert build["item"]["workerClass"] == "codex"
    lane = await system.lane(lane_id)
    review = items_by_key(lane)["review-1"]
    assert (review["kind"], review["workerClass"], review["state"]) == (
        "REVIEW",
        "claude",
        "QUEUED",
    )
    assert lane["nextAction"] == "lease review (claude)"

    await system.work("claude", "REVIEW", verdict="PASS")
    lane = await system.lane(lane_id)
    ship = items_by_key(lane)["ship"]
    assert (ship["kind"], ship["workerClass"], ship["state"]) == (
        "SHIP",
        "machine",
        "AWAITING_APPROVAL",
    )
    assert ship["nextAction"] == "approve ship"
    assert lane["nextAction"] == "approve ship"
    assert await system.lease("machine") == []  # nobody ships before a human approves

    approved = ok(await system.decide(ship, "approve"))
    assert approved["state"] == "QUEUED"
    shipped = await system.work("machine", "SHIP", receipt=RECEIPT)
    await system.settle()

    lane = await system.lane(lane_id)
    assert lane["state"] == "LIVE"
    assert lane["nextAction"] == "live"
    assert lane["receipt"]["environment"] == "prod" and lane["receipt"]["version"] == "1.4.2"
    assert items_by_key(lane)["ship"]["evidence"]["receipt"]["url"] == RECEIPT["url"]
    # The ticket is closed in the tracker and shown as the tracker's state, with when.
    assert system.github.state("o/r#12") == "closed"
    assert [c.path for c in system.github.calls_to("PATCH")] == ["/repos/o/r/issues/12"]
    (ticket,) = lane["tickets"]
    assert ticket["state"] == "CLOSED"
    assert parse_time(ticket["observeTime"]) == system.clock.now()
    (action,) = await system.pending_actions()
    assert action["state"] == "SUCCEEDED" and action["attempts"] == 1
    types = await system.event_types(laneId=lane_id)
    for expected in (
        "REVIEW_PASSED",
        "APPROVAL_REQUESTED",
        "ITEM_APPROVED",
        "LANE_LIVE",
        "TICKET_CLOSED",
    ):
        assert types.count(expected) == 1, (expected, types)
    assert types.index("LANE_LIVE") < types.index("TICKET_CLOSED")
    assert "PENDING_ACTION_OPENED" not in types
    assert shipped["leaseToken"] not in str(await system.events())
    digest = await system.digest()
    assert digest["owner"] == DIGEST_OWNER and digest.get("entries", []) == []


async def test_a_lane_that_fails_review_once_is_fixed_and_ships_after_approval(
    system: LaneSystem,
) -> None:
    lane_id = (await system.create_lane(standard_lane()))["laneId"]
    await system.work("codex", "BUILD")
    await system.work(
        "claude", "REVIEW", verdict="FAIL", findings=["missing test"], summary="needs a test"
    )
    lane = await system.lane(lane_id)
    assert lane["state"] == "ACTIVE" and lane["failRounds"] == 1
    review = items_by_key(lane)["review-1"]
    assert review["evidence"]["verdict"] == "FAIL"
    fix = items_by_key(lane)["fix-1"]
    assert (fix["kind"], fix["workerClass"], fix["state"]) == ("FIX", "codex", "QUEUED")

    lease = await system.take("codex")
    assert lease["item"]["kind"] == "FIX"
    assert lease["item"]["inputs"]["findings"] == ["missing test"]
    assert lease["item"]["inputs"]["review_item_id"] == review["itemId"]
    await system.complete(lease, summary="added the test")

    review2 = await system.work("claude", "REVIEW", verdict="PASS")
    assert review2["item"]["key"] == "review-2"
    await system.ship(lane_id)
    lane = await system.lane(lane_id)
    assert lane["state"] == "LIVE" and lane["nextAction"] == "live"
    assert [(i["key"], i["state"]) for i in lane["items"]] == [
        ("build", "SUCCEEDED"),
        ("review-1", "SUCCEEDED"),
        ("fix-1", "SUCCEEDED"),
        ("review-2", "SUCCEEDED"),
        ("ship", "SUCCEEDED"),
    ]
    types = await system.event_types(laneId=lane_id)
    assert types.count("REVIEW_FAILED") == 1 and types.count("REVIEW_PASSED") == 1


async def test_a_lane_that_fails_review_twice_closes_out_into_the_digest(
    system: LaneSystem,
) -> None:
    lane_id = (await system.create_lane(standard_lane()))["laneId"]
    await system.build_and_review(lane_id, ["FAIL", "FAIL"])
    lane = await system.lane(lane_id)
    assert lane["state"] == "CLOSED_OUT"
    assert lane["failRounds"] == 2
    assert "review failed 2" in lane["closeReason"]
    assert lane["nextAction"] == "human close-out"
    assert "fix-2" not in items_by_key(lane) and "ship" not in items_by_key(lane)
    assert await system.lease("codex") == []
    digest = await system.digest()
    assert digest["owner"] == DIGEST_OWNER
    assert digest["day"] == system.today == "2026-01-01"
    closed = [e for e in digest["entries"] if e["kind"] == "CLOSED_OUT"]
    assert [e["laneId"] for e in closed] == [lane_id]
    assert "review failed" in closed[0]["reason"]
    types = await system.event_types(laneId=lane_id)
    assert types.count("LANE_CLOSED_OUT") == 1 and types.count("REVIEW_FAILED") == 2
    # Another day has its own digest.
    assert (await system.digest("2026-01-02")).get("entries", []) == []


async def test_a_failed_ticket_closure_stays_pending_and_succeeds_on_a_later_pass(
    system: LaneSystem,
) -> None:
    lane_id = (
        await system.create_lane(standard_lane(tickets=[{"tracker": "github", "key": "o/r#13"}]))
    )["laneId"]
    await system.build_and_review(lane_id, ["PASS"])
    system.github.fail_next(1, 502)
    await system.ship(lane_id)
    await system.settle()

    assert (await system.lane(lane_id))["state"] == "LIVE"
    assert system.github.state("o/r#13") == "open"
    (action,) = await system.pending_actions()
    assert action["state"] == "OPEN" and action["kind"] == "CLOSE_TICKET"
    assert action["attempts"] == 1 and "502" in action["lastError"]
    assert action["owner"] == DIGEST_OWNER
    assert action["ticket"]["key"] == "o/r#13"
    due = parse_time(action["nextAttemptTime"])
    assert due > system.clock.now()
    kinds = sorted(e["kind"] for e in (await system.digest())["entries"])
    assert kinds == ["CLOSE_OUT_ACTION_FAILED", "PENDING_ACTION"]
    assert (await system.view())["pendingActions"][0]["actionId"] == action["actionId"]

    # Before its backoff, a pass leaves it alone.
    report = await system.maintain()
    assert report.get("pendingActionsAttempted", 0) == 0
    assert len(system.github.calls_to("PATCH")) == 1

    system.github.fail_next(1, "reset")
    system.clock.advance((due - system.clock.now()).total_seconds() + 1)
    report = await system.maintain()
    assert report["pendingActionsAttempted"] == 1 and report.get("pendingActionsSucceeded", 0) == 0
    (action,) = await system.pending_actions("OPEN")
    assert action["attempts"] == 2 and "unreachable" in action["lastError"]
    later = parse_time(action["nextAttemptTime"])
    assert (later - system.clock.now()) > (due - system.clock.now())  # backoff grows

    system.clock.advance((later - system.clock.now()).total_seconds() + 1)
    report = await system.maintain()
    assert report["pendingActionsAttempted"] == 1 and report["pendingActionsSucceeded"] == 1
    assert system.github.state("o/r#13") == "closed"
    (action,) = await system.pending_actions()
    assert action["state"] == "SUCCEEDED" and action["attempts"] == 3
    (ticket,) = (await system.lane(lane_id))["tickets"]
    assert ticket["state"] == "CLOSED" and parse_time(ticket["observeTime"]) == system.clock.now()
    assert await system.pending_actions("OPEN") == []
    assert "pendingActions" not in await system.view()
    types = await system.event_types(laneId=lane_id)
    assert [t for t in types if "PENDING" in t or t == "TICKET_CLOSED"] == [
        "PENDING_ACTION_OPENED",
        "PENDING_ACTION_RETRIED",
        "TICKET_CLOSED",
        "PENDING_ACTION_RESOLVED",
    ]
    # Today's digest keeps the failure (and the failed closure step of the second pass); the
    # open action no longer shows.
    kinds = sorted(e["kind"] for e in (await system.digest())["entries"])
    assert kinds == ["CLOSE_OUT_ACTION_FAILED", "MAINTENANCE_STEP_FAILED"]
    # Further passes never call the tracker for it again.
    system.clock.advance(7200)
    await system.maintain()
    assert len(system.github.calls_to("PATCH")) == 3


async def test_a_human_resolves_a_pending_action_and_a_work_key_cannot(system: LaneSystem) -> None:
    lane_id = (
        await system.create_lane(standard_lane(tickets=[{"tracker": "github", "key": "o/r#12"}]))
    )["laneId"]
    await system.build_and_review(lane_id, ["PASS"])
    system.github.fail_next(1, 500)
    await system.ship(lane_id)
    await system.settle()
    (action,) = await system.pending_actions("OPEN")
    url = f"{system.base}/pending-actions/{action['actionId']}/resolve"
    forbidden(await system.worker.post(url, json={"resolution": "closed by hand"}))
    assert (await system.pending_actions("OPEN"))[0]["actionId"] == action["actionId"]

    resolved = ok(await system.admin.post(url, json={"resolution": "closed by hand"}))
    assert resolved["state"] == "RESOLVED" and resolved["resolution"] == "closed by hand"
    again = ok(await system.admin.post(url, json={"resolution": "twice"}))
    assert again["state"] == "RESOLVED" and again["resolution"] == "closed by hand"
    system.clock.advance(3600)
    report = await system.maintain()
    assert report.get("pendingActionsAttempted", 0) == 0
    assert len(system.github.calls_to("PATCH")) == 1
    assert system.github.state("o/r#12") == "open"


async def test_recovery_syncs_ticket_state_from_the_tracker(system: LaneSystem) -> None:
    lane = await system.create_lane(standard_lane(tickets=[{"tracker": "github", "key": "o/r#12"}]))
    (ticket,) = lane["tickets"]
    assert ticket.get("state", "STATE_UNSPECIFIED") == "STATE_UNSPECIFIED"
    report = await system.maintain()
    assert report["ticketsSynced"] == 1
    (ticket,) = (await system.lane(lane["laneId"]))["tickets"]
    assert ticket["state"] == "OPEN" and parse_time(ticket["observeTime"]) == system.clock.now()
    system.github.set_state("o/r#12", "closed")  # closed by someone on GitHub
    system.clock.advance(30)
    await system.maintain()
    (ticket,) = (await system.lane(lane["laneId"]))["tickets"]
    assert ticket["state"] == "CLOSED" and parse_time(ticket["observeTime"]) == system.clock.now()
    assert (await system.event_types(laneId=lane["laneId"])).count("TICKET_SYNCED") == 2
