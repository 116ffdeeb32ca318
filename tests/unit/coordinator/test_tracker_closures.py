"""Ticket closures through tracker connections (memory store, a recording tracker): each ticket
goes through its own connection, a rate limit pushes the retry past the tracker's wait and
stops calls to that connection for the pass, and health is recorded."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from workcoord.coordinator.domain.auth import RECOVERY
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    CreateLaneInput,
    CreateTrackerConnectionInput,
    UpdateTrackerConnectionInput,
)
from workcoord.coordinator.domain.model import PendingAction, PendingActionState
from workcoord.coordinator.domain.tickets import (
    TicketTracker,
    TrackerConnection,
    TrackerError,
    TrackerRateLimited,
)
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.bus import InProcessBus
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import InvalidArgument, PermissionDenied

from .harness import World, lane_spec, make_world, task


class Recording:
    """A tracker that records (credential, key) of each close and answers as told."""

    name = "gitlab"

    def __init__(
        self, credential: str, log: list[tuple[str, str]], answers: list[Exception]
    ) -> None:
        self.credential, self.log, self.answers = credential, log, answers

    async def get_state(self, key: str) -> str:
        return "OPEN"

    async def get_states(self, keys: Sequence[str]) -> dict[str, str]:
        return {k: "OPEN" for k in keys}

    async def close(self, key: str) -> None:
        self.log.append((self.credential, key))
        if self.answers:
            raise self.answers.pop(0)

    async def aclose(self) -> None:
        pass


@pytest.fixture
def calls() -> list[tuple[str, str]]:
    return []


@pytest.fixture
def answers() -> list[Exception]:
    return []


@pytest.fixture
def engine(
    store: MemoryStore,
    bus: InProcessBus,
    clock: ManualClock,
    calls: list[tuple[str, str]],
    answers: list[Exception],
) -> Engine:
    def factory(connection: TrackerConnection, credential: str) -> TicketTracker:
        return Recording(credential, calls, answers)

    return Engine(store, bus, clock, uniform=lambda: 0.5, tracker_factory=factory)


async def connect(
    engine: Engine, world: World, credential: str, *projects: str
) -> TrackerConnection:
    return await engine.tracker_connections.create(
        world.org_admin,
        CreateTrackerConnectionInput(
            coordinator_id=world.cid, tracker="gitlab", credential=credential, projects=projects
        ),
    )


async def owe_closures(
    engine: Engine, store: MemoryStore, clock: ManualClock, world: World, *keys: str
) -> None:
    detail = await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(task("a")))
    )
    actions = [
        PendingAction(
            action_id=f"pa_{world.cid}_{n}",
            coordinator_id=world.cid,
            lane_id=detail.lane.lane_id,
            kind="CLOSE_TICKET",
            state=PendingActionState.OPEN,
            owner="ops@acme.test",
            create_time=clock.now(),
            update_time=clock.now(),
            ticket_tracker="gitlab",
            ticket_key=key,
        )
        for n, key in enumerate(keys)
    ]
    async with store.write(world.cid) as tx:
        await tx.insert_pending_actions(actions)


async def test_each_ticket_goes_through_the_connection_of_its_project(
    engine: Engine, store: MemoryStore, clock: ManualClock, calls: list[tuple[str, str]]
) -> None:
    acme, beta = await make_world(engine), await make_world(engine)
    await connect(engine, acme, "glpat-acme", "acme/web")
    await connect(engine, beta, "glpat-beta", "beta/web")
    await owe_closures(engine, store, clock, acme, "acme/web#1", "other/web#2")
    await owe_closures(engine, store, clock, beta, "beta/web#3")
    run = await engine.follow_ups.run_pending_actions(RECOVERY, acme.cid)
    assert (run.attempted, run.succeeded, run.failed) == (2, 1, 1)
    assert "no tracker is configured for 'gitlab'" in run.error  # no connection, no fallback
    await engine.follow_ups.run_pending_actions(RECOVERY, beta.cid)
    assert calls == [("glpat-acme", "acme/web#1"), ("glpat-beta", "beta/web#3")]


async def test_a_rate_limit_defers_the_action_and_stops_the_pass_calling_that_connection(
    engine: Engine,
    world: World,
    store: MemoryStore,
    clock: ManualClock,
    calls: list[tuple[str, str]],
    answers: list[Exception],
) -> None:
    connection = await connect(engine, world, "glpat-acme", "acme/web")
    await owe_closures(engine, store, clock, world, "acme/web#1", "acme/web#2")
    answers.append(TrackerRateLimited("GitLab answered 429: 429 Too Many Requests", 900.0))
    run = await engine.follow_ups.run_pending_actions(RECOVERY, world.cid)
    assert (run.attempted, run.failed) == (2, 2)
    assert calls == [("glpat-acme", "acme/web#1")]  # the second was not sent
    async with store.read() as reader:
        actions = await reader.list_pending_actions(world.cid, None, "", 10)
        health = await reader.get_tracker_connection(connection.tracker_id)
    for action in actions:
        assert action.next_attempt_time == clock.now() + timedelta(seconds=900)
        assert connection.tracker_id in action.last_error
        assert "glpat-acme" not in action.last_error
    assert health is not None and health.last_error_time == clock.now()
    assert health.last_success_time is None

    clock.advance(timedelta(seconds=899))
    assert (await engine.follow_ups.run_pending_actions(RECOVERY, world.cid)).attempted == 0
    clock.advance(timedelta(seconds=1))
    run = await engine.follow_ups.run_pending_actions(RECOVERY, world.cid)
    assert (run.attempted, run.succeeded) == (2, 2)
    async with store.read() as reader:
        health = await reader.get_tracker_connection(connection.tracker_id)
    assert health is not None and health.last_success_time == clock.now()


async def test_rotating_clears_the_error_and_only_admins_manage_connections(
    engine: Engine, world: World, answers: list[Exception], store: MemoryStore, clock: ManualClock
) -> None:
    connection = await connect(engine, world, "glpat-old", "acme/web")
    await owe_closures(engine, store, clock, world, "acme/web#1")
    answers.append(TrackerError("GitLab answered 401: 401 Unauthorized"))
    await engine.follow_ups.run_pending_actions(RECOVERY, world.cid)
    rotated = await engine.tracker_connections.update(
        world.org_admin,
        UpdateTrackerConnectionInput(
            coordinator_id=world.cid,
            tracker_id=connection.tracker_id,
            update_mask=("credential",),
            credential="glpat-new",
        ),
    )
    assert rotated.last_error == "" and rotated.last_error_time is None
    assert rotated.credential_fingerprint != connection.credential_fingerprint
    assert "glpat-new" not in rotated.credential_ciphertext
    with pytest.raises(PermissionDenied, match="work key can never configure"):
        await connect(
            engine, World(world.org_slug, world.coordinator, world.worker, world.worker), "x", "a/b"
        )
    with pytest.raises(InvalidArgument, match="update_mask"):
        await engine.tracker_connections.update(
            world.org_admin,
            UpdateTrackerConnectionInput(
                coordinator_id=world.cid, tracker_id=connection.tracker_id, update_mask=("tracker",)
            ),
        )
