"""Coalesced worker writes: the coalescer's batches, and a worker loop holding many leases that
heartbeats them all in one call and completes them in one batch."""

from __future__ import annotations

import asyncio

import pytest
from google.rpc import status_pb2

from tests.unit.client.fakes import FLEET_CLASS, GOOD_TOKEN, FakeCoordinator
from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client import Completed, LoopOptions, Released, WorkcoordClient, Worker
from workcoord.client.batching import Coalescer
from workcoord.client.worker_loop import Assignment
from workcoord.kit.errors import LeaseLost
from workcoord.kit.status import to_rpc_status


class Calls:
    """What a coalescer sent: lone requests and batches, answering LEASE_LOST for "lost"."""

    def __init__(self) -> None:
        self.ones: list[str] = []
        self.batches: list[list[str]] = []
        self.down = False

    async def one(self, request: str) -> str:
        self.ones.append(request)
        return f"{request}!"

    async def many(self, requests: list[str]) -> list[tuple[status_pb2.Status, str]]:
        if self.down:
            raise ConnectionError("down")
        self.batches.append(list(requests))
        return [
            (to_rpc_status(LeaseLost("expired")) if r == "lost" else status_pb2.Status(), f"{r}!")
            for r in requests
        ]


async def test_writes_ready_together_go_out_as_one_batch() -> None:
    calls = Calls()
    coalescer = Coalescer(calls.one, calls.many)
    answers = await asyncio.gather(
        *(coalescer.submit(r) for r in ["a", "lost", "b"]), return_exceptions=True
    )
    assert calls.batches == [["a", "lost", "b"]] and calls.ones == []
    assert answers[0] == "a!" and answers[2] == "b!"  # each caller gets its own answer
    assert isinstance(answers[1], LeaseLost)  # only its own caller hears of it


async def test_a_lone_write_keeps_the_plain_call() -> None:
    calls = Calls()
    assert await Coalescer(calls.one, calls.many).submit("a") == "a!"
    assert calls.ones == ["a"] and calls.batches == []


async def test_a_batch_holds_at_most_max_entries() -> None:
    calls = Calls()
    coalescer = Coalescer(calls.one, calls.many, max_entries=100)
    await asyncio.gather(*(coalescer.submit(f"r{n}") for n in range(150)))
    assert [len(b) for b in calls.batches] == [100, 50]
    assert coalescer.calls == 2


async def test_a_failed_call_reaches_every_caller() -> None:
    calls = Calls()
    calls.down = True
    coalescer = Coalescer(calls.one, calls.many)
    answers = await asyncio.gather(
        *(coalescer.submit(r) for r in ["a", "b"]), return_exceptions=True
    )
    assert all(isinstance(a, ConnectionError) for a in answers)


@pytest.mark.timeout(60)
async def test_a_loop_holding_many_leases_batches_heartbeats_and_completes_with_usage(
    coordinator: FakeCoordinator,
) -> None:
    client = WorkcoordClient(coordinator.address, GOOD_TOKEN)
    worker = Worker(client, "wc-1", "w-1", FLEET_CLASS)
    beaten = asyncio.Event()

    async def heartbeat_seen() -> None:
        assert await asyncio.to_thread(coordinator.recorded.batch_heartbeat.wait, 30)
        beaten.set()

    async def handler(assignment: Assignment) -> Completed:
        # Report what this lease spent, then work until the loop's shared beat has
        # heartbeated every held lease.
        spent = 100 * int(assignment.lease.lease_id.removeprefix("lease-"))
        assignment.usage = lane_pb2.Usage(cost_micros=spent, model="m")
        await beaten.wait()
        return Completed(lane_pb2.Evidence(summary="ok"))

    watcher = asyncio.create_task(heartbeat_seen())

    options = LoopOptions(
        concurrency=3, lease_seconds=5, once=True, run_identity=lane_pb2.RunIdentity(pid=1)
    )
    try:
        report = await worker.run(handler, options)
    finally:
        await client.close()
        await watcher
    assert report.outcomes == {"completed": 3}
    names = [name for name, _, _ in coordinator.recorded.calls]
    assert "Heartbeat" not in names and "Complete" not in names
    beats = [r for name, r, _ in coordinator.recorded.calls if name == "BatchHeartbeat"]
    assert beats, names
    for beat in beats:  # every beat covers every lease held
        assert isinstance(beat, worker_pb2.BatchHeartbeatRequest)
        assert sorted(e.lease_id for e in beat.requests) == ["lease-1", "lease-2", "lease-3"]
    (done,) = [r for name, r, _ in coordinator.recorded.calls if name == "BatchComplete"]
    assert isinstance(done, worker_pb2.BatchCompleteRequest)
    assert len(done.requests) == 3
    # The batched entries carry each lease's usage, as the plain calls would.
    assert {e.lease_id: e.usage.cost_micros for e in done.requests} == {
        "lease-1": 100,
        "lease-2": 200,
        "lease-3": 300,
    }


@pytest.mark.timeout(60)
async def test_each_batched_heartbeat_entrys_stop_reaches_its_own_assignment(
    coordinator: FakeCoordinator,
) -> None:
    # lease-2's heartbeats answer DEADLINE_EXCEEDED; the others' answer no stop.
    coordinator.workers.told["lease-2"] = worker_pb2.Stop.DEADLINE_EXCEEDED
    client = WorkcoordClient(coordinator.address, GOOD_TOKEN)
    worker = Worker(client, "wc-1", "w-1", FLEET_CLASS)
    seen: dict[str, Assignment] = {}
    told = asyncio.Event()

    async def handler(assignment: Assignment) -> Completed | Released:
        seen[assignment.lease_id] = assignment
        if assignment.lease_id == "lease-2":
            await assignment.told_to_stop.wait()  # only the batched heartbeat can set it
            told.set()
            return Released("told to stop")
        await told.wait()
        return Completed(lane_pb2.Evidence(summary="ok"))

    options = LoopOptions(
        concurrency=3, lease_seconds=5, once=True, run_identity=lane_pb2.RunIdentity(pid=1)
    )
    try:
        report = await worker.run(handler, options)
    finally:
        await client.close()
    assert report.outcomes == {"completed": 2, "released": 1}
    names = [name for name, _, _ in coordinator.recorded.calls]
    assert "BatchHeartbeat" in names and "Heartbeat" not in names, names
    stop = seen["lease-2"].told_stop
    assert stop is not None and stop.reason == worker_pb2.Stop.DEADLINE_EXCEEDED
    assert seen["lease-1"].told_stop is None and seen["lease-3"].told_stop is None
    assert not seen["lease-1"].told_to_stop.is_set()
