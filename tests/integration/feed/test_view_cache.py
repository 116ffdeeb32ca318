"""``GetView`` (and why) from the view cache equal answers built afresh at the same revision.

After every step of a random mix of writes (lanes created, leases, starts, heartbeats,
completions, failures, releases, cancels, pauses, blockers, capacity filling up and freeing),
the view the server answers from its cache is compared, field by field, with one built from
nothing (an empty cache) in the same state."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.support.harness import Stack, identity, task
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.coordinator.domain.engine.view_cache import ViewCache

pytestmark = pytest.mark.usefixtures("backend")


async def get_view(client: WorkcoordClient, cid: str, size: int = 500) -> work_coordinator_pb2.View:
    response = await client.coordinators.GetView(
        work_coordinator_pb2.GetViewRequest(coordinator_id=cid, page_size=size)
    )
    return response.view


@contextmanager
def empty_view_cache(stack: Stack) -> Iterator[None]:
    """Calls inside build their answers with an empty view cache; the cache in use is put back
    afterwards, as the calls before left it."""
    engine = stack.running.engine
    kept, engine.view_cache = engine.view_cache, ViewCache()
    try:
        yield
    finally:
        engine.view_cache = kept


async def fresh_view(stack: Stack, client: WorkcoordClient, cid: str) -> work_coordinator_pb2.View:
    """The view built with an empty cache."""
    with empty_view_cache(stack):
        return await get_view(client, cid)


async def assert_cached_equals_fresh(
    stack: Stack, client: WorkcoordClient, cid: str
) -> work_coordinator_pb2.View:
    fresh = await fresh_view(stack, client, cid)
    # Why, for every lane and one item of each, through the cache (still as the last view
    # left it) and without it.
    for lane in fresh.lanes:
        for request in (
            work_coordinator_pb2.ExplainRequest(coordinator_id=cid, lane_id=lane.lane_id),
            work_coordinator_pb2.ExplainRequest(coordinator_id=cid, item_id=lane.items[-1].item_id),
        ):
            through_cache = await client.coordinators.Explain(request)
            with empty_view_cache(stack):
                without = await client.coordinators.Explain(request)
            assert through_cache == without
    cached = await get_view(client, cid)
    assert cached.revision == fresh.revision
    assert cached == fresh
    return cached


@pytest.mark.parametrize("seed", [1, 2])
async def test_the_cached_view_equals_a_fresh_one_after_a_random_mix_of_writes(
    stack: Stack, seed: int
) -> None:
    rng = random.Random(seed)
    cid = await stack.new_coordinator(class_capacity={"machine": 2, "gpu": 5})
    _, client = await stack.work_key(coordinator_ids=[cid])
    lanes: list[lane_pb2.Lane] = []
    leases: list[worker_pb2.Lease] = []
    started: list[worker_pb2.Lease] = []
    blockers: list[tuple[str, str]] = []
    paused: list[str] = []

    async def create_lane() -> None:
        count = rng.randint(1, 4)
        items = [
            task(f"k{n}", rng.choice(["machine", "gpu"]), depends_on=[f"k{n - 1}"] if n else [])
            for n in range(count)
        ]
        created = await client.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=cid,
                lane=lane_pb2.Lane(title="mix", template=lane_pb2.Lane.CUSTOM, items=items),
            )
        )
        lanes.append(created.lane)

    async def lease() -> None:
        worker_class = rng.choice(["machine", "gpu"])
        found = await stack.lease(
            worker_class,
            worker_id=f"{worker_class}-{rng.randint(1, 3)}",
            max_items=rng.randint(1, 2),
            client=client,
            coordinator_id=cid,
        )
        leases.extend(found)

    async def fenced(call: str) -> None:
        pool = started if call in ("heartbeat", "complete", "fail") else leases
        if not pool:
            return
        lease = pool.pop(rng.randrange(len(pool)))
        fence: dict[str, Any] = {
            "coordinator_id": cid,
            "lease_id": lease.lease_id,
            "lease_token": lease.lease_token,
        }
        workers = client.workers
        try:
            if call == "start":
                await workers.Start(
                    worker_pb2.StartRequest(**fence, run_identity=identity(stack.clock))
                )
                started.append(lease)
            elif call == "release":
                await workers.Release(worker_pb2.ReleaseRequest(**fence, reason="r"))
            elif call == "heartbeat":
                stack.clock.advance(1)
                await workers.Heartbeat(
                    worker_pb2.HeartbeatRequest(**fence, progress=f"p{rng.randint(0, 99)}")
                )
                started.append(lease)
            elif call == "complete":
                await workers.Complete(
                    worker_pb2.CompleteRequest(**fence, evidence=lane_pb2.Evidence(summary="ok"))
                )
            else:
                await workers.Fail(
                    worker_pb2.FailRequest(
                        **fence, error=lane_pb2.ErrorInfo(message="x", type="X", retryable=True)
                    )
                )
        except Exception:  # a lease lost meanwhile (a cancel, a pause): the view still agrees
            return

    async def lane_call() -> None:
        if not lanes:
            return
        lane = rng.choice(lanes)
        what = rng.choice(["pause", "resume", "block", "unblock", "cancel_item"])
        try:
            if what == "pause" and lane.lane_id not in paused:
                await client.lanes.PauseLane(
                    lane_pb2.PauseLaneRequest(coordinator_id=cid, lane_id=lane.lane_id, reason="p")
                )
                paused.append(lane.lane_id)
            elif what == "resume" and lane.lane_id in paused:
                await client.lanes.ResumeLane(
                    lane_pb2.ResumeLaneRequest(coordinator_id=cid, lane_id=lane.lane_id, reason="r")
                )
                paused.remove(lane.lane_id)
            elif what == "block":
                added = await client.lanes.AddBlocker(
                    lane_pb2.AddBlockerRequest(
                        coordinator_id=cid,
                        lane_id=lane.lane_id,
                        blocker=lane_pb2.Blocker(reason="waiting"),
                    )
                )
                blockers.extend((lane.lane_id, b.blocker_id) for b in added.lane.blockers)
            elif what == "unblock" and blockers:
                lane_id, blocker_id = blockers.pop(rng.randrange(len(blockers)))
                await client.lanes.ResolveBlocker(
                    lane_pb2.ResolveBlockerRequest(
                        coordinator_id=cid, lane_id=lane_id, blocker_id=blocker_id, note="n"
                    )
                )
            elif what == "cancel_item":
                item = rng.choice(lane.items)
                await client.lanes.CancelItem(
                    lane_pb2.CancelItemRequest(
                        coordinator_id=cid, lane_id=lane.lane_id, item_id=item.item_id, note="n"
                    )
                )
        except Exception:  # refused (the lane is no longer active…): nothing changed
            return

    steps = [
        create_lane,
        lease,
        lambda: fenced("start"),
        lambda: fenced("heartbeat"),
        lambda: fenced("complete"),
        lambda: fenced("fail"),
        lambda: fenced("release"),
        lane_call,
    ]
    for _ in range(3):
        await create_lane()
    await assert_cached_equals_fresh(stack, client, cid)
    for _ in range(40):
        await rng.choice(steps)()
        await assert_cached_equals_fresh(stack, client, cid)
    last = await assert_cached_equals_fresh(stack, client, cid)
    assert len(last.lanes) == len(lanes)


async def test_a_heartbeat_without_an_event_shows_in_the_cached_view(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    before = await get_view(stack.admin, stack.cid)
    stack.clock.advance(5)
    await stack.heartbeat(lease, progress="half way")
    after = await get_view(stack.admin, stack.cid)
    assert after.revision == before.revision  # a heartbeat appends no event
    (attempt,) = [a for lane in after.lanes for i in lane.items for a in i.attempts]
    assert attempt.progress == "half way"
    assert attempt.lease_expire_time != before.lanes[0].items[0].attempts[0].lease_expire_time
    assert after == await fresh_view(stack, stack.admin, stack.cid)


async def test_every_caller_reads_the_same_view_from_the_cache(stack: Stack) -> None:
    await stack.create_lane(task("a"), task("b"))
    await stack.lease_and_start()
    by_admin = await get_view(stack.admin, stack.cid)
    by_key = await get_view(stack.worker, stack.cid)
    _, reader = await stack.work_key(coordinator_ids=[stack.cid])
    assert by_admin == by_key == await get_view(reader, stack.cid)


async def test_capacity_filling_up_relabels_queued_items_of_untouched_lanes(stack: Stack) -> None:
    cid = await stack.new_coordinator(class_capacity={"machine": 1})
    _, client = await stack.work_key(coordinator_ids=[cid])
    for title in ("a", "b"):
        await client.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=cid,
                lane=lane_pb2.Lane(title=title, template=lane_pb2.Lane.CUSTOM, items=[task("k")]),
            )
        )
    before = await get_view(client, cid)
    assert {lane.next_action for lane in before.lanes} == {"lease task (machine)"}
    (lease,) = await stack.lease(client=client, coordinator_id=cid)
    after = await get_view(client, cid)
    waiting = [lane for lane in after.lanes if lane.lane_id != lease.item.lane_id]
    assert [lane.next_action for lane in waiting] == ["wait: machine 1/1"]
    assert after == await fresh_view(stack, client, cid)
