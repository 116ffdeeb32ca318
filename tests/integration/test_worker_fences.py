"""Over gRPC: Lease retries with a request id, worker fences, and forgetting a worker."""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.harness import Stack, event_type, expect_error, task, violated_fields
from workcoord.api.v1 import event_pb2, lane_pb2, policy_pb2, work_coordinator_pb2, worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import (
    IllegalTransition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    WorkerFenced,
)

Gate = work_coordinator_pb2.Gate
CLASS = "agent"  # capacity 4 by default: room for two workers' leases


async def _lease(
    stack: Stack,
    worker_id: str,
    request_id: str = "",
    *,
    max_items: int = 1,
    client: WorkcoordClient | None = None,
) -> list[worker_pb2.Lease]:
    response = await (client or stack.worker).workers.Lease(
        worker_pb2.LeaseRequest(
            coordinator_id=stack.cid,
            worker_id=worker_id,
            worker_class=CLASS,
            max_items=max_items,
            lease_seconds=30,
            request_id=request_id,
        )
    )
    return list(response.leases)


def _ids(leases: list[worker_pb2.Lease]) -> list[tuple[str, str]]:
    return [(lease.lease_id, lease.lease_token) for lease in leases]


async def _types(stack: Stack, since: int = 0) -> list[str]:
    return [event_type(e) for e in await stack.events() if e.revision > since]


async def _revision(stack: Stack) -> int:
    events = await stack.events()
    return events[-1].revision if events else 0


async def _set_placement(stack: Stack, item_id: str, placement: Mapping[str, object]) -> None:
    """Write a placement as an older release (or a hand edit) could have left it."""
    engine = create_async_engine(stack.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text("UPDATE items SET placement = :p WHERE item_id = :i"),
                {"p": json.dumps(placement), "i": item_id},
            )
    finally:
        await engine.dispose()


async def _workers(stack: Stack) -> dict[str, worker_pb2.Worker]:
    response = await stack.admin.workers.ListWorkers(
        worker_pb2.ListWorkersRequest(coordinator_id=stack.cid)
    )
    return {w.worker_id: w for w in response.workers}


# ------------------------------------------------------------------------------ request ids


async def test_a_retried_lease_answers_the_same_leases_and_writes_nothing(stack: Stack) -> None:
    await stack.create_lane(task("a", CLASS), task("b", CLASS), task("c", CLASS), task("d", CLASS))
    first = await _lease(stack, "w1", "call-1", max_items=2)
    assert len(first) == 2
    revision = await _revision(stack)
    again = await _lease(stack, "w1", "call-1", max_items=2)
    assert _ids(again) == _ids(first)
    assert [lease.item.key for lease in again] == [lease.item.key for lease in first]
    assert await _revision(stack) == revision  # no attempt, no event
    # The replayed token is the real one: it fences writes as the first did.
    await stack.start(again[0])
    # Another worker id, or another credential, with the same request id leases afresh.
    other = await _lease(stack, "w2", "call-1")
    assert other and other[0].lease_id not in {x.lease_id for x in first}
    _, second_key = await stack.work_key()
    fresh = await _lease(stack, "w1", "call-1", client=second_key)
    assert fresh and fresh[0].lease_id not in {x.lease_id for x in first + other}


async def test_a_request_id_is_spent_once_one_of_its_leases_ended(stack: Stack) -> None:
    await stack.create_lane(task("a", CLASS), task("b", CLASS), task("c", CLASS))
    first = await _lease(stack, "w1", "call-2", max_items=2)
    await stack.release(first[0])
    again = await _lease(stack, "w1", "call-2")
    assert len(again) == 1 and again[0].lease_id not in {x.lease_id for x in first}
    # The new grant is what the id answers now.
    assert _ids(await _lease(stack, "w1", "call-2")) == _ids(again)
    # Expired by the server clock (not yet swept): spent as well.
    stack.clock.advance(31)
    later = await _lease(stack, "w1", "call-2")
    assert later and later[0].lease_id != again[0].lease_id


async def test_a_malformed_request_id_is_refused_by_name(stack: Stack) -> None:
    err = await expect_error(_lease(stack, "w1", "-bad id-"), InvalidArgument)
    assert violated_fields(err) == {"request_id"}


# ------------------------------------------------------------------------------ fences


async def test_a_malformed_placement_on_a_live_attempt_fences_only_its_worker(
    stack: Stack,
) -> None:
    lane = await stack.create_lane(
        task("held", CLASS, placement=policy_pb2.Placement(worker_id="w1", exclusive=["gpu-0"])),
        task("gpu-too", CLASS, placement=policy_pb2.Placement(exclusive=["gpu-0"])),
        task("a", CLASS),
        task("b", CLASS),
    )
    by_key = {i.key: i for i in lane.items}
    (held,) = await _lease(stack, "w1")
    assert held.item.key == "held"
    good = {"worker_id": "w1", "exclusive": ["gpu-0"]}
    await _set_placement(stack, held.item.item_id, {**good, "bogus": 1})
    before = await _revision(stack)

    err = await expect_error(_lease(stack, "w1"), WorkerFenced, "WORKER_FENCED")
    assert held.lease_id in err.message and "bogus" in err.message
    await expect_error(_lease(stack, "w1"), WorkerFenced)  # still fenced, said once
    fenced = [e for e in await stack.events() if e.revision > before]
    assert [event_type(e) for e in fenced] == ["WORKER_FENCED"]
    assert fenced[0].lease_id == held.lease_id

    # Every other worker keeps working; the fenced worker's resources stay held.
    assert sorted(x.item.key for x in await _lease(stack, "w2", max_items=3)) == ["a", "b"]
    gpu_gates = (await stack.explain(by_key["gpu-too"].item_id)).gates
    assert [g.gate for g in gpu_gates] == [Gate.FENCED]
    assert "w1" in gpu_gates[0].detail and list(gpu_gates[0].lease_ids) == [held.lease_id]
    held_gates = (await stack.explain(held.item.item_id)).gates
    assert [g.gate for g in held_gates] == [Gate.FENCED] and "bogus" in held_gates[0].detail

    workers = await _workers(stack)
    fence = workers["w1"].fence
    assert (fence.lease_id, fence.item_id, fence.lane_id) == (
        held.lease_id,
        held.item.item_id,
        held.item.lane_id,
    )
    assert list(fence.exclusive) == ["resource:gpu-0"] and "bogus" in fence.reason
    assert fence.expire_time == held.lease_expire_time
    assert not workers["w2"].HasField("fence")
    view = await stack.admin.coordinators.GetView(
        work_coordinator_pb2.GetViewRequest(coordinator_id=stack.cid)
    )
    in_view = {w.worker_id: w for w in view.view.workers}
    assert in_view["w1"].fence == fence and not in_view["w2"].HasField("fence")
    # Reporting itself does not lift a fence.
    await stack.workers_report("w1", CLASS)
    assert (await _workers(stack))["w1"].HasField("fence")

    # Corrected: the next Lease lifts the fence and goes on.
    await _set_placement(stack, held.item.item_id, good)
    assert not (await _workers(stack))["w1"].HasField("fence")  # views see the cause gone
    mark = await _revision(stack)
    assert await _lease(stack, "w1") == []  # gpu-too still waits for its own lease's gpu-0
    assert await _types(stack, mark) == ["WORKER_UNFENCED"]
    gpu_gates = (await stack.explain(by_key["gpu-too"].item_id)).gates
    assert [g.gate for g in gpu_gates] == [Gate.EXCLUSIVE]


async def test_recovery_fences_and_lifts_the_fence_when_the_lease_expires(stack: Stack) -> None:
    await stack.create_lane(task("held", CLASS, placement=policy_pb2.Placement(worker_id="w1")))
    (held,) = await _lease(stack, "w1")
    await _set_placement(stack, held.item.item_id, {"worker_id": "w1", "bogus": 1})
    mark = await _revision(stack)
    await stack.maintain()
    assert await _types(stack, mark) == ["WORKER_FENCED"]
    assert (await _workers(stack))["w1"].fence.lease_id == held.lease_id
    await stack.maintain()  # nothing new
    stack.clock.advance(31)
    assert not (await _workers(stack))["w1"].HasField("fence")  # expired: shown lifted
    mark = await _revision(stack)
    await stack.maintain()
    assert "WORKER_UNFENCED" in await _types(stack, mark)
    assert "ATTEMPT_EXPIRED" in await _types(stack, mark)


# ------------------------------------------------------------------------------ forget


async def test_an_admin_forgets_a_worker_holding_no_lease(stack: Stack) -> None:
    await stack.create_lane(task("a", CLASS))
    await stack.workers_report("w-idle", CLASS)
    (lease,) = await _lease(stack, "w-busy")

    async def forget(
        worker_id: str, client: WorkcoordClient | None = None
    ) -> worker_pb2.ForgetWorkerResponse:
        return await (client or stack.admin).workers.ForgetWorker(
            worker_pb2.ForgetWorkerRequest(coordinator_id=stack.cid, worker_id=worker_id)
        )

    err = await expect_error(forget("w-busy"), IllegalTransition, "ILLEGAL_TRANSITION")
    assert "w-busy" in err.message and lease.lease_id in err.message
    await expect_error(forget("w-idle", stack.worker), PermissionDenied)
    await expect_error(forget("w-nobody"), NotFound)

    mark = await _revision(stack)
    response = await forget("w-idle")
    assert response.worker.worker_id == "w-idle"
    events = [e for e in await stack.events() if e.revision > mark]
    assert [event_type(e) for e in events] == ["WORKER_FORGOTTEN"]
    assert events[0].type == event_pb2.Event.WORKER_FORGOTTEN
    assert "w-idle" not in await _workers(stack)

    await stack.release(lease)
    await forget("w-busy")
    assert set(await _workers(stack)) == set()
    # The id may come back, as a new worker.
    assert (await stack.workers_report("w-idle", CLASS)).worker_id == "w-idle"
    assert (await stack.get_item(lease.item)).state == lane_pb2.Item.QUEUED
