"""A feed reader for tests: consumes a ``Watch`` stream in the background and lets a test wait
for what it expects, with a deadline (never a bare sleep)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from workcoord.api.v1 import event_pb2, feed_pb2
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import WorkcoordError

PING_SECONDS = 0.2
POLL_SECONDS = 0.2
WAIT_SECONDS = 60.0  # a hang guard: waits return as soon as their frame arrives


class Watch:
    """The frames of one ``Watch`` call, collected as they arrive."""

    def __init__(self, client: WorkcoordClient, coordinator_id: str, since: int | None = None):
        request = feed_pb2.WatchRequest(coordinator_id=coordinator_id)
        if since is not None:
            request.since = since
        self.call: Any = client.feed.Watch(request)
        self.frames: list[feed_pb2.WatchResponse] = []
        self.error: BaseException | None = None
        self.ended = False
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for frame in self.call:
                self.frames.append(frame)
                self._changed.set()
        except WorkcoordError as exc:
            self.error = exc
        except asyncio.CancelledError:
            pass
        finally:
            self.ended = True
            self._changed.set()

    async def until(self, condition: Callable[[Watch], bool], within: float = WAIT_SECONDS) -> None:
        """Wait until ``condition(self)`` holds (fails after ``within`` seconds)."""
        async with asyncio.timeout(within):
            while not condition(self):
                if self.ended and not condition(self):
                    raise AssertionError(f"the feed ended ({self.error!r}) before the condition")
                self._changed.clear()
                await self._changed.wait()

    async def until_revision(self, revision: int, within: float = WAIT_SECONDS) -> None:
        """Wait until the feed delivered (by delta or snapshot) everything up to ``revision``."""
        await self.until(lambda w: w.delivered() >= revision, within)

    async def until_ended(self, within: float = WAIT_SECONDS) -> None:
        await self.until(lambda w: w.ended, within)

    def kinds(self) -> list[str]:
        return [str(f.WhichOneof("frame")) for f in self.frames]

    def of(self, kind: str) -> list[Any]:
        return [getattr(f, kind) for f in self.frames if f.WhichOneof("frame") == kind]

    def delivered(self) -> int:
        """The revision the client's state is at: last snapshot, then deltas on top."""
        revision = -1
        for frame in self.frames:
            kind = frame.WhichOneof("frame")
            if kind == "snapshot":
                revision = frame.snapshot.revision
            elif kind == "delta":
                revision = frame.delta.to_revision
            elif kind == "hello" and revision < 0:
                revision = frame.hello.resume_from
        return revision

    def events(self) -> list[event_pb2.Event]:
        """The events of every delta, in order (after checking each delta is contiguous with
        what came before: no gap, no duplicate)."""
        out: list[event_pb2.Event] = []
        at: int | None = None
        for frame in self.frames:
            kind = frame.WhichOneof("frame")
            if kind == "hello" and at is None:
                at = frame.hello.resume_from
            elif kind == "snapshot":
                at = frame.snapshot.revision
            elif kind == "delta":
                delta = frame.delta
                assert at is not None
                assert delta.from_revision == at + 1, (delta.from_revision, at)
                revisions = [e.revision for e in delta.events]
                assert revisions == list(range(delta.from_revision, delta.to_revision + 1))
                out.extend(delta.events)
                at = delta.to_revision
        return out

    async def close(self) -> None:
        self.call.cancel()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
