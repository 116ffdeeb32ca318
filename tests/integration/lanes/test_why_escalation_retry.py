"""`why` at every stage of a STANDARD lane, escalation of unleased work, retry overrides."""

from __future__ import annotations

import pytest

from tests.support.rest import JSON, custom, items_by_key, ok, parse_time, task

from .system import ESCALATE_AFTER_SECONDS, RECEIPT, LaneSystem, standard_lane

pytestmark = [pytest.mark.pg, pytest.mark.redis]


def gates(explanation: JSON) -> list[str]:
    return [g["gate"] for g in explanation.get("gates", [])]


async def test_why_explains_a_standard_lane_at_every_stage(system: LaneSystem) -> None:
    # Four codex leases of another lane fill the codex class (capacity 4).
    other = await system.create_lane(custom(*(task(f"t{n}", "codex") for n in range(4))))
    holders = await system.lease("codex", max_items=4)
    held_ids = sorted(h["leaseId"] for h in holders)
    created = system.clock.advance(1)  # after the codex worker's last ask
    lane_id = (await system.create_lane(standard_lane()))["laneId"]

    why = await system.why(laneId=lane_id)
    assert why["laneId"] == lane_id and why["state"] == "ACTIVE"
    assert why["nextAction"] == "wait: codex 4/4"
    (build,) = why["items"]
    assert build["state"] == "QUEUED" and gates(build) == ["CAPACITY"]
    capacity = build["gates"][0]
    assert capacity["detail"].startswith("codex 4/4 held by lease")
    assert sorted(capacity["leaseIds"]) == held_ids
    assert parse_time(capacity["since"]) == created
    assert "LANE_CREATED" in [e["type"] for e in why["events"]]

    system.clock.advance(10)
    ok(await system.admin.post(f"{system.base}/lanes/{other['laneId']}/cancel", json={}))
    build_id = build["itemId"]
    why = await system.why(itemId=build_id)
    assert why["itemId"] == build_id and gates(why) == ["NOBODY_ASKING"]
    assert parse_time(why["gates"][0]["since"]) == created
    assert why["gates"][0]["countsTowardEscalation"] is True

    # Paused and blocked lanes say so, with since when.
    system.clock.advance(5)
    paused_at = system.clock.now()
    ok(await system.admin.post(f"{system.base}/lanes/{lane_id}/pause", json={"reason": "wait"}))
    blocked = ok(
        await system.admin.post(
            f"{system.base}/lanes/{lane_id}/blockers", json={"reason": "waiting on infra"}
        )
    )
    why = await system.why(itemId=build_id)
    assert gates(why)[:2] == ["PAUSED", "BLOCKED"]
    assert parse_time(why["gates"][0]["since"]) == paused_at
    assert "waiting on infra" in why["gates"][1]["detail"]
    assert await system.lease("codex") == []
    ok(await system.admin.post(f"{system.base}/lanes/{lane_id}/resume", json={}))
    blocker_id = blocked["blockers"][0]["blockerId"]
    ok(
        await system.admin.post(
            f"{system.base}/lanes/{lane_id}/blockers/{blocker_id}/resolve", json={}
        )
    )

    # Leased, then running: no gate, the attempt with its run identity, never a token.
    leases = await system.lease("codex")
    assert leases[0]["item"]["itemId"] == build_id
    why = await system.why(itemId=build_id)
    assert why["state"] == "LEASED" and gates(why) == []
    assert [(a["attempt"], a["status"]) for a in why["attempts"]] == [(1, "LEASED")]
    ok(await system.lease_call(leases[0], "start", runIdentity=system.identity(pid=777)))
    why = await system.why(itemId=build_id)
    (attempt,) = why["attempts"]
    assert why["state"] == "RUNNING" and attempt["status"] == "RUNNING"
    assert attempt["runIdentity"]["pid"] == "777"  # int64: a string in proto3 JSON
    assert attempt["runIdentity"]["agentId"] == "agent-7"
    assert attempt["leaseId"] == leases[0]["leaseId"]
    assert [e["type"] for e in why["events"]][-2:] == ["ITEM_LEASED", "ITEM_STARTED"]
    await system.complete(leases[0], summary="built")

    # Review stage: build SUCCEEDED with a COMPLETED attempt, review waiting for claude.
    why = await system.why(laneId=lane_id)
    states = {i["itemId"]: i["state"] for i in why["items"]}
    assert states[build_id] == "SUCCEEDED"
    review = next(i for i in why["items"] if i["itemId"] != build_id)
    assert review["state"] == "QUEUED" and gates(review) == ["NOBODY_ASKING"]
    assert why["nextAction"] == "lease review (claude)"
    await system.work("claude", "REVIEW", verdict="PASS")

    # Approval stage.
    approval_at = system.clock.now()
    ship = await system.item_by_key(lane_id, "ship")
    why = await system.why(itemId=ship["itemId"])
    assert why["state"] == "AWAITING_APPROVAL" and gates(why) == ["APPROVAL"]
    assert parse_time(why["gates"][0]["since"]) == approval_at
    assert why["nextAction"] == "approve ship"
    assert [e["type"] for e in why["events"]] == ["ITEM_CREATED", "APPROVAL_REQUESTED"]

    ok(await system.decide(ship, "approve"))
    await system.work("machine", "SHIP", receipt=RECEIPT)
    why = await system.why(laneId=lane_id)
    assert why["state"] == "LIVE" and why["nextAction"] == "live"
    assert all(gates(i) == [] for i in why["items"])
    assert "LANE_LIVE" in [e["type"] for e in why["events"]]
    text = str(why)
    for lease in holders + leases:
        assert lease["leaseToken"] not in text
    assert "leaseToken" not in text and "tokenHash" not in text


async def test_escalation_of_ready_work_nobody_leases(system: LaneSystem) -> None:
    lonely = items_by_key(await system.create_lane(custom(task("lonely", "codex"))))["lonely"]
    # Held by capacity: person has capacity 1, taken by another item.
    held = await system.create_lane(custom(task("p1", "person"), task("p2", "person")))
    await system.take("person", lease_seconds=300)
    # Held by a pause and by a blocker.
    paused = await system.create_lane(custom(task("quiet", "agent")))
    ok(await system.admin.post(f"{system.base}/lanes/{paused['laneId']}/pause", json={}))
    blocked = await system.create_lane(custom(task("stuck", "agent")))
    ok(
        await system.admin.post(
            f"{system.base}/lanes/{blocked['laneId']}/blockers", json={"reason": "infra"}
        )
    )
    # Not overdue yet.
    system.clock.advance(ESCALATE_AFTER_SECONDS - 1)
    assert (await system.maintain()).get("escalated", 0) == 0

    system.clock.advance(2)
    report = await system.maintain()
    assert report["escalated"] == 1
    escalated = [e for e in await system.events() if e["type"] == "ESCALATED"]
    assert [e["itemId"] for e in escalated] == [lonely["itemId"]]
    assert escalated[0]["data"]["gate"] == "NOBODY_ASKING"
    entries = [e for e in (await system.digest())["entries"] if e["kind"] == "ESCALATED"]
    assert [e["itemId"] for e in entries] == [lonely["itemId"]]
    view = await system.view()
    (open_escalation,) = view["escalations"]
    assert open_escalation["itemId"] == lonely["itemId"] and open_escalation["open"] is True
    assert open_escalation["escalatedTo"] == ["ops@acme.test"]
    p2 = items_by_key(await system.lane(held["laneId"]))["p2"]
    assert gates(await system.why(itemId=p2["itemId"])) == ["CAPACITY"]

    # Once: later passes do not escalate it again.
    system.clock.advance(ESCALATE_AFTER_SECONDS * 3)
    assert (await system.maintain()).get("escalated", 0) == 0
    assert (await system.event_types()).count("ESCALATED") == 1

    # Leasing it closes the escalation.
    lease = await system.take("codex")
    assert lease["item"]["itemId"] == lonely["itemId"]
    assert "escalations" not in await system.view()


async def test_placement_nobody_matches_is_escalated(system: LaneSystem) -> None:
    item = items_by_key(
        await system.create_lane(
            custom(task("gpu", "machine", placement={"requireLabels": {"gpu": "a100"}}))
        )
    )["gpu"]
    assert await system.lease("machine") == []  # a machine asks, but does not match
    system.clock.advance(ESCALATE_AFTER_SECONDS + 1)
    assert (await system.maintain())["escalated"] == 1
    (event,) = [e for e in await system.events() if e["type"] == "ESCALATED"]
    assert event["itemId"] == item["itemId"] and event["data"]["gate"] == "PLACEMENT"


async def test_retry_policy_is_overridable_per_lane_and_per_item(system: LaneSystem) -> None:
    one = {"maximumAttempts": 1}
    lane = await system.create_lane(
        custom(
            task("lane-policy", "codex"),
            task("item-override", "machine", retryPolicy={"maximumAttempts": 3}),
            retryPolicy=one,
        )
    )
    first = await system.take("codex")
    await system.fail(first, retryable=True)
    item = await system.item_by_key(lane["laneId"], "lane-policy")
    assert item["state"] == "DEAD" and item["deadLetterReason"] == "EXHAUSTED"
    second = await system.take("machine")
    await system.fail(second, retryable=True)
    item = await system.item_by_key(lane["laneId"], "item-override")
    assert item["state"] == "QUEUED" and "notBefore" in item

    other = await system.create_lane(
        custom(task("item-one", "agent", retryPolicy=one), task("default", "person"))
    )
    for worker_class in ("agent", "person"):
        await system.fail(await system.take(worker_class), retryable=True)
    items = items_by_key(await system.lane(other["laneId"]))
    assert items["item-one"]["state"] == "DEAD"
    assert items["item-one"]["deadLetterReason"] == "EXHAUSTED"
    assert items["default"]["state"] == "QUEUED"

    standard = await system.create_lane(standard_lane(retryPolicy=one))
    await system.fail(await system.take("codex"), retryable=True)
    build = await system.item_by_key(standard["laneId"], "build")
    assert build["state"] == "DEAD" and build["deadLetterReason"] == "EXHAUSTED"
    assert (await system.lane(standard["laneId"]))["state"] == "ACTIVE"  # visibly held: DEAD
