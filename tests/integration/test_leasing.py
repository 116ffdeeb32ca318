"""Leasing over gRPC: order, batches, class capacity, exclusive keys, dependencies, placement."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.harness import Stack, expect_error, identity, task, violated_fields
from workcoord.api.v1 import event_pb2, lane_pb2, policy_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit.errors import InvalidArgument

Gate = work_coordinator_pb2.Gate
State = lane_pb2.Item.State


def keys(leases: list[worker_pb2.Lease]) -> list[str]:
    return [lease.item.key for lease in leases]


async def test_priority_first_then_turns_across_lanes(stack: Stack) -> None:
    await stack.create_lane(task("low-1"), task("low-2"), priority=1)
    await stack.create_lane(task("high-1", priority=9), task("high-2", priority=9))
    await stack.create_lane(task("mid-1", priority=5))
    await stack.create_lane(task("low-3"), priority=1)

    order: list[str] = []
    for _ in range(6):
        (lease,) = await stack.lease("machine", max_items=1)
        order.extend(keys([lease]))
        await stack.start(lease)
        await stack.complete(lease)
    # Within priority 1 the lanes take turns: low-1's lane was served, so low-3's goes next.
    assert order == ["high-1", "high-2", "mid-1", "low-1", "low-3", "low-2"]
    assert await stack.lease("machine") == []


async def test_a_new_lane_is_served_within_one_round_of_a_deep_old_one(stack: Stack) -> None:
    await stack.create_lane(*(task(f"old-{i}", "codex") for i in range(100)))
    first = await stack.lease("codex", max_items=1)
    assert keys(first) == ["old-0"]
    await stack.create_lane(task("new-0", "codex"), task("new-1", "codex"))

    # The old lane was served last: the new lane's item goes next, though 99 are older.
    assert keys(await stack.lease("codex", max_items=1, worker_id="w2")) == ["new-0"]
    # Then the lanes take turns, one item each.
    assert keys(await stack.lease("codex", max_items=1, worker_id="w3")) == ["old-1"]
    assert keys(await stack.lease("codex", max_items=1, worker_id="w4")) == ["new-1"]


async def test_one_lease_call_takes_turns_across_lanes(stack: Stack) -> None:
    await stack.create_lane(*(task(f"old-{i}", "codex") for i in range(100)))
    await stack.start((await stack.lease("codex", max_items=1))[0])
    await stack.create_lane(task("new-0", "codex"), task("new-1", "codex"))

    assert keys(await stack.lease("codex", max_items=3, worker_id="w2")) == [
        "new-0",
        "old-1",
        "new-1",
    ]


async def test_fair_turns_stay_within_one_priority(stack: Stack) -> None:
    await stack.create_lane(task("calm-0", "codex"), task("calm-1", "codex"), priority=1)
    await stack.create_lane(*(task(f"urgent-{i}", "codex") for i in range(3)), priority=9)
    got = keys(await stack.lease("codex", max_items=4))
    # A higher priority still goes first: turns are taken only among lanes of one priority.
    assert got == ["urgent-0", "urgent-1", "urgent-2", "calm-0"]


async def test_batches_up_to_max_items_and_capacity(stack: Stack) -> None:
    await stack.create_lane(*(task(f"c{i}", "codex") for i in range(6)))

    first = await stack.lease("codex", max_items=3)
    assert keys(first) == ["c0", "c1", "c2"]
    assert {lease.status for lease in first} == {lane_pb2.Attempt.LEASED}
    assert len({lease.lease_id for lease in first}) == 3
    assert len({lease.lease_token for lease in first}) == 3

    # codex capacity is 4 by default: only one more slot.
    second = await stack.lease("codex", max_items=3, worker_id="w2")
    assert keys(second) == ["c3"]
    assert await stack.lease("codex", max_items=3, worker_id="w3") == []

    held = sorted(lease.lease_id for lease in first + second)
    lane_id = first[0].item.lane_id
    lane = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane_id)
    )
    waiting = next(i for i in lane.lane.items if i.key == "c4")
    explanation = await stack.explain(waiting.item_id)
    capacity = [g for g in explanation.gates if g.gate == Gate.CAPACITY]
    assert len(capacity) == 1, explanation.gates
    assert sorted(capacity[0].lease_ids) == held
    assert capacity[0].detail.startswith("codex 4/4 held by lease ")
    for lease_id in held:
        assert lease_id in capacity[0].detail

    # A freed slot is leasable again.
    await stack.start(first[0])
    await stack.complete(first[0])
    assert keys(await stack.lease("codex", max_items=3)) == ["c4"]


async def test_person_capacity_is_one(stack: Stack) -> None:
    await stack.create_lane(task("p1", "person"), task("p2", "person"))
    assert keys(await stack.lease("person", max_items=5)) == ["p1"]
    assert await stack.lease("person", max_items=5, worker_id="w2") == []


async def test_capacity_is_per_class(stack: Stack) -> None:
    await stack.create_lane(
        task("m1"), task("m2"), task("m3"), task("a1", "agent"), task("a2", "agent")
    )
    assert keys(await stack.lease("machine", max_items=10)) == ["m1", "m2"]
    assert keys(await stack.lease("agent", max_items=10, worker_id="w2")) == ["a1", "a2"]


async def test_exclusive_keys_never_both_live_and_no_head_of_line_blocking(stack: Stack) -> None:
    await stack.create_lane(
        task("x1", "codex", exclusive_key="repo:net-kingdom"),
        task("x2", "codex", exclusive_key="repo:net-kingdom"),
        task("free", "codex"),
    )
    first = await stack.lease("codex", max_items=4)
    # x2 shares x1's key and waits; the later item without the key still leases.
    assert keys(first) == ["x1", "free"]
    assert await stack.lease("codex", max_items=4, worker_id="w2") == []

    lane = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=first[0].item.lane_id)
    )
    x2 = next(i for i in lane.lane.items if i.key == "x2")
    assert x2.state == State.QUEUED
    explanation = await stack.explain(x2.item_id)
    exclusive = [g for g in explanation.gates if g.gate == Gate.EXCLUSIVE]
    assert [list(g.lease_ids) for g in exclusive] == [[first[0].lease_id]]

    await stack.start(first[0])
    await stack.complete(first[0])
    assert keys(await stack.lease("codex", max_items=4)) == ["x2"]


async def test_exclusive_key_within_one_batch(stack: Stack) -> None:
    await stack.create_lane(
        task("k1", "agent", exclusive_key="db:main"),
        task("k2", "agent", exclusive_key="db:main"),
        task("k3", "agent", exclusive_key="db:other"),
    )
    assert keys(await stack.lease("agent", max_items=4)) == ["k1", "k3"]


async def test_dependencies_wait_until_upstream_succeeded(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"), task("b"), task("c", "person", depends_on=["a", "b"]))
    states = {i.key: i.state for i in lane.items}
    assert states == {"a": State.QUEUED, "b": State.QUEUED, "c": State.WAITING}
    c = next(i for i in lane.items if i.key == "c")
    explanation = await stack.explain(c.item_id)
    assert [g.gate for g in explanation.gates] == [Gate.DEPENDENCIES]

    assert await stack.lease("person") == []
    a, b = await stack.lease("machine", max_items=2)
    await stack.start(a)
    await stack.complete(a)
    assert (await stack.get_item(c)).state == State.WAITING
    assert await stack.lease("person") == []

    # A failed upstream does not release the dependent either.
    await stack.start(b)
    await stack.fail(b, retryable=True)
    assert (await stack.get_item(c)).state == State.WAITING

    stack.clock.advance(10)
    (b2,) = await stack.lease("machine")
    await stack.start(b2)
    await stack.complete(b2)
    assert (await stack.get_item(c)).state == State.QUEUED
    assert keys(await stack.lease("person")) == ["c"]


async def test_cycles_are_rejected_naming_the_field(stack: Stack) -> None:
    err = await expect_error(
        stack.create_lane(
            task("a", depends_on=["c"]), task("b", depends_on=["a"]), task("c", depends_on=["b"])
        ),
        InvalidArgument,
        "INVALID_ARGUMENT",
    )
    assert violated_fields(err) == {"lane.items[0].depends_on"}
    assert "cycle" in err.field_violations[0].description

    err = await expect_error(
        stack.create_lane(task("a", depends_on=["a"]), task("b", depends_on=["nope"])),
        InvalidArgument,
    )
    assert violated_fields(err) == {"lane.items[0].depends_on[0]", "lane.items[1].depends_on[0]"}
    # Nothing was written.
    assert [e for e in await stack.events() if e.type != e.COORDINATOR_CREATED] == []


async def test_placement_worker_id_and_labels(stack: Stack) -> None:
    await stack.workers_report("w-gpu", "machine", {"gpu": "a100", "zone": "eu"})
    await stack.workers_report("w-cpu", "machine", {"zone": "eu"})
    await stack.create_lane(
        task("gpu", placement=policy_pb2.Placement(require_labels={"gpu": "a100"})),
        task("pinned", placement=policy_pb2.Placement(worker_id="w-cpu")),
    )
    # w-cpu has no gpu label: it gets only its pinned item.
    assert keys(await stack.lease(worker_id="w-cpu", max_items=2)) == ["pinned"]
    # Someone else cannot take the gpu item; w-gpu can.
    await stack.workers_report("w-other", "machine", {"gpu": "t4"})
    assert await stack.lease(worker_id="w-other") == []
    assert keys(await stack.lease(worker_id="w-gpu")) == ["gpu"]


async def test_malformed_placement_is_skipped_and_explained(stack: Stack) -> None:
    lane = await stack.create_lane(
        task("broken", placement=policy_pb2.Placement(worker_id="w1")), task("fine")
    )
    broken = next(i for i in lane.items if i.key == "broken")
    # A placement stored by an older release (or edited by hand) that no longer validates.
    engine = create_async_engine(stack.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text("UPDATE items SET placement = :p WHERE item_id = :i"),
                {"p": '{"worker_id": "w1", "bogus": 1}', "i": broken.item_id},
            )
    finally:
        await engine.dispose()
    assert keys(await stack.lease(worker_id="w1", max_items=2)) == ["fine"]
    explanation = await stack.explain(broken.item_id)
    gates = [g for g in explanation.gates if g.gate == Gate.PLACEMENT]
    assert len(gates) == 1 and "malformed placement" in gates[0].detail
    assert "bogus" in gates[0].detail
    assert (await stack.get_item(broken)).state == State.QUEUED


async def test_unknown_worker_class(stack: Stack) -> None:
    err = await expect_error(stack.lease("plumber"), InvalidArgument)
    assert violated_fields(err) == {"worker_class"}
    err = await expect_error(stack.create_lane(task("a", "plumber")), InvalidArgument)
    assert violated_fields(err) == {"lane.items[0].worker_class"}


async def test_lease_with_run_identity_starts_at_once(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"), task("b"))
    leases = await stack.lease(max_items=2, run_identity=identity(stack.clock))
    assert [lease.status for lease in leases] == [lane_pb2.Attempt.RUNNING] * 2
    for item in lane.items:
        fetched = await stack.get_item(item)
        assert fetched.state == State.RUNNING
        assert fetched.attempts[0].run_identity.pid == 4242
    started = [e for e in await stack.events() if e.type == event_pb2.Event.ITEM_STARTED]
    assert sorted(e.lease_id for e in started) == sorted(lease.lease_id for lease in leases)
    # Complete works straight away, with no Start.
    await stack.complete(leases[0])
    assert (await stack.get_item(lane.items[0])).state == State.SUCCEEDED
