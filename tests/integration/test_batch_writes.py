"""Batched worker writes (BatchHeartbeat, BatchComplete, BatchFail) over gRPC and REST, on
PostgreSQL and SQLite: each entry fenced and answered on its own, a bad envelope refused whole
with nothing written, and the store's invariants kept (tests/support/invariants.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.harness import Stack, expect_error, identity, task, violated_fields
from tests.support.invariants import check_invariants
from tests.support.rest import bearer, error_info, field_violations
from workcoord.api.v1 import event_pb2, lane_pb2, worker_pb2
from workcoord.gateway.server import RunningGateway, start_gateway
from workcoord.kit.errors import InvalidArgument
from workcoord.kit.settings import GatewaySettings
from workcoord.kit.status import error_from_status

State = lane_pb2.Item.State
OK = 0


@pytest.fixture(autouse=True)
async def _invariants_hold(stack: Stack) -> AsyncIterator[None]:
    """After every test: the stored invariants of the coordinator hold (fencing, capacity,
    the gap-free log, lane and item states)."""
    yield
    async with stack.running.store.read() as reader:
        assert await check_invariants(reader, stack.cid) == []


def ref(stack: Stack, lease: worker_pb2.Lease, token: str | None = None) -> dict[str, str]:
    return {
        "coordinator_id": stack.cid,
        "lease_id": lease.lease_id,
        "lease_token": token if token is not None else lease.lease_token,
    }


def complete(stack: Stack, lease: worker_pb2.Lease, **kw: str) -> worker_pb2.CompleteRequest:
    return worker_pb2.CompleteRequest(
        **ref(stack, lease, **kw), evidence=lane_pb2.Evidence(summary="done")
    )


async def leased(stack: Stack, count: int) -> list[worker_pb2.Lease]:
    """``count`` (≤ 4) running leases: machine, agent, machine, agent (each class holds two)."""
    classes = ["machine", "agent"]
    await stack.create_lane(*(task(f"t{n}", classes[n % 2]) for n in range(count)))
    by_class = [
        await stack.lease(cls, max_items=2, run_identity=identity(stack.clock)) for cls in classes
    ]
    leases = [by_class[n % 2][n // 2] for n in range(count)]
    assert sorted(lease.item.key for lease in leases) == [f"t{n}" for n in range(count)]
    return leases


async def test_batch_complete_answers_each_entry_on_its_own(stack: Stack) -> None:
    a, b, c, d = await leased(stack, 4)
    await stack.release(d)  # d's lease is over: its entry is LEASE_LOST
    answer = await stack.worker.workers.BatchComplete(
        worker_pb2.BatchCompleteRequest(
            coordinator_id=stack.cid,
            requests=[
                complete(stack, a),
                complete(stack, b, token="wcl_not-the-token"),
                # Bad input in one entry (a summary over its limit) fails that entry alone.
                worker_pb2.CompleteRequest(
                    **ref(stack, c), evidence=lane_pb2.Evidence(summary="x" * 100_000)
                ),
                complete(stack, d),
            ],
        )
    )
    results = list(answer.results)
    assert [r.lease_id for r in results] == [a.lease_id, b.lease_id, c.lease_id, d.lease_id]
    assert results[0].status.code == OK
    assert results[0].attempt.status == lane_pb2.Attempt.COMPLETED
    lost_b = error_from_status(results[1].status)
    assert lost_b.reason == "LEASE_LOST" and not results[1].HasField("attempt")
    bad_c = error_from_status(results[2].status)
    assert isinstance(bad_c, InvalidArgument)
    assert violated_fields(bad_c) == {"evidence.summary"}
    lost_d = error_from_status(results[3].status)
    assert lost_d.reason == "LEASE_LOST" and lost_d.metadata["cause"] == "terminal"
    assert (await stack.get_item(a.item)).state == State.SUCCEEDED
    assert (await stack.get_item(b.item)).state == State.RUNNING
    assert (await stack.get_item(c.item)).state == State.RUNNING
    # One ITEM_SUCCEEDED, revisions still gap-free.
    events = await stack.events()
    assert [e.revision for e in events] == list(range(1, len(events) + 1))
    succeeded = [e for e in events if e.type == event_pb2.Event.ITEM_SUCCEEDED]
    assert [e.item_id for e in succeeded] == [a.item.item_id]


async def test_batch_complete_finishes_the_lane_and_releases_dependents(stack: Stack) -> None:
    await stack.create_lane(task("a"), task("b"), task("c", depends_on=["a", "b"]))
    a, b = await stack.lease(max_items=2, run_identity=identity(stack.clock))
    answer = await stack.worker.workers.BatchComplete(
        worker_pb2.BatchCompleteRequest(
            coordinator_id=stack.cid, requests=[complete(stack, a), complete(stack, b)]
        )
    )
    assert [r.status.code for r in answer.results] == [OK, OK]
    (c,) = await stack.lease(run_identity=identity(stack.clock))
    assert c.item.key == "c"
    done = await stack.worker.workers.BatchComplete(
        worker_pb2.BatchCompleteRequest(coordinator_id=stack.cid, requests=[complete(stack, c)])
    )
    assert done.results[0].status.code == OK
    events = await stack.events()
    assert [e.type for e in events][-1] == event_pb2.Event.LANE_DONE
    assert [e.revision for e in events] == list(range(1, len(events) + 1))


async def test_batch_heartbeat_extends_every_live_lease(stack: Stack) -> None:
    a, b = await leased(stack, 2)
    stack.clock.advance(10)
    answer = await stack.worker.workers.BatchHeartbeat(
        worker_pb2.BatchHeartbeatRequest(
            coordinator_id=stack.cid,
            # An entry may leave out its coordinator: it is the batch's.
            requests=[
                worker_pb2.HeartbeatRequest(
                    lease_id=a.lease_id, lease_token=a.lease_token, progress="half"
                ),
                worker_pb2.HeartbeatRequest(**ref(stack, b, token="wcl_wrong")),
            ],
        )
    )
    first, second = answer.results
    assert first.status.code == OK
    assert first.lease_expire_time.ToSeconds() > a.lease_expire_time.ToSeconds()
    assert error_from_status(second.status).reason == "LEASE_LOST"
    item = await stack.get_item(a.item)
    assert item.attempts[0].progress == "half"
    assert item.attempts[0].lease_expire_time == first.lease_expire_time


async def test_batch_fail_retries_or_dead_letters_each_entry(stack: Stack) -> None:
    a, b = await leased(stack, 2)
    error = lane_pb2.ErrorInfo(message="boom", type="Boom", retryable=True)
    fatal = lane_pb2.ErrorInfo(message="no", type="Fatal", retryable=False)
    answer = await stack.worker.workers.BatchFail(
        worker_pb2.BatchFailRequest(
            coordinator_id=stack.cid,
            requests=[
                worker_pb2.FailRequest(**ref(stack, a), error=error),
                worker_pb2.FailRequest(**ref(stack, b), error=fatal),
            ],
        )
    )
    assert [r.status.code for r in answer.results] == [OK, OK]
    assert (await stack.get_item(a.item)).state == State.QUEUED
    assert (await stack.get_item(b.item)).state == State.DEAD


@pytest.mark.parametrize(
    ("requests", "field"),
    [
        (0, "requests"),
        (501, "requests"),
        (-1, "requests[1].lease_id"),  # the same lease twice
    ],
)
async def test_a_malformed_envelope_fails_the_whole_call(
    stack: Stack, requests: int, field: str
) -> None:
    (a,) = await leased(stack, 1)
    if requests == -1:
        entries = [complete(stack, a), complete(stack, a)]
    else:
        entries = [complete(stack, a) for _ in range(requests)]
    call = stack.worker.workers.BatchComplete(
        worker_pb2.BatchCompleteRequest(coordinator_id=stack.cid, requests=entries)
    )
    err = await expect_error(call, InvalidArgument)
    assert violated_fields(err) == {field}
    assert (await stack.get_item(a.item)).state == State.RUNNING  # nothing written


async def test_an_entry_of_another_coordinator_is_refused_alone(stack: Stack) -> None:
    (a,) = await leased(stack, 1)
    other = worker_pb2.CompleteRequest(
        coordinator_id="wc-elsewhere", lease_id="ls_x", lease_token="wcl_x"
    )
    answer = await stack.worker.workers.BatchComplete(
        worker_pb2.BatchCompleteRequest(
            coordinator_id=stack.cid, requests=[other, complete(stack, a)]
        )
    )
    refused, applied = answer.results
    assert violated_fields(error_from_status(refused.status)) == {"coordinator_id"}
    assert applied.status.code == OK


# ------------------------------------------------------------------------------ REST


@pytest.fixture
async def gateway(stack: Stack) -> AsyncIterator[RunningGateway]:
    running = await start_gateway(
        GatewaySettings(
            listen_gateway="127.0.0.1:0",
            coordinator_address=stack.address,
            recovery_address=stack.address,
        )
    )
    yield running
    await running.stop()


async def test_rest_batches_answer_per_entry_and_refuse_a_bad_envelope(
    stack: Stack, gateway: RunningGateway
) -> None:
    a, b = await leased(stack, 2)
    base = f"/v1/work-coordinators/{stack.cid}/leases"
    async with httpx.AsyncClient(
        base_url=f"http://{gateway.address}", headers=bearer(stack.key_secret), timeout=30
    ) as rest:
        beat = await rest.post(
            f"{base}:batchHeartbeat",
            json={"requests": [{"leaseId": a.lease_id, "leaseToken": a.lease_token}]},
        )
        assert beat.status_code == 200, beat.text
        (only,) = beat.json()["results"]
        assert only["leaseId"] == a.lease_id and only["status"].get("code", 0) == 0
        assert only["leaseExpireTime"]

        mixed = await rest.post(
            f"{base}:batchComplete",
            json={
                "requests": [
                    {"leaseId": a.lease_id, "leaseToken": a.lease_token},
                    {"leaseId": b.lease_id, "leaseToken": "wcl_wrong"},
                ]
            },
        )
        assert mixed.status_code == 200, mixed.text
        done, lost = mixed.json()["results"]
        assert done["status"].get("code", 0) == 0 and done["attempt"]["status"] == "COMPLETED"
        assert lost["status"]["code"] == 10  # ABORTED
        assert error_info(lost["status"])["reason"] == "LEASE_LOST"
        assert "attempt" not in lost

        empty = await rest.post(f"{base}:batchFail", json={"requests": []})
        assert empty.status_code == 400, empty.text
        assert set(field_violations(empty.json())) == {"requests"}
        twice = {"leaseId": b.lease_id, "leaseToken": b.lease_token, "error": {"message": "x"}}
        repeated = await rest.post(f"{base}:batchFail", json={"requests": [twice, twice]})
        assert repeated.status_code == 400, repeated.text
    assert (await stack.get_item(b.item)).state == State.RUNNING
