"""The recovery loop against a fake coordinator: passes, isolation, leadership, outages."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import grpc.aio
import pytest
from prometheus_client import REGISTRY

from workcoord.api.v1 import recovery_pb2
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import Internal
from workcoord.recovery import DEFAULT_LEADERSHIP_SECONDS, Recoverer

from .fakes import SERVICE_KEY, FakeCoordinatorState

if TYPE_CHECKING:
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub


def _recoverer(
    maintenance: MaintenanceServiceAsyncStub,
    clock: ManualClock,
    replica_id: str = "replica-a",
    interval_seconds: float = 15.0,
) -> Recoverer:
    return Recoverer(
        maintenance,
        service_key=SERVICE_KEY,
        interval_seconds=interval_seconds,
        clock=clock,
        replica_id=replica_id,
        rpc_timeout_seconds=5.0,
    )


async def test_pass_visits_every_target_with_the_service_key(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    recoverer = _recoverer(maintenance, clock)

    assert await recoverer.tick()

    assert state.runs == [(c, f"Bearer {SERVICE_KEY}") for c in ("alpha", "beta", "gamma")]
    assert state.acquire_calls == ["replica-a"]
    status = recoverer.status()
    assert status.leader and status.leader_id == "replica-a"
    assert status.passes_total == 1
    assert status.last_pass_time.ToDatetime(tzinfo=clock.now().tzinfo) == clock.now()
    assert status.interval.seconds == 15
    assert status.HasField("leadership_expire_time")
    assert [c.coordinator_id for c in status.coordinators] == ["alpha", "beta", "gamma"]
    assert all(c.report.requeued == 2 and not c.error for c in status.coordinators)
    assert status.last_error == ""


async def test_one_failing_coordinator_does_not_stop_the_others(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    state.failures["beta"] = Internal("database on fire")
    recoverer = _recoverer(maintenance, clock)

    assert await recoverer.tick()

    assert [c for c, _ in state.runs] == ["alpha", "beta", "gamma"]
    passes = {c.coordinator_id: c for c in recoverer.status().coordinators}
    assert passes["alpha"].report.coordinator_id == "alpha" and not passes["alpha"].error
    assert passes["beta"].error == "INTERNAL: database on fire"
    assert not passes["beta"].HasField("report")
    assert passes["gamma"].report.coordinator_id == "gamma"
    assert "beta" in recoverer.last_error
    assert recoverer.passes_total == 1

    # The error clears once a pass runs clean again.
    del state.failures["beta"]
    assert await recoverer.tick()
    assert recoverer.last_error == ""
    assert recoverer.coordinator_passes()["beta"].error == ""


def _step_failures_counted(step: str) -> float:
    value = REGISTRY.get_sample_value("workcoord_recovery_step_failures_total", {"step": step})
    return value or 0.0


async def test_failed_steps_are_counted_in_the_status_and_the_metrics(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    down = recovery_pb2.StepFailure(step="close_tickets", failures=2, error="GitHub unreachable")
    state.step_failures["beta"] = [down]
    state.step_failures["gamma"] = [recovery_pb2.StepFailure(step="from-a-newer-release")]
    before = {step: _step_failures_counted(step) for step in ("close_tickets", "other")}
    recoverer = _recoverer(maintenance, clock)

    assert await recoverer.tick()
    clock.advance(15)
    assert await recoverer.tick()

    status = recoverer.status()
    counts = {c.step: c for c in status.step_failures}
    assert sorted(counts) == ["close_tickets", "from-a-newer-release"]
    closing = counts["close_tickets"]
    assert (closing.failed_passes, closing.last_error, closing.coordinator_id) == (
        2,
        "GitHub unreachable",
        "beta",
    )
    assert closing.last_failure_time.ToDatetime(tzinfo=clock.now().tzinfo) == clock.now()
    beta = next(c for c in status.coordinators if c.coordinator_id == "beta")
    assert list(beta.report.step_failures) == [down]
    assert _step_failures_counted("close_tickets") == before["close_tickets"] + 2
    assert _step_failures_counted("other") == before["other"] + 2  # labels stay bounded
    # A failed step is not a failed pass: the rest of it ran.
    assert recoverer.last_error == "" and recoverer.passes_total == 2


async def test_only_the_leader_runs_passes_and_a_follower_takes_over(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    first = _recoverer(maintenance, clock, "replica-a")
    second = _recoverer(maintenance, clock, "replica-b")

    assert await first.tick()
    assert not await second.tick()
    assert not await second.tick()
    assert {auth for _, auth in state.runs} == {f"Bearer {SERVICE_KEY}"}
    assert len(state.runs) == 3  # one pass, by the leader only
    assert second.status().leader is False
    assert second.status().leader_id == "replica-a"
    assert second.passes_total == 0

    # Clean shutdown of the leader hands over at the follower's next tick.
    await first.release_leadership()
    assert state.release_calls == ["replica-a"]
    assert not first.leader
    assert await second.tick()
    assert second.leader and second.passes_total == 1
    assert not await first.tick()

    # The leader dies without releasing: once its lease lapses the other replica leads.
    clock.advance(DEFAULT_LEADERSHIP_SECONDS - 1)
    assert not await first.tick()
    clock.advance(2)
    assert await first.tick()
    assert not await second.tick()
    assert first.status().leader_id == "replica-a"
    assert state.leadership["recovery"].term == 3


async def test_disabled_platform_runs_no_maintenance(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    state.platform_enabled = False
    recoverer = _recoverer(maintenance, clock)

    assert await recoverer.tick()

    assert state.list_calls == 1
    assert state.runs == []
    assert recoverer.status().coordinators == []


async def test_coordinator_down_is_recorded_not_raised(clock: ManualClock) -> None:
    # Bind a port, then free it: nothing listens there any more.
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    await server.stop(None)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        from workcoord.api.v1 import maintenance_pb2_grpc

        recoverer = Recoverer(
            maintenance_pb2_grpc.MaintenanceServiceStub(channel),
            service_key=SERVICE_KEY,
            clock=clock,
            rpc_timeout_seconds=2.0,
        )
        assert not await recoverer.tick()
        assert not recoverer.leader
        assert recoverer.last_error.startswith("acquire leadership: UNAVAILABLE")
        assert recoverer.passes_total == 0
        # And again next tick, still without raising.
        assert not await recoverer.tick()
        await recoverer.release_leadership()  # nothing held: a no-op


def _loop_name() -> str:
    task = asyncio.current_task()
    return task.get_name() if task is not None else ""


async def test_run_renews_every_third_of_the_lease_and_passes_every_interval(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    sleeps: dict[str, list[float]] = {"leadership": [], "passes": []}
    enough = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        sleeps["leadership" if "leadership" in _loop_name() else "passes"].append(seconds)
        if all(len(s) >= 3 for s in sleeps.values()):
            enough.set()
        await asyncio.sleep(0)

    recoverer = Recoverer(
        maintenance, service_key=SERVICE_KEY, interval_seconds=15, clock=clock, sleep=fake_sleep
    )
    task = asyncio.create_task(recoverer.run())
    await asyncio.wait_for(enough.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert sleeps["leadership"][:3] == [5.0, 5.0, 5.0]  # a third of the 15 s lease
    assert sleeps["passes"][:3] == [15.0, 15.0, 15.0]
    assert recoverer.passes_total >= 3
    assert len(state.acquire_calls) >= 3


async def test_a_standby_asks_again_the_moment_the_killed_leaders_lease_lapses(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    """The leader renews at t=0 and dies (no release): its lease lapses at t=15. The standby,
    started at t=2, asks every 5 s and then exactly when the lease lapses, and passes at once."""
    leader = _recoverer(maintenance, clock, "replica-a")
    assert await leader.tick()
    lapses = clock.now() + timedelta(seconds=DEFAULT_LEADERSHIP_SECONDS)
    clock.advance(2)
    standby = _recoverer(maintenance, clock, "replica-b")
    attempts: list[float] = []
    leading_since: list[datetime] = []
    passed = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        if "leadership" in _loop_name():
            if standby.leader and not leading_since:
                leading_since.append(clock.now())
            attempts.append(round(seconds, 3))
            clock.advance(seconds)
            await asyncio.sleep(0)
        else:  # the pass loop, after its first pass
            passed.set()
            await asyncio.Event().wait()

    standby._sleep = fake_sleep
    task = asyncio.create_task(standby.run())
    await asyncio.wait_for(passed.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert attempts[:3] == [5.0, 5.0, 3.05]
    assert standby.leader and standby.passes_total == 1
    assert state.leadership["recovery"].holder_id == "replica-b"
    assert timedelta(0) <= leading_since[0] - lapses <= timedelta(seconds=0.1)


async def test_a_long_pass_does_not_hold_the_renewals_up(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    state.run_gate = asyncio.Event()  # the first coordinator's pass hangs until set
    renewals = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        if len(state.acquire_calls) >= 4:
            renewals.set()
        await asyncio.sleep(0)

    recoverer = Recoverer(maintenance, service_key=SERVICE_KEY, clock=clock, sleep=fake_sleep)
    task = asyncio.create_task(recoverer.run())
    await asyncio.wait_for(renewals.wait(), timeout=10)
    assert [c for c, _ in state.runs] == ["alpha"]  # still inside the first pass
    assert recoverer.leader
    state.run_gate.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_run_survives_a_coordinator_that_rejects_the_key(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    state.principals.clear()
    ticks = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        ticks.set()
        await asyncio.sleep(0)

    recoverer = Recoverer(maintenance, service_key=SERVICE_KEY, clock=clock, sleep=fake_sleep)
    task = asyncio.create_task(recoverer.run())
    await asyncio.wait_for(ticks.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recoverer.last_error.startswith("acquire leadership: UNAUTHENTICATED")
    assert state.runs == []


def test_interval_and_lease_must_be_in_range(maintenance: MaintenanceServiceAsyncStub) -> None:
    with pytest.raises(ValueError, match="interval"):
        Recoverer(maintenance, service_key=SERVICE_KEY, interval_seconds=0)
    for lease in (2, 301):
        with pytest.raises(ValueError, match="leadership_seconds"):
            Recoverer(maintenance, service_key=SERVICE_KEY, leadership_seconds=lease)


class _CountingMailer:
    """A mailer whose rounds are counted (what a round sends is tests/integration/test_mail.py)."""

    interval_seconds = 30.0

    def __init__(self) -> None:
        self.rounds = 0
        self.enough = asyncio.Event()

    async def run_once(self) -> int:
        self.rounds += 1
        if self.rounds >= 2:
            self.enough.set()
        return 0


async def test_only_the_leader_runs_mail_rounds_on_their_own_clock(
    maintenance: MaintenanceServiceAsyncStub, state: FakeCoordinatorState, clock: ManualClock
) -> None:
    sleeps: list[float] = []
    asked = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        if "mail" in _loop_name():
            sleeps.append(seconds)
        elif len(state.acquire_calls) >= 4:
            asked.set()
        await asyncio.sleep(0)

    # Another replica leads: this one's mail loop waits, however often it asks.
    holder = _recoverer(maintenance, clock, "replica-a")
    assert await holder.tick()
    standby_mailer = _CountingMailer()
    standby = Recoverer(
        maintenance,
        service_key=SERVICE_KEY,
        clock=clock,
        sleep=fake_sleep,
        replica_id="replica-b",
        mailer=standby_mailer,  # type: ignore[arg-type]
    )
    task = asyncio.create_task(standby.run())
    await asyncio.wait_for(asked.wait(), timeout=10)
    assert standby_mailer.rounds == 0 and not standby.leader
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    await holder.release_leadership()
    leader_mailer = _CountingMailer()
    leader = Recoverer(
        maintenance,
        service_key=SERVICE_KEY,
        clock=clock,
        sleep=fake_sleep,
        replica_id="replica-b",
        mailer=leader_mailer,  # type: ignore[arg-type]
    )
    task = asyncio.create_task(leader.run())
    await asyncio.wait_for(leader_mailer.enough.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert leader.leader and sleeps[:2] == [30.0, 30.0]
