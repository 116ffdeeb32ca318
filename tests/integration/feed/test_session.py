"""The feed's session and hub (``domain/feed.py``) driven directly, frame by frame: a test
decides when the consumer pulls, so bursts, slow consumers and frame limits are observable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.harness import Stack, task
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

pytestmark = pytest.mark.usefixtures("backend")


def session(
    stack: Stack, options: FeedOptions, since: int | None = None
) -> tuple[FeedHubs, AsyncIterator[Frame]]:
    hubs = FeedHubs(stack.running.engine, options)
    credential = Credential.bearer(stack.running.engine, stack.admin_token)
    frames = FeedSession(hubs, stack.cid, credential, since).frames()
    return hubs, frames


async def next_frame(frames: AsyncIterator[Frame]) -> Frame:
    async with asyncio.timeout(60):
        return await anext(frames)


async def revision(stack: Stack) -> int:
    return (await stack.events())[-1].revision


async def hub_caught_up(hubs: FeedHubs, stack: Stack, at: int) -> None:
    """Wait until the hub has read the log up to ``at`` (without pulling any frame)."""
    hub = hubs._hubs[stack.cid]
    async with asyncio.timeout(60):
        while (hub.revision or 0) < at:  # noqa: ASYNC110 - watching the hub under test
            await asyncio.sleep(0.01)


async def test_a_burst_of_commits_becomes_one_delta(feed_stack: Stack) -> None:
    hubs, frames = session(feed_stack, FeedOptions(ping_seconds=60, poll_seconds=0.05))
    try:
        assert isinstance(await next_frame(frames), HelloFrame)
        snapshot = await next_frame(frames)
        assert isinstance(snapshot, SnapshotFrame)
        for n in range(8):  # eight commits, eight notifications, while nobody pulls
            await feed_stack.create_lane(task(f"b{n}"))
        current = await revision(feed_stack)
        await hub_caught_up(hubs, feed_stack, current)
        delta = await next_frame(frames)
        assert isinstance(delta, DeltaFrame)
        assert (delta.from_revision, delta.to_revision) == (snapshot.revision + 1, current)
        assert [e.revision for e in delta.events] == list(range(snapshot.revision + 1, current + 1))
    finally:
        await frames.aclose()  # type: ignore[attr-defined]
    assert len(hubs) == 0  # the last session gone, the hub and its subscription are gone


async def test_a_slow_consumer_gets_a_resync_and_a_fresh_snapshot(feed_stack: Stack) -> None:
    options = FeedOptions(ping_seconds=60, poll_seconds=0.05, max_queued_events=5)
    hubs, frames = session(feed_stack, options)
    try:
        await next_frame(frames)
        first = await next_frame(frames)
        assert isinstance(first, SnapshotFrame)
        for n in range(4):  # 3 events each: more than 5 queued
            await feed_stack.create_lane(task(f"s{n}"))
        current = await revision(feed_stack)
        await hub_caught_up(hubs, feed_stack, current)
        inbox = next(iter(hubs._hubs[feed_stack.cid].inboxes))
        assert inbox.queued_events <= options.max_queued_events  # bounded, never more
        resync = await next_frame(frames)
        assert resync == ResyncFrame("SLOW_CONSUMER", current)
        snapshot = await next_frame(frames)
        assert isinstance(snapshot, SnapshotFrame) and snapshot.revision == current
        # And live again from the snapshot, contiguous.
        await feed_stack.create_lane(task("after"))
        delta = await next_frame(frames)
        assert isinstance(delta, DeltaFrame) and delta.from_revision == current + 1
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


async def test_a_long_catch_up_is_split_into_bounded_deltas(feed_stack: Stack) -> None:
    for n in range(4):
        await feed_stack.create_lane(task(f"c{n}"), task(f"d{n}"))
    current = await revision(feed_stack)
    _hubs, frames = session(feed_stack, FeedOptions(ping_seconds=60, max_events_per_frame=3), 0)
    try:
        hello = await next_frame(frames)
        assert hello == HelloFrame(feed_stack.cid, current, 60, 0)
        seen: list[int] = []
        while not seen or seen[-1] < current:
            delta = await next_frame(frames)
            assert isinstance(delta, DeltaFrame)
            assert 1 <= len(delta.events) <= 3
            seen.extend(e.revision for e in delta.events)
        assert seen == list(range(1, current + 1))
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


async def test_a_since_below_the_retention_floor_gets_a_snapshot(feed_stack: Stack) -> None:
    await feed_stack.create_lane(task("a"))
    current = await revision(feed_stack)
    _hubs, frames = session(feed_stack, FeedOptions(retention_floor=current), since=1)
    try:
        assert isinstance(await next_frame(frames), HelloFrame)
        assert await next_frame(frames) == ResyncFrame("GAP", current)
        snapshot = await next_frame(frames)
        assert isinstance(snapshot, SnapshotFrame) and snapshot.revision == current
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


async def test_pings_come_even_while_deltas_keep_flowing(feed_stack: Stack) -> None:
    _hubs, frames = session(feed_stack, FeedOptions(ping_seconds=0.3, poll_seconds=0.05))
    kinds: list[str] = []
    try:
        await next_frame(frames)
        await next_frame(frames)

        async def writer() -> None:
            for n in range(12):
                await feed_stack.create_lane(task(f"p{n}"))
                await asyncio.sleep(0.05)

        writing = asyncio.create_task(writer())
        while not writing.done():
            frame = await next_frame(frames)
            kinds.append("ping" if isinstance(frame, PingFrame) else type(frame).__name__)
        await writing
        # A ping came between deltas: a busy feed still pings (and re-checks authority).
        assert "ping" in kinds[: len(kinds) - 1 - kinds[::-1].index("DeltaFrame")], kinds
    finally:
        await frames.aclose()  # type: ignore[attr-defined]
