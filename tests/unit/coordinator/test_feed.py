"""The Watch feed on the in-memory store and the in-process bus: hello, then a snapshot or the
deltas since a revision; live deltas, bursts merged into one delta (split at the frame size),
a resync with a fresh snapshot for a gap or a consumer that fell behind, pings on a quiet feed,
and the caller's authority re-checked on the way.

Pings and the hub's backstop poll run on real time; each test sets them far out unless it is
about them, so every frame a test sees comes from a write it made. No test sleeps for
correctness: frames are awaited (with a generous deadline), and the hub is awaited until it has
read up to a revision.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from workcoord.coordinator.domain.auth import Capability, Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.feed import (
    Credential,
    DeltaFrame,
    FeedHubs,
    FeedOptions,
    FeedSession,
    Frame,
    HelloFrame,
    PingFrame,
    ResyncFrame,
    SnapshotFrame,
)
from workcoord.coordinator.domain.inputs import (
    CreateLaneInput,
    GetViewInput,
    UpdateCoordinatorInput,
)
from workcoord.coordinator.domain.model import Event
from workcoord.coordinator.domain.specs import CoordinatorSpec
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.errors import CoordinationDisabled, PermissionDenied, Unauthenticated

from .harness import ADMIN, World, lane_spec, task, work_key

WAIT_SECONDS = 30.0  # generous: only a broken feed waits this long
FAR = 3600.0  # a ping or poll interval no test reaches

_F = TypeVar("_F", bound=Frame)


@dataclass
class Caller:
    """The credential of a feed: authenticates as ``principal`` (or raises ``refusal``) from
    whatever they are at the moment, and counts the authentications."""

    principal: Principal
    refusal: Exception | None = None
    authentications: int = 0

    async def authenticate(self) -> Principal:
        self.authentications += 1
        if self.refusal is not None:
            raise self.refusal
        return self.principal

    def credential(self, key: str = "bearer:caller") -> Credential:
        return Credential(key, self.authenticate)


class Watch:
    """One session's frames, read one at a time."""

    def __init__(self, session: FeedSession) -> None:
        frames = session.frames()
        assert isinstance(frames, AsyncGenerator)  # closed with the watch, as a transport does
        self._frames: AsyncGenerator[Frame, None] = frames

    async def next(self) -> Frame:
        async with asyncio.timeout(WAIT_SECONDS):
            return await self._frames.__anext__()

    async def expect(self, kind: type[_F]) -> _F:
        frame = await self.next()
        assert isinstance(frame, kind), frame
        return frame

    async def close(self) -> None:
        await self._frames.aclose()


@asynccontextmanager
async def feed_hubs(engine: Engine, **options: Any) -> AsyncIterator[FeedHubs]:
    """Hubs with ``options`` (pings and the backstop poll far out unless given)."""
    hubs = FeedHubs(engine, FeedOptions(**{"ping_seconds": FAR, "poll_seconds": FAR, **options}))
    try:
        yield hubs
    finally:
        await hubs.close()


@asynccontextmanager
async def watching(
    hubs: FeedHubs, world: World, caller: Caller, since: int | None = None
) -> AsyncIterator[Watch]:
    watch = Watch(FeedSession(hubs, world.cid, caller.credential(), since))
    try:
        yield watch
    finally:
        await watch.close()


@pytest.fixture
def caller(world: World) -> Caller:
    return Caller(world.worker)


async def revision(store: MemoryStore, world: World) -> int:
    async with store.read() as reader:
        coordinator = await reader.get_coordinator(world.cid)
    assert coordinator is not None
    return coordinator.revision


async def events_after(store: MemoryStore, world: World, after: int) -> list[Event]:
    async with store.read() as reader:
        return await reader.list_events(world.cid, after, 10_000, "", "")


async def write(engine: Engine, world: World, items: int = 1) -> None:
    """One command that commits (a lane of ``items`` tasks): one notification, several events."""
    keys = [f"k{n}" for n in range(items)]
    await engine.lanes.create_lane(
        world.worker,
        CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(*(task(k) for k in keys))),
    )


async def hub_has_read(hubs: FeedHubs, world: World, upto: int) -> None:
    """Wait until the coordinator's hub has read the log up to revision ``upto``."""
    hub = await hubs.acquire(world.cid)
    try:
        async with asyncio.timeout(WAIT_SECONDS):
            # The hub signals nothing when it has read; its revision is checked each turn.
            while hub.revision is None or hub.revision < upto:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
    finally:
        await hubs.release(hub)


async def opened(watch: Watch, hubs: FeedHubs, world: World) -> int:
    """Read a new watcher's hello and snapshot; once its hub reads live, the snapshot's
    revision (every later commit then reaches the watcher as a delta)."""
    await watch.expect(HelloFrame)
    start = (await watch.expect(SnapshotFrame)).revision
    await hub_has_read(hubs, world, start)
    return start


def revisions(frame: DeltaFrame) -> list[int]:
    return [e.revision for e in frame.events]


# --------------------------------------------------------------------------- opening


async def test_a_new_watcher_gets_hello_and_a_snapshot(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    await write(engine, world)
    current = await revision(store, world)
    async with feed_hubs(engine) as hubs, watching(hubs, world, caller) as watch:
        hello = await watch.expect(HelloFrame)
        assert hello == HelloFrame(world.cid, current, int(FAR), current)
        snapshot = await watch.expect(SnapshotFrame)
        assert snapshot.revision == current
        assert snapshot.view == await engine.reads.view(
            ADMIN, GetViewInput(coordinator_id=world.cid)
        )


async def test_a_watcher_resuming_gets_the_deltas_it_missed_and_no_snapshot(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    since = await revision(store, world)
    await write(engine, world, items=2)
    current = await revision(store, world)
    async with feed_hubs(engine) as hubs, watching(hubs, world, caller, since) as watch:
        assert await watch.expect(HelloFrame) == HelloFrame(world.cid, current, int(FAR), since)
        delta = await watch.expect(DeltaFrame)
        assert (delta.from_revision, delta.to_revision) == (since + 1, current)
        assert revisions(delta) == list(range(since + 1, current + 1))
        # Then it is live: the next write is the next delta.
        await hub_has_read(hubs, world, current)
        await write(engine, world)
        live = await watch.expect(DeltaFrame)
        assert live.from_revision == current + 1


async def test_a_watcher_already_current_gets_hello_only_then_live_deltas(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    current = await revision(store, world)
    async with feed_hubs(engine) as hubs, watching(hubs, world, caller, current) as watch:
        assert await watch.expect(HelloFrame) == HelloFrame(world.cid, current, int(FAR), current)
        await hub_has_read(hubs, world, current)
        await write(engine, world)
        delta = await watch.expect(DeltaFrame)
        assert revisions(delta) == [e.revision for e in await events_after(store, world, current)]


@pytest.mark.parametrize("where", ["ahead of the log", "before the retention floor"])
async def test_a_since_the_log_cannot_continue_from_gets_a_resync_and_a_snapshot(
    engine: Engine, store: MemoryStore, world: World, caller: Caller, where: str
) -> None:
    await write(engine, world)
    current = await revision(store, world)
    since, floor = (current + 5, 0) if where == "ahead of the log" else (1, current)
    async with (
        feed_hubs(engine, retention_floor=floor) as hubs,
        watching(hubs, world, caller, since) as watch,
    ):
        assert await watch.expect(HelloFrame) == HelloFrame(world.cid, current, int(FAR), current)
        assert await watch.expect(ResyncFrame) == ResyncFrame("GAP", current)
        assert (await watch.expect(SnapshotFrame)).revision == current


# --------------------------------------------------------------------------- live


async def test_each_commit_reaches_the_watcher_as_one_gap_free_delta(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    async with feed_hubs(engine) as hubs, watching(hubs, world, caller) as watch:
        delivered = await opened(watch, hubs, world)
        for _ in range(3):
            await write(engine, world, items=2)
            delta = await watch.expect(DeltaFrame)
            assert delta.from_revision == delivered + 1
            assert revisions(delta) == list(range(delta.from_revision, delta.to_revision + 1))
            assert delta.to_revision == await revision(store, world)
            delivered = delta.to_revision


async def test_a_burst_waiting_for_the_consumer_is_merged_into_one_delta(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    async with feed_hubs(engine) as hubs, watching(hubs, world, caller) as watch:
        start = await opened(watch, hubs, world)
        for _ in range(3):  # three commits, each read by the hub on its own, while nobody pulls
            await write(engine, world)
            await hub_has_read(hubs, world, await revision(store, world))
        current = await revision(store, world)
        delta = await watch.expect(DeltaFrame)
        assert (delta.from_revision, delta.to_revision) == (start + 1, current)
        assert revisions(delta) == list(range(start + 1, current + 1))


async def test_a_burst_longer_than_a_frame_is_split_into_consecutive_deltas(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    async with (
        feed_hubs(engine, max_events_per_frame=2) as hubs,
        watching(hubs, world, caller) as watch,
    ):
        start = await opened(watch, hubs, world)
        await write(engine, world, items=3)
        current = await revision(store, world)
        assert current - start >= 5  # the lane and its three items, at the least
        seen: list[int] = []
        while not seen or seen[-1] < current:
            delta = await watch.expect(DeltaFrame)
            assert 1 <= len(delta.events) <= 2
            seen.extend(revisions(delta))
        assert seen == list(range(start + 1, current + 1))


async def test_a_consumer_that_falls_behind_is_resynced_with_a_fresh_snapshot(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    async with (
        feed_hubs(engine, max_queued_events=3) as hubs,
        watching(hubs, world, caller) as watch,
    ):
        start = await opened(watch, hubs, world)
        await write(engine, world, items=3)  # more events than the inbox holds
        current = await revision(store, world)
        assert current - start > 3
        await hub_has_read(hubs, world, current)
        assert await watch.expect(ResyncFrame) == ResyncFrame("SLOW_CONSUMER", current)
        snapshot = await watch.expect(SnapshotFrame)
        assert snapshot.revision == current
        assert snapshot.view == await engine.reads.view(
            ADMIN, GetViewInput(coordinator_id=world.cid)
        )
        # And it goes on from the snapshot.
        await write(engine, world)
        assert (await watch.expect(DeltaFrame)).from_revision == current + 1


async def test_a_quiet_session_pings_with_the_current_revision(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    current = await revision(store, world)
    async with (
        feed_hubs(engine, ping_seconds=0.05) as hubs,
        watching(hubs, world, caller, current) as watch,
    ):
        assert (await watch.expect(HelloFrame)).ping_seconds == 1  # whole seconds, at least 1
        assert await watch.expect(PingFrame) == PingFrame(current)


# --------------------------------------------------------------------------- authority


async def test_authority_is_checked_when_the_feed_opens(
    engine: Engine, world: World, caller: Caller
) -> None:
    caller.principal = work_key({world.cid}, {Capability.LEASE}, world.org_slug)  # no READ
    async with feed_hubs(engine) as hubs, watching(hubs, world, caller) as watch:
        with pytest.raises(PermissionDenied):
            await watch.next()


async def _lose_read(engine: Engine, world: World, caller: Caller) -> None:
    caller.principal = work_key({world.cid}, {Capability.LEASE}, world.org_slug)
    await write(engine, world)


async def _switch_off(engine: Engine, world: World, caller: Caller) -> None:
    await engine.coordinators.update_coordinator(
        ADMIN,
        UpdateCoordinatorInput(
            coordinator_id=world.cid, spec=CoordinatorSpec(scope=None, enabled=False)
        ),
    )


@pytest.mark.parametrize(
    ("change", "error"),
    [(_lose_read, PermissionDenied), (_switch_off, CoordinationDisabled)],
    ids=["the caller lost READ", "the coordinator was switched off"],
)
async def test_the_next_delta_ends_the_feed_once_the_caller_may_no_longer_read_it(
    engine: Engine,
    world: World,
    caller: Caller,
    change: Callable[[Engine, World, Caller], Awaitable[None]],
    error: type[Exception],
) -> None:
    async with feed_hubs(engine) as hubs, watching(hubs, world, caller) as watch:
        await opened(watch, hubs, world)
        await change(engine, world, caller)
        with pytest.raises(error):
            await watch.next()


async def test_a_revoked_credential_ends_the_feed_at_the_next_ping(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    current = await revision(store, world)
    async with (
        feed_hubs(engine, ping_seconds=0.05) as hubs,
        watching(hubs, world, caller, current) as watch,
    ):
        await watch.expect(HelloFrame)
        await watch.expect(PingFrame)
        caller.refusal = Unauthenticated("the credential was revoked")
        with pytest.raises(Unauthenticated):
            await watch.next()


async def test_watchers_sharing_a_credential_share_one_authentication_per_read(
    engine: Engine, store: MemoryStore, world: World, caller: Caller
) -> None:
    async with feed_hubs(engine) as hubs:
        async with watching(hubs, world, caller) as first, watching(hubs, world, caller) as second:
            for watch in (first, second):
                await opened(watch, hubs, world)
            assert len(hubs) == 1  # one hub reads for both
            before = caller.authentications
            await write(engine, world)
            await hub_has_read(hubs, world, await revision(store, world))
            first_delta = await first.expect(DeltaFrame)
            assert await second.expect(DeltaFrame) == first_delta
            assert caller.authentications == before + 1
        assert len(hubs) == 0  # the last watcher gone, its hub stopped
