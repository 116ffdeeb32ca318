"""Policy stops, approvals and every human-only decision, through REST."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.rest import custom, items_by_key, ok, task

from .system import DIGEST_OWNER, LaneSystem, forbidden, illegal, standard_lane

pytestmark = [pytest.mark.pg, pytest.mark.redis]


async def test_policy_stops_wait_for_a_human_and_sensitive_items_get_no_retries(
    system: LaneSystem,
) -> None:
    lane = await system.create_lane(
        custom(
            task("deploy", "machine", title="Deploy to production"),
            task("migrate", "agent", title="Migrate", actionClasses=["repo_edit", "prod_db_write"]),
            task("ask", "person", title="Pick a name", needsHuman=True),
            task("rotate", "claude", title="Tidy up", brief="Then rotate the API keys of the bot"),
            task("fine", "codex", title="Refactor", actionClasses=["repo_edit", "local_checks"]),
        )
    )
    items = items_by_key(lane)
    assert items["fine"]["state"] == "QUEUED"
    reasons = {k: items[k]["stopReason"] for k in ("deploy", "migrate", "ask", "rotate")}
    assert all(items[k]["state"] == "STOPPED" for k in reasons)
    assert "production deploy" in reasons["deploy"] and "Deploy to production" in reasons["deploy"]
    assert reasons["migrate"] == "action class not allowed: prod_db_write"
    assert reasons["ask"] == "needs a human"
    assert "credential change" in reasons["rotate"] and "rotate the API keys" in reasons["rotate"]
    for key in reasons:
        assert items[key]["nextAction"] != f"lease task ({items[key]['workerClass']})"
    for worker_class in ("machine", "agent", "person", "claude"):
        assert await system.lease(worker_class) == []
    stopped = [e for e in await system.events() if e["type"] == "ITEM_STOPPED"]
    assert len(stopped) == 4
    assert {e["data"]["reason"] for e in stopped} == set(reasons.values())
    digest = await system.digest()
    assert digest["owner"] == DIGEST_OWNER
    assert sorted(e["itemId"] for e in digest["entries"] if e["kind"] == "STOPPED") == sorted(
        items[k]["itemId"] for k in reasons
    )
    why = await system.why(itemId=items["deploy"]["itemId"])
    assert [g["gate"] for g in why["gates"]] == ["STOPPED"]
    assert why["gates"][0]["detail"] == reasons["deploy"]

    # A work key holding every capability cannot resume; a human can.
    for key in reasons:
        forbidden(await system.decide(items[key], "resume", system.worker))
        assert (await system.item_by_key(lane["laneId"], key))["state"] == "STOPPED"
    for key in reasons:
        resumed = ok(await system.decide(items[key], "resume", note="checked"))
        assert resumed["state"] == "QUEUED" and resumed.get("stopReason", "") == ""
    assert (await system.event_types()).count("ITEM_RESUMED") == 4

    # The sensitive deploy fails retryably: dead-lettered at once, reason POLICY.
    deploy = await system.take("machine")
    assert deploy["item"]["key"] == "deploy"
    await system.fail(deploy, retryable=True)
    item = await system.item_by_key(lane["laneId"], "deploy")
    assert item["state"] == "DEAD" and item["deadLetterReason"] == "POLICY"
    assert item["attemptCount"] == 1
    # The sensitive rotate's lease expires: dead-lettered by recovery, reason POLICY.
    await system.take("claude", lease_seconds=30)
    # The non-sensitive stop (needs a human) retries like any other item.
    ask = await system.take("person", lease_seconds=30)
    system.clock.advance(31)
    report = await system.maintain()
    assert report["expiredAttempts"] == 2
    assert report["deadLettered"] == 1 and report["requeued"] == 1
    rotate = await system.item_by_key(lane["laneId"], "rotate")
    assert rotate["state"] == "DEAD" and rotate["deadLetterReason"] == "POLICY"
    assert (await system.item_by_key(lane["laneId"], "ask"))["state"] == "QUEUED"
    del ask
    dead = [e for e in (await system.digest())["entries"] if e["kind"] == "DEAD_LETTERED"]
    assert sorted(e["reason"] for e in dead) == ["POLICY", "POLICY"]

    # A human redrives the dead deploy; a work key cannot.
    forbidden(await system.decide(item, "retry", system.worker))
    redriven = ok(await system.decide(item, "retry"))
    assert redriven["state"] == "QUEUED" and redriven.get("attemptCount", 0) == 0
    assert "deadLetterReason" not in redriven
    # Still sensitive after a redrive: the next retryable failure is final again.
    again = await system.take("machine")
    assert again["item"]["key"] == "deploy" and again["attempt"] == 2
    await system.fail(again, retryable=True)
    item = await system.item_by_key(lane["laneId"], "deploy")
    assert item["state"] == "DEAD" and item["deadLetterReason"] == "POLICY"


async def test_a_checkpoint_blocked_reason_stops_the_item_for_a_human(system: LaneSystem) -> None:
    lane = await system.create_lane(custom(task("a", "codex", title="Refactor")))
    lease = await system.take("codex")
    ok(
        await system.lease_call(
            lease, "checkpoint", checkpoint={"summary": "need a secret", "blockedReason": "secret"}
        )
    )
    item = await system.item_by_key(lane["laneId"], "a")
    assert item["state"] == "STOPPED" and "secret" in item["stopReason"]
    assert await system.lease("codex") == []
    forbidden(await system.decide(item, "resume", system.worker))
    assert ok(await system.decide(item, "resume"))["state"] == "QUEUED"
    again = await system.take("codex")
    assert again["item"]["key"] == "a"


async def test_a_work_key_with_every_capability_can_never_decide(system: LaneSystem) -> None:
    lane = await system.create_lane(
        custom(
            task("approve-me", "machine", title="Ship", requiresApproval=True),
            task("resume-me", "person", title="Ask", needsHuman=True),
            task("retry-me", "codex", title="Try", retryPolicy={"maximumAttempts": 1}),
        )
    )
    lease = await system.take("codex")
    await system.fail(lease, retryable=True)
    items = items_by_key(await system.lane(lane["laneId"]))
    assert [items[k]["state"] for k in ("approve-me", "resume-me", "retry-me")] == [
        "AWAITING_APPROVAL",
        "STOPPED",
        "DEAD",
    ]
    revision = (await system.view())["revision"]
    attempts = [
        (items["approve-me"], "approve"),
        (items["approve-me"], "deny"),
        (items["resume-me"], "resume"),
        (items["retry-me"], "retry"),
        # Wrong-state decisions are refused for who is asking before what is asked.
        (items["resume-me"], "approve"),
        (items["approve-me"], "retry"),
    ]
    keys = [system.worker, await system.work_key(["READ", "LEASE", "WRITE"])]
    for client in keys:
        for item, verb in attempts:
            forbidden(await system.decide(item, verb, client))
    forbidden(
        await system.worker.post(
            f"{system.base}/pending-actions/pa_00000000000000000000/resolve", json={}
        )
    )
    assert (await system.view())["revision"] == revision  # nothing changed
    after = items_by_key(await system.lane(lane["laneId"]))
    assert [after[k]["state"] for k in ("approve-me", "resume-me", "retry-me")] == [
        "AWAITING_APPROVAL",
        "STOPPED",
        "DEAD",
    ]
    # A work key may still cancel (WRITE): cancelling is not a decision reserved to humans.
    cancelled = ok(await system.decide(items["resume-me"], "cancel", system.worker))
    assert cancelled["state"] == "CANCELLED"


async def test_approvals_are_idempotent_transitions(system: LaneSystem) -> None:
    lane = await system.create_lane(
        custom(task("ship", "machine", title="Ship it", requiresApproval=True))
    )
    item = items_by_key(lane)["ship"]
    assert item["state"] == "AWAITING_APPROVAL"
    assert ok(await system.decide(item, "approve"))["state"] == "QUEUED"
    revision = (await system.view())["revision"]
    illegal(await system.decide(item, "approve"))
    illegal(await system.decide(item, "deny"))
    assert (await system.view())["revision"] == revision
    assert (await system.item_by_key(lane["laneId"], "ship"))["state"] == "QUEUED"
    approvals = [e for e in await system.events() if e["type"] == "ITEM_APPROVED"]
    assert len(approvals) == 1 and approvals[0]["actor"].startswith("user:")


async def test_concurrent_approvals_let_exactly_one_through(system: LaneSystem) -> None:
    lane = await system.create_lane(
        custom(task("ship", "machine", title="Ship it", requiresApproval=True))
    )
    item = items_by_key(lane)["ship"]
    responses = await asyncio.gather(*(system.decide(item, "approve") for _ in range(10)))
    assert sorted(r.status_code for r in responses) == [200] + [400] * 9
    for response in responses:
        if response.status_code != 200:
            illegal(response)
    assert (await system.event_types(itemId=item["itemId"])).count("ITEM_APPROVED") == 1
    assert (await system.item_by_key(lane["laneId"], "ship"))["state"] == "QUEUED"
    # And a race of approve against deny has one winner too.
    other = await system.create_lane(
        custom(task("ship", "machine", title="Ship it", requiresApproval=True))
    )
    second = items_by_key(other)["ship"]
    verbs = ["approve", "deny"] * 5
    raced = await asyncio.gather(*(system.decide(second, v) for v in verbs))
    assert [r.status_code for r in raced].count(200) == 1
    decided = [
        t
        for t in await system.event_types(itemId=second["itemId"])
        if t in ("ITEM_APPROVED", "ITEM_DENIED")
    ]
    assert len(decided) == 1


async def test_deny_cancels_the_ship_and_closes_the_lane_out(system: LaneSystem) -> None:
    lane_id = (await system.create_lane(standard_lane()))["laneId"]
    await system.build_and_review(lane_id, ["PASS"])
    ship = await system.item_by_key(lane_id, "ship")
    forbidden(await system.decide(ship, "deny", system.worker))
    denied = ok(await system.decide(ship, "deny", note="not this week"))
    assert denied["state"] == "CANCELLED"
    lane = await system.lane(lane_id)
    assert lane["state"] == "CLOSED_OUT" and lane["closeReason"] == "denied"
    illegal(await system.decide(ship, "deny"))
    illegal(await system.decide(ship, "approve"))
    closed = [e for e in (await system.digest())["entries"] if e["kind"] == "CLOSED_OUT"]
    assert [e["laneId"] for e in closed] == [lane_id]
    assert (await system.event_types(laneId=lane_id)).count("ITEM_DENIED") == 1
    assert await system.lease("machine") == []


async def test_cancelling_a_stage_closes_a_standard_lane_out(system: LaneSystem) -> None:
    # Found by the property test: a cancelled stage used to leave the lane ACTIVE with
    # nothing to do and nothing holding it (its nextAction even read "done").
    lane_id = (await system.create_lane(standard_lane()))["laneId"]
    await system.work("codex", "BUILD")
    review = await system.item_by_key(lane_id, "review-1")
    cancelled = ok(await system.decide(review, "cancel", system.worker, note="wrong branch"))
    assert cancelled["state"] == "CANCELLED"
    lane = await system.lane(lane_id)
    assert lane["state"] == "CLOSED_OUT" and lane["closeReason"] == "review cancelled"
    assert lane["nextAction"] == "human close-out"
    closed = [e for e in (await system.digest())["entries"] if e["kind"] == "CLOSED_OUT"]
    assert [e["laneId"] for e in closed] == [lane_id]
    assert await system.lease("claude") == []
