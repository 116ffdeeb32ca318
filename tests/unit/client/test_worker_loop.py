"""``Worker.run``'s loop against a scripted worker: outcomes, heartbeats, lost leases, retries,
drains and the request id of every Lease."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import Any

import pytest

from workcoord.api.v1 import lane_pb2
from workcoord.client.retries import Backoff, call_with_retries, is_transient
from workcoord.client.worker_loop import (
    Assignment,
    Checkpointed,
    Completed,
    Failed,
    HandlerResult,
    LoopEvent,
    LoopOptions,
    Released,
    WorkerLoop,
)
from workcoord.kit.errors import (
    Code,
    CoordinationDisabled,
    EtagMismatch,
    FieldViolation,
    IllegalTransition,
    InvalidArgument,
    LeaseLost,
    PermissionDenied,
    WorkcoordError,
    WorkerFenced,
    generic_error,
)

from .scripted_worker import LEASE_SECONDS, ScriptedClock, ScriptedWorker, lease

REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
IDENTITY = lane_pb2.RunIdentity(pid=7, agent_id="a", engine="e", account="bot")


def unavailable() -> WorkcoordError:
    return generic_error(Code.UNAVAILABLE, "connection refused")


class Run:
    """One loop over a scripted worker, with its events."""

    def __init__(self, **options: Any) -> None:
        self.worker = ScriptedWorker()
        self.clock = ScriptedClock()
        self.events: list[LoopEvent] = []
        self.stop = asyncio.Event()
        chosen: dict[str, Any] = {"lease_seconds": LEASE_SECONDS, "once": True, **options}
        self.options = LoopOptions(clock=self.clock.retry_clock(), **chosen)

    def loop(self, handler: Any) -> WorkerLoop:
        return WorkerLoop(
            self.worker, handler, self.options, stop=self.stop, on_event=self.events.append
        )

    def kinds(self) -> list[str]:
        return [event.kind for event in self.events]


def returning(result: HandlerResult) -> Any:
    async def handler(assignment: Assignment) -> HandlerResult:
        return result

    return handler


async def test_one_item_starts_with_the_identity_and_completes_with_the_evidence() -> None:
    run = Run(run_identity=IDENTITY)
    run.worker.script("lease", [lease()])
    report = await run.loop(returning(lane_pb2.Evidence(summary="built"))).run()

    assert run.worker.names() == ["lease", "start", "complete"]
    asked = run.worker.requests("lease")[0]
    assert asked["max_items"] == 1 and asked["lease_seconds"] == LEASE_SECONDS
    assert REQUEST_ID.fullmatch(asked["request_id"])
    assert run.worker.requests("start")[0]["run_identity"] == IDENTITY
    assert run.worker.requests("complete")[0]["evidence"].summary == "built"
    assert report.outcomes == {"completed": 1}
    assert run.kinds() == ["waiting", "leased", "started", "completed"]
    assert all("wcl_secret" not in repr(event) for event in run.events)


async def test_an_identity_may_depend_on_the_item() -> None:
    run = Run(run_identity=lambda item: lane_pb2.RunIdentity(branch=item.item_id))
    run.worker.script("lease", [lease(4)])
    await run.loop(returning(None)).run()
    assert run.worker.requests("start")[0]["run_identity"].branch == "it_4"
    assert run.worker.requests("complete")[0]["evidence"] == lane_pb2.Evidence()


@pytest.mark.parametrize(
    ("result", "call", "expected"),
    [
        (
            Failed("tests failed", error_type="EXIT_STATUS", retryable=True),
            "fail",
            {"message": "tests failed", "error_type": "EXIT_STATUS", "retryable": True},
        ),
        (
            Checkpointed(lane_pb2.Checkpoint(summary="half")),
            "checkpoint",
            {"checkpoint": lane_pb2.Checkpoint(summary="half")},
        ),
        (Released("not mine"), "release", {"reason": "not mine"}),
        (Completed(lane_pb2.Evidence(verdict=lane_pb2.Evidence.PASS)), "complete", {}),
    ],
)
async def test_each_outcome_is_written_once(
    result: HandlerResult, call: str, expected: dict[str, Any]
) -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    await run.loop(returning(result)).run()
    assert run.worker.names() == ["lease", call]
    written = run.worker.requests(call)[0]
    assert {key: written[key] for key in expected} == expected


async def test_a_raising_handler_fails_the_attempt_retryably() -> None:
    async def handler(assignment: Assignment) -> HandlerResult:
        raise RuntimeError("disk full")

    run = Run()
    run.worker.script("lease", [lease()])
    await run.loop(handler).run()
    failed = run.worker.requests("fail")[0]
    assert failed["message"] == "RuntimeError: disk full"
    assert failed["error_type"] == "RuntimeError"
    assert failed["retryable"] is True


async def test_heartbeats_go_out_every_third_of_the_lease_with_the_progress_note() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    beats = 0

    async def handler(assignment: Assignment) -> HandlerResult:
        nonlocal beats
        for note in ("10%", "60%"):
            assignment.progress = note
            run.worker.called.clear()
            run.clock.tick()
            while run.worker.names().count("heartbeat") == beats:
                await run.worker.called.wait()
                run.worker.called.clear()
            beats += 1
        return None

    await run.loop(handler).run()
    assert [r["progress"] for r in run.worker.requests("heartbeat")] == ["10%", "60%"]
    assert run.clock.pauses[:2] == [LEASE_SECONDS / 3] * 2


async def test_heartbeats_and_the_final_write_carry_the_usage_its_reader_gives() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    readings = iter(
        [
            None,  # nothing written yet: the first heartbeat carries none
            lane_pb2.Usage(input_tokens=10, cost_micros=100),
            None,  # unreadable this time: the last totals stand
        ]
    )
    final = lane_pb2.Usage(input_tokens=30, cost_micros=400, model="m")

    async def handler(assignment: Assignment) -> HandlerResult:
        assignment.usage_reader = lambda: next(readings, final)
        for beats in range(3):
            run.worker.called.clear()
            run.clock.tick()
            while run.worker.names().count("heartbeat") == beats:
                await run.worker.called.wait()
                run.worker.called.clear()
        return None

    await run.loop(handler).run()
    carried = [r.get("usage") for r in run.worker.requests("heartbeat")]
    first = lane_pb2.Usage(input_tokens=10, cost_micros=100)
    assert carried == [None, first, first]
    (completed,) = run.worker.requests("complete")
    assert completed["usage"] == final


async def test_lease_lost_on_a_heartbeat_cancels_the_handler_and_writes_nothing_more() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    run.worker.script("heartbeat", LeaseLost("superseded"))
    cancelled = asyncio.Event()

    async def handler(assignment: Assignment) -> HandlerResult:
        run.clock.tick()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            assert isinstance(assignment.lost, LeaseLost)
            cancelled.set()
            raise
        return None

    with pytest.raises(LeaseLost) as caught:
        await run.loop(handler).run()
    assert caught.value.cause == "superseded"
    assert cancelled.is_set()
    assert run.worker.names() == ["lease", "heartbeat"]  # one try: LEASE_LOST is never retried
    assert run.kinds()[-1] == "lease_lost"


async def test_a_heartbeat_refused_for_another_reason_is_a_loss_too() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    run.worker.script("heartbeat", PermissionDenied("key revoked"))

    async def handler(assignment: Assignment) -> HandlerResult:
        run.clock.tick()
        await asyncio.Event().wait()
        return None

    with pytest.raises(LeaseLost) as caught:
        await run.loop(handler).run()
    assert caught.value.cause == "PERMISSION_DENIED"
    assert run.worker.names() == ["lease", "heartbeat"]


async def test_an_unreachable_coordinator_loses_the_lease_by_this_machines_clock() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    run.worker.script("heartbeat", *[unavailable() for _ in range(100)])

    async def handler(assignment: Assignment) -> HandlerResult:
        run.clock.tick()
        await asyncio.Event().wait()
        return None

    with pytest.raises(LeaseLost) as caught:
        await run.loop(handler).run()
    assert caught.value.cause == "expired"
    beats = run.worker.names().count("heartbeat")
    assert 2 < beats < 100  # retried with backoff, then given up before the lease ran out
    assert run.clock.now <= 1000.0 + LEASE_SECONDS
    assert not {"complete", "fail", "release"} & set(run.worker.names())


async def test_a_transient_heartbeat_failure_is_retried_and_the_work_goes_on() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    run.worker.script("heartbeat", unavailable(), EtagMismatch(), None)
    done = asyncio.Event()

    async def handler(assignment: Assignment) -> HandlerResult:
        run.clock.tick()
        while run.worker.names().count("heartbeat") < 3:
            run.worker.called.clear()
            await run.worker.called.wait()
        done.set()
        return lane_pb2.Evidence(summary="ok")

    await run.loop(handler).run()
    assert done.is_set()
    assert run.worker.names()[-1] == "complete"
    assert run.kinds().count("retrying") == 2


async def test_lease_retries_transient_errors_with_the_same_request_id_and_backoff() -> None:
    run = Run()
    run.worker.script("lease", unavailable(), CoordinationDisabled(), [lease()])
    await run.loop(returning(None)).run()
    ids = {r["request_id"] for r in run.worker.requests("lease")}
    assert len(run.worker.requests("lease")) == 3 and len(ids) == 1
    assert run.clock.pauses[:2] == [1.0, 2.0]  # LEASE_BACKOFF, jitter at its midpoint


async def test_a_fenced_worker_waits_for_its_fence_to_lift() -> None:
    run = Run()
    run.worker.script("lease", WorkerFenced(), WorkerFenced(), [lease()])
    await run.loop(returning(None)).run()
    assert run.kinds().count("fenced") == 2
    assert run.worker.names()[-1] == "complete"


async def test_a_lease_refusal_that_will_not_change_ends_the_run() -> None:
    run = Run()
    run.worker.script("lease", PermissionDenied())
    with pytest.raises(PermissionDenied):
        await run.loop(returning(None)).run()
    assert run.worker.names() == ["lease"]


async def test_every_lease_call_has_its_own_request_id() -> None:
    run = Run(once=False)
    run.worker.script("lease", [], [lease(1)], [lease(2)])
    handled = 0

    async def handler(assignment: Assignment) -> HandlerResult:
        nonlocal handled
        handled += 1
        if handled == 2:
            run.stop.set()
        return None

    report = await run.loop(handler).run()
    ids = [r["request_id"] for r in run.worker.requests("lease")]
    assert report.outcomes == {"completed": 2}
    assert len(ids) == len(set(ids)) == 3


async def test_stopping_during_a_long_poll_asks_again_with_the_same_id_and_gives_back() -> None:
    run = Run()

    async def stop_when_polling() -> None:
        await run.worker.called.wait()
        run.worker.script("lease", [lease(9)])  # the server did grant it: the reply was lost
        run.stop.set()

    stopper = asyncio.create_task(stop_when_polling())
    report = await run.loop(returning(None)).run()
    await stopper
    polls = run.worker.requests("lease")
    assert len(polls) == 2
    assert polls[1]["request_id"] == polls[0]["request_id"]
    assert polls[1]["wait_seconds"] == 0
    assert run.worker.requests("release")[0]["lease"].lease_id == "ls_9"
    assert report.handled == 0


async def test_a_drain_lets_the_handler_finish_in_time() -> None:
    run = Run(drain_seconds=30.0)
    run.worker.script("lease", [lease()])

    async def handler(assignment: Assignment) -> HandlerResult:
        run.stop.set()
        await assignment.stopping.wait()
        return Checkpointed(lane_pb2.Checkpoint(summary="stopping here"))

    await run.loop(handler).run()
    assert run.worker.names() == ["lease", "checkpoint"]


async def test_a_drain_that_runs_out_cancels_the_handler_and_releases() -> None:
    run = Run(drain_seconds=0.01)
    run.worker.script("lease", [lease()])

    async def handler(assignment: Assignment) -> HandlerResult:
        run.stop.set()
        await asyncio.Event().wait()
        return None

    report = await run.loop(handler).run()
    assert run.worker.names() == ["lease", "release"]
    assert report.outcomes == {"released": 1}
    assert "draining" in run.kinds()


async def test_an_outcome_the_server_refuses_becomes_a_failure_for_a_human() -> None:
    run = Run()
    run.worker.script("lease", [lease(kind=lane_pb2.Item.REVIEW)])
    run.worker.script(
        "complete", InvalidArgument([FieldViolation("evidence.verdict", "is required")])
    )
    report = await run.loop(returning(None)).run()
    failed = run.worker.requests("fail")[0]
    assert failed["retryable"] is False
    assert failed["error_type"] == "INVALID_ARGUMENT"
    assert "evidence.verdict" in failed["message"]
    assert report.outcomes == {"refused": 1}


async def test_complete_before_start_is_refused_then_failed() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    run.worker.script("complete", IllegalTransition("start it first"))
    await run.loop(returning(None)).run()
    assert run.worker.names() == ["lease", "complete", "fail"]


async def test_a_retried_final_write_answered_lease_lost_is_uncertain_not_fatal() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    run.worker.script(
        "complete", generic_error(Code.DEADLINE_EXCEEDED, "slow"), LeaseLost("terminal")
    )
    report = await run.loop(returning(None)).run()
    assert report.outcomes == {"uncertain": 1}


async def test_a_final_write_lost_at_once_raises() -> None:
    run = Run()
    run.worker.script("lease", [lease()])
    run.worker.script("complete", LeaseLost("expired"))
    with pytest.raises(LeaseLost):
        await run.loop(returning(None)).run()


# --------------------------------------------------------------------------- retries


def test_lease_lost_is_never_transient_and_unavailable_is() -> None:
    assert not is_transient(LeaseLost("expired"))
    assert not is_transient(generic_error(Code.ABORTED, "x", reason="LEASE_LOST"))
    assert is_transient(generic_error(Code.ABORTED, "contention"))
    assert is_transient(unavailable())
    assert is_transient(CoordinationDisabled())
    assert not is_transient(InvalidArgument([]))
    assert not is_transient(WorkerFenced())


def test_backoff_grows_caps_and_jitters_within_bounds() -> None:
    backoff = Backoff(initial=0.5, multiplier=2.0, maximum=4.0, jitter=0.25)
    low = [backoff.delay(n, lambda a, b: a) for n in range(6)]
    high = [backoff.delay(n, lambda a, b: b) for n in range(6)]
    assert low == [0.375, 0.75, 1.5, 3.0, 3.0, 3.0]
    assert high == [0.625, 1.25, 2.5, 5.0, 5.0, 5.0]
    assert backoff.delay(10_000, lambda a, b: a) == 3.0


async def test_call_with_retries_gives_up_at_the_deadline() -> None:
    clock = ScriptedClock()
    calls = 0

    async def call() -> None:
        nonlocal calls
        calls += 1
        raise unavailable()

    with pytest.raises(WorkcoordError) as caught:
        await call_with_retries(
            call,
            backoff=Backoff(initial=1.0, multiplier=1.0, jitter=0.0),
            until=clock.now + 5.5,
            clock=clock.retry_clock(),
        )
    assert caught.value.code == Code.UNAVAILABLE
    assert calls == 6 and clock.pauses == [1.0] * 5


def test_options_are_a_value() -> None:
    options = LoopOptions()
    assert options.heartbeat_seconds == 10.0
    assert replace(options, lease_seconds=60).heartbeat_seconds == 20.0
