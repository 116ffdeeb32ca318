"""Worker writes over gRPC: run identity, heartbeats, fencing, outcomes, retries, checkpoints."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from tests.support.harness import Stack, expect_error, identity, task, violated_fields
from workcoord.api.v1 import event_pb2, lane_pb2, policy_pb2, worker_pb2
from workcoord.kit.errors import IllegalTransition, InvalidArgument, LeaseLost

State = lane_pb2.Item.State
Status = lane_pb2.Attempt.Status
DeadLetter = lane_pb2.Item.DeadLetterReason


def when(stack: Stack, item: lane_pb2.Item) -> float:
    """Seconds from now until the item's not_before."""
    not_before = item.not_before.ToDatetime(tzinfo=stack.clock.now().tzinfo)
    return (not_before - stack.clock.now()).total_seconds()


# ------------------------------------------------------------------------------ run identity


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"pid": 0}, "run_identity.pid"),
        ({"pid": -5}, "run_identity.pid"),
        ({"worktree_path": "lanes/parser"}, "run_identity.worktree_path"),
        ({"account": "ghp_" + "a" * 36}, "run_identity.account"),
        ({"account": "sk-" + "b" * 40}, "run_identity.account"),
        ({"agent_id": ""}, "run_identity.agent_id"),
    ],
)
async def test_start_validates_each_run_identity_field(
    stack: Stack, override: dict[str, object], field: str
) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease()
    err = await expect_error(
        stack.start(lease, identity(stack.clock, **override)), InvalidArgument, "INVALID_ARGUMENT"
    )
    assert violated_fields(err) == {field}
    # Nothing changed.
    item = await stack.get_item(lease.item)
    assert item.state == State.LEASED
    assert not item.attempts[0].HasField("run_identity")


async def test_start_refuses_started_at_in_the_future(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease()
    future = stack.clock.now() + timedelta(minutes=5)
    err = await expect_error(
        stack.start(lease, identity(stack.clock, started_at=future)), InvalidArgument
    )
    assert violated_fields(err) == {"run_identity.started_at"}


async def test_start_names_every_bad_field_at_once(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease()
    bad = identity(
        stack.clock,
        pid=-1,
        worktree_path="relative/path",
        started_at=stack.clock.now() + timedelta(hours=1),
    )
    err = await expect_error(stack.start(lease, bad), InvalidArgument)
    assert violated_fields(err) == {
        "run_identity.pid",
        "run_identity.worktree_path",
        "run_identity.started_at",
    }


async def test_lease_validates_run_identity(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    err = await expect_error(
        stack.lease(run_identity=identity(stack.clock, account="ghp_" + "c" * 36)),
        InvalidArgument,
    )
    assert violated_fields(err) == {"run_identity.account"}
    err = await expect_error(
        stack.lease(run_identity=identity(stack.clock, pid=0)), InvalidArgument
    )
    assert violated_fields(err) == {"run_identity.pid"}
    # Nothing was leased by the refused calls.
    assert len(await stack.lease()) == 1


async def test_start_is_idempotent_with_the_same_identity_only(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease()
    same = identity(stack.clock)
    first = await stack.start(lease, same)
    again = await stack.start(lease, same)
    assert first.status == again.status == Status.RUNNING
    assert again.run_identity == same
    err = await expect_error(
        stack.start(lease, identity(stack.clock, pid=9999)),
        IllegalTransition,
        "ILLEGAL_TRANSITION",
    )
    assert err.code.name == "FAILED_PRECONDITION"
    item = await stack.get_item(lease.item)
    assert item.attempts[0].run_identity.pid == 4242
    started = [e for e in await stack.events() if e.type == event_pb2.Event.ITEM_STARTED]
    assert len(started) == 1


# ------------------------------------------------------------------------------ heartbeat, fencing


async def test_heartbeat_extends_by_requested_seconds_from_now(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease(lease_seconds=20)
    granted = lease.lease_expire_time.ToDatetime(tzinfo=stack.clock.now().tzinfo)
    assert granted == stack.clock.now() + timedelta(seconds=20)
    await stack.start(lease)
    stack.clock.advance(15)
    expires = await stack.heartbeat(lease, progress="tests 40/120")
    assert expires == stack.clock.now() + timedelta(seconds=20)
    stack.clock.advance(15)  # 30 s after the lease: alive only thanks to the heartbeat
    await stack.heartbeat(lease)
    item = await stack.get_item(lease.item)
    assert item.attempts[0].progress == "tests 40/120"
    assert item.attempts[0].lease_expire_time.ToDatetime(
        tzinfo=stack.clock.now().tzinfo
    ) == stack.clock.now() + timedelta(seconds=20)
    # Heartbeats are not events.
    types = {e.type for e in await stack.events()}
    assert types <= {
        event_pb2.Event.COORDINATOR_CREATED,
        event_pb2.Event.LANE_CREATED,
        event_pb2.Event.ITEM_CREATED,
        event_pb2.Event.ITEM_QUEUED,
        event_pb2.Event.ITEM_LEASED,
        event_pb2.Event.ITEM_STARTED,
        event_pb2.Event.WORKER_REGISTERED,
    }


@pytest.mark.parametrize(
    "write", ["start", "heartbeat", "complete", "fail", "release", "checkpoint"]
)
async def test_every_write_after_expiry_is_lease_lost_before_recovery(
    stack: Stack, write: str
) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease(lease_seconds=10)
    if write != "start":
        await stack.start(lease)
    before = await stack.get_item(lease.item)
    stack.clock.advance(10)
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "start": lambda: stack.start(lease),
        "heartbeat": lambda: stack.heartbeat(lease),
        "complete": lambda: stack.complete(lease),
        "fail": lambda: stack.fail(lease),
        "release": lambda: stack.release(lease),
        "checkpoint": lambda: stack.checkpoint(lease, lane_pb2.Checkpoint(summary="half")),
    }
    err = await expect_error(calls[write](), LeaseLost, "LEASE_LOST")
    assert err.metadata["cause"] == "expired"
    assert err.code.name == "ABORTED"
    after = await stack.get_item(lease.item)
    assert after == before


async def test_wrong_token_is_lease_lost_and_changes_nothing(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease()
    await stack.start(lease)
    before = await stack.get_item(lease.item)
    for call in (
        stack.heartbeat(lease, token="wcl_not-the-token"),
        stack.complete(lease, token="wcl_not-the-token"),
        stack.fail(lease, token="wcl_not-the-token"),
        stack.release(lease, token="wcl_not-the-token"),
    ):
        await expect_error(call, LeaseLost, "LEASE_LOST")
    assert await stack.get_item(lease.item) == before


async def test_write_on_a_completed_attempt_is_lease_lost_terminal(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    await stack.complete(lease)
    before = await stack.get_item(lease.item)
    for call in (stack.complete(lease), stack.heartbeat(lease), stack.fail(lease)):
        err = await expect_error(call, LeaseLost)
        assert err.metadata["cause"] == "terminal"
    assert await stack.get_item(lease.item) == before
    assert before.state == State.SUCCEEDED


async def test_stale_token_after_requeue_never_changes_state(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    old = await stack.lease_and_start(lease_seconds=10)
    stack.clock.advance(11)
    await stack.maintain()
    stack.clock.advance(60)  # past the backoff
    new = await stack.lease_and_start()
    assert new.item.item_id == old.item.item_id
    before = await stack.get_item(new.item)
    for call in (stack.complete(old), stack.heartbeat(old), stack.release(old)):
        await expect_error(call, LeaseLost)
    assert await stack.get_item(new.item) == before
    assert before.current_lease_id == new.lease_id


# ------------------------------------------------------------------------------ outcomes


async def test_complete_requires_running(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease()
    await expect_error(stack.complete(lease), IllegalTransition, "ILLEGAL_TRANSITION")
    assert (await stack.get_item(lease.item)).state == State.LEASED
    await stack.start(lease)
    attempt = await stack.complete(lease, summary="all green")
    assert attempt.status == Status.COMPLETED
    item = await stack.get_item(lease.item)
    assert item.state == State.SUCCEEDED
    assert item.evidence.summary == "all green"


async def test_retryable_failures_back_off_then_exhaust(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    expected = [5.0, 15.0, 45.0]
    for attempt, delay in enumerate(expected, start=1):
        lease = await stack.lease_and_start()
        assert lease.attempt == attempt
        failed = await stack.fail(lease, retryable=True)
        assert failed.status == Status.FAILED
        item = await stack.get_item(lease.item)
        assert item.state == State.QUEUED
        assert item.attempt_count == attempt
        assert delay * 0.9 <= when(stack, item) <= delay * 1.1
        # Not leasable during the backoff, leasable right after it.
        stack.clock.advance(delay * 0.85)
        assert await stack.lease() == []
        stack.clock.advance(delay * 0.3)
    last = await stack.lease_and_start()
    assert last.attempt == 4
    await stack.fail(last, retryable=True)
    item = await stack.get_item(last.item)
    assert item.state == State.DEAD
    assert item.dead_letter_reason == DeadLetter.EXHAUSTED
    assert item.attempt_count == 4
    stack.clock.advance(3600)
    assert await stack.lease() == []


async def test_non_retryable_failure_dead_letters_at_once(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    await stack.fail(lease, retryable=False)
    item = await stack.get_item(lease.item)
    assert item.state == State.DEAD
    assert item.dead_letter_reason == DeadLetter.NON_RETRYABLE
    assert item.last_error.message == "boom"
    dead = [e for e in await stack.events() if e.type == event_pb2.Event.ITEM_DEAD_LETTERED]
    assert [e.item_id for e in dead] == [item.item_id]


async def test_retry_policy_is_overridable_per_item(stack: Stack) -> None:
    policy = policy_pb2.RetryPolicy(maximum_attempts=2, backoff_coefficient=2.0)
    policy.initial_interval.FromSeconds(100)
    await stack.create_lane(task("a", retry_policy=policy))
    lease = await stack.lease_and_start()
    await stack.fail(lease)
    item = await stack.get_item(lease.item)
    assert item.state == State.QUEUED
    assert 90 <= when(stack, item) <= 110
    stack.clock.advance(111)
    lease = await stack.lease_and_start()
    await stack.fail(lease)
    item = await stack.get_item(lease.item)
    assert item.state == State.DEAD
    assert item.dead_letter_reason == DeadLetter.EXHAUSTED
    assert item.attempt_count == 2


async def test_release_never_burns_an_attempt(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    for _ in range(6):  # more releases than maximum_attempts
        (lease,) = await stack.lease()
        attempt = await stack.release(lease)
        assert attempt.status == Status.RELEASED
        item = await stack.get_item(lease.item)
        assert item.state == State.QUEUED
        assert item.attempt_count == 0
        assert not item.HasField("not_before") or when(stack, item) <= 0
    lease = await stack.lease_and_start()
    await stack.complete(lease)
    assert (await stack.get_item(lease.item)).state == State.SUCCEEDED


async def test_checkpoint_requeues_a_continuation(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    first = await stack.lease_and_start()
    body = lane_pb2.Checkpoint(
        summary="parsed half", files_changed=["src/p.py"], next_action="finish the rest"
    )
    attempt = await stack.checkpoint(first, body)
    assert attempt.status == Status.CHECKPOINTED
    item = await stack.get_item(first.item)
    assert item.state == State.QUEUED
    assert item.attempt_count == 0
    (second,) = await stack.lease()
    assert second.item.item_id == first.item.item_id
    assert second.lease_id != first.lease_id
    assert second.item.continues_lease_id == first.lease_id
    assert second.item.checkpoint == body
    await stack.start(second)
    await stack.complete(second)
    item = await stack.get_item(first.item)
    assert item.state == State.SUCCEEDED
    assert [a.continues_lease_id for a in item.attempts if a.lease_id == second.lease_id] == [
        first.lease_id
    ]


async def test_checkpoint_with_blocked_reason_stops(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    await stack.checkpoint(
        lease, lane_pb2.Checkpoint(summary="need a key", blocked_reason="secret")
    )
    item = await stack.get_item(lease.item)
    assert item.state == State.STOPPED
    assert "secret" in item.stop_reason
    assert await stack.lease() == []


async def test_lease_reply_carries_inputs_only_to_the_holder(stack: Stack) -> None:
    await stack.create_lane(task("a", inputs={"branch": "x"}), inputs={"repo": "r"})
    (lease,) = await stack.lease()
    assert dict(lease.item.inputs) == {"repo": "r", "branch": "x"}
    assert lease.lease_token.startswith("wcl_")
    assert isinstance(lease, worker_pb2.Lease)


async def test_lease_names_every_out_of_range_field(stack: Stack) -> None:
    request = worker_pb2.LeaseRequest(
        coordinator_id=stack.cid,
        worker_id="w1",
        worker_class="machine",
        max_items=101,
        lease_seconds=4,
        wait_seconds=61,
    )
    err = await expect_error(stack.worker.workers.Lease(request), InvalidArgument)
    assert violated_fields(err) == {"max_items", "lease_seconds", "wait_seconds"}
    assert err.code.name == "INVALID_ARGUMENT"
