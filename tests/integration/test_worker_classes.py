"""One worker id for several classes: ``workerClasses`` on ReportWorker and Lease (gRPC, on
SQLite and PostgreSQL). The best ready item across the asked classes goes first; capacity is
still counted per class."""

from __future__ import annotations

import asyncio

from tests.support.harness import Stack, expect_error, task, violated_fields
from workcoord.api.v1 import event_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit.errors import InvalidArgument

BOTH = ["machine", "agent"]
Gate = work_coordinator_pb2.Gate


def keys(leases: list[worker_pb2.Lease]) -> list[str]:
    return [lease.item.key for lease in leases]


async def test_one_worker_leases_the_best_item_across_its_classes(stack: Stack) -> None:
    reported = await stack.workers_report("w-both", "machine", worker_classes=BOTH)
    assert list(reported.worker_classes) == BOTH
    await stack.create_lane(task("m-low"), priority=1)
    await stack.create_lane(task("a-high", "agent", priority=9))
    await stack.create_lane(task("m-mid", priority=5))

    order: list[str] = []
    for _ in range(3):
        (lease,) = await stack.lease("machine", worker_id="w-both", worker_classes=BOTH)
        order.append(lease.item.key)
        await stack.start(lease)
        await stack.complete(lease)
    # Priority decides across the classes: the agent item first, then the machine ones.
    assert order == ["a-high", "m-mid", "m-low"]
    # Registered once, with both classes.
    events = await stack.events()
    assert [e.type for e in events].count(event_pb2.Event.WORKER_REGISTERED) == 1


async def test_capacity_is_still_counted_per_class(stack: Stack) -> None:
    await stack.workers_report("w-both", "machine", worker_classes=BOTH)
    await stack.create_lane(
        task("m1"), task("m2"), task("m3"), *(task(f"a{i}", "agent") for i in range(5))
    )
    leases = await stack.lease("machine", worker_id="w-both", worker_classes=BOTH, max_items=10)
    # machine 2, agent 4 (the shared defaults): six items, each class within its own capacity.
    assert sorted(keys(leases)) == ["a0", "a1", "a2", "a3", "m1", "m2"]
    assert {lease.item.key: lease.item.worker_class for lease in leases}["a0"] == "agent"
    assert await stack.lease("machine", worker_id="w-both", worker_classes=BOTH) == []
    # A one-class worker of agent finds that class full too; machine work waits for a slot.
    assert await stack.lease("agent", worker_id="a-only") == []
    machine = next(lease for lease in leases if lease.item.key == "m1")
    await stack.start(machine)
    await stack.complete(machine)
    assert keys(await stack.lease("agent", worker_id="w-both", worker_classes=BOTH)) == ["m3"]


async def test_a_worker_leases_only_the_classes_it_serves(stack: Stack) -> None:
    await stack.workers_report("w-machine", "machine")
    await stack.create_lane(task("a1", "agent"))
    err = await expect_error(
        stack.lease("machine", worker_id="w-machine", worker_classes=["agent"]), InvalidArgument
    )
    assert violated_fields(err) == {"worker_classes"}
    assert "registered with class 'machine'" in str(err)
    # Reporting again with both classes lets it lease both.
    await stack.workers_report("w-machine", "machine", worker_classes=BOTH)
    assert keys(await stack.lease("machine", worker_id="w-machine", worker_classes=BOTH)) == ["a1"]
    # A worker first seen asking serves what it asked for (and nothing more).
    assert await stack.lease("person", worker_id="w-new", worker_classes=["machine"]) == []
    err = await expect_error(
        stack.lease("person", worker_id="w-new", worker_classes=["agent"]), InvalidArgument
    )
    assert "registered with classes 'person', 'machine'" in str(err)


async def test_unknown_classes_name_their_field(stack: Stack) -> None:
    err = await expect_error(
        stack.workers_report("w-x", "machine", worker_classes=["machine", "plumber"]),
        InvalidArgument,
    )
    assert violated_fields(err) == {"worker.worker_classes"}
    err = await expect_error(
        stack.lease("machine", worker_id="w-y", worker_classes=["plumber"]), InvalidArgument
    )
    assert violated_fields(err) == {"worker_classes"}
    err = await expect_error(
        stack.lease("machine", worker_id="w-y", worker_classes=["Not A Class"]), InvalidArgument
    )
    assert violated_fields(err) == {"worker_classes[0]"}
    listed = await stack.admin.workers.ListWorkers(
        worker_pb2.ListWorkersRequest(coordinator_id=stack.cid)
    )
    assert [w.worker_id for w in listed.workers] == []  # nothing was written


async def test_a_waiting_lease_wakes_for_work_of_any_of_its_classes(stack: Stack) -> None:
    await stack.workers_report("w-both", "machine", worker_classes=BOTH)
    waiting = asyncio.ensure_future(
        stack.lease("machine", worker_id="w-both", worker_classes=BOTH, wait_seconds=30)
    )
    await stack.until_asked("w-both", waiting)
    await stack.create_lane(task("a1", "agent"))
    async with asyncio.timeout(30):
        assert keys(await waiting) == ["a1"]


async def test_why_counts_a_worker_of_several_classes_as_asking_for_each(stack: Stack) -> None:
    await stack.workers_report("w-both", "machine", worker_classes=BOTH)
    lane = await stack.create_lane(task("m-high", priority=9), task("a-low", "agent", priority=1))
    leased = await stack.lease("machine", worker_id="w-both", worker_classes=BOTH)
    assert keys(leased) == ["m-high"]
    explanation = await stack.explain(lane.items[1].item_id)
    # A worker of its class (w-both, machine first) asked since it was queued: nothing holds
    # it, rather than "nobody is asking".
    assert list(explanation.gates) == []
