"""The live feed of one work coordinator: hello, then a snapshot or the deltas since a revision,
pings, and a resync whenever continuity cannot be guaranteed (the Kubernetes list/watch model).

The event log is the truth. Bus notifications only say "look now"; a slow poll backstops a lost
notification or a Redis outage, and a reader that sees a revision gap fills it from the log.

One :class:`FeedHub` per work coordinator and process reads the log once per wake-up and fans
the batch out to the bounded inboxes of its :class:`FeedSession` s, so N subscribers cost one
read per commit, not N. Each session turns batches into frames for one caller and re-checks the
caller's authority at connect, on every catch-up and at every ping. A session whose consumer
falls behind (its inbox overflows because the transport stopped pulling frames) gets a resync
and a fresh snapshot instead of unbounded buffering.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from workcoord.kit.secrets import hash_secret

from . import rules
from .auth import Access, Principal, authorize
from .engine import MAX_PAGE_SIZE, Engine
from .inputs import GetViewInput, ListEventsInput
from .model import Coordinator, Event
from .results import CoordinatorView, EventPage

__all__ = [
    "Credential",
    "DeltaFrame",
    "FeedHub",
    "FeedHubs",
    "FeedOptions",
    "FeedSession",
    "Frame",
    "HelloFrame",
    "PingFrame",
    "ResyncFrame",
    "SnapshotFrame",
]

_log = logging.getLogger("workcoord.coordinator.feed")

RESYNC_GAP = "GAP"
RESYNC_SLOW_CONSUMER = "SLOW_CONSUMER"


@dataclass(frozen=True)
class FeedOptions:
    """Tuning of the feed (defaults are the production values)."""

    ping_seconds: float = 15.0
    """Seconds between pings (and authority re-checks) on a quiet feed."""
    poll_seconds: float = 1.0
    """The backstop: the hub reads the log this often even without a notification."""
    max_events_per_frame: int = MAX_PAGE_SIZE
    """A delta carries at most this many events; a longer burst becomes several deltas."""
    max_queued_events: int = 10_000
    """Events a session may have waiting for its consumer before it is resynced instead."""
    retention_floor: int = 0
    """A ``since`` below this revision gets a snapshot (the events before it may be gone)."""
    snapshot_lanes: int = MAX_PAGE_SIZE
    """Lanes in a snapshot (newest first; the view's next_page_token pages the rest)."""
    hub_read_limit: int = 2_000
    """Events read from the log per hub read (a longer backlog takes several reads)."""


# --------------------------------------------------------------------------- credentials


@dataclass(frozen=True)
class Credential:
    """How to (re-)authenticate the caller of one feed, from current state, at any time.

    ``key`` names the credential without revealing it (a hash): sessions sharing a credential
    share one authentication per hub read.
    """

    key: str
    authenticate: Callable[[], Awaitable[Principal]]

    @classmethod
    def bearer(cls, engine: Engine, secret: str | None) -> Credential:
        """A bearer secret (API token, work key, service key); None authenticates as nobody."""
        key = f"bearer:{hash_secret(secret)}" if secret else ""
        return cls(key, functools.partial(engine.credentials.authenticate, secret))


# --------------------------------------------------------------------------- frames


@dataclass(frozen=True)
class HelloFrame:
    coordinator_id: str
    revision: int
    ping_seconds: int
    resume_from: int


@dataclass(frozen=True)
class SnapshotFrame:
    revision: int
    view: CoordinatorView


@dataclass(frozen=True)
class DeltaFrame:
    from_revision: int
    to_revision: int
    events: tuple[Event, ...]


@dataclass(frozen=True)
class PingFrame:
    revision: int


@dataclass(frozen=True)
class ResyncFrame:
    reason: str
    revision: int


Frame = HelloFrame | SnapshotFrame | DeltaFrame | PingFrame | ResyncFrame


# --------------------------------------------------------------------------- the hub


@dataclass(frozen=True)
class _Batch:
    """Events read in one transaction, with the coordinator as that transaction saw it."""

    generation: int
    coordinator: Coordinator
    platform_enabled: bool
    events: tuple[Event, ...]


@dataclass(eq=False)
class _Inbox:
    """A session's bounded queue of batches; overflowing drops them all and flags a resync."""

    limit: int
    batches: deque[_Batch] = field(default_factory=deque)
    queued_events: int = 0
    overflowed: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def put(self, batch: _Batch) -> None:
        if self.overflowed:
            return  # a snapshot replaces everything queued anyway
        if self.queued_events + len(batch.events) > self.limit:
            self.batches.clear()
            self.queued_events = 0
            self.overflowed = True
        else:
            self.batches.append(batch)
            self.queued_events += len(batch.events)
        self.ready.set()

    async def get(self, timeout: float) -> _Batch | None:  # noqa: ASYNC109 - "nothing yet" is normal
        """The next batch, or None when ``timeout`` passes first or the inbox overflowed."""
        if not self.batches and not self.overflowed:
            self.ready.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(timeout, 0.0)):
                    await self.ready.wait()
        return self.get_nowait()

    def get_nowait(self) -> _Batch | None:
        """The next batch if one is waiting (and the inbox did not overflow)."""
        if self.overflowed or not self.batches:
            return None
        batch = self.batches.popleft()
        self.queued_events -= len(batch.events)
        return batch

    def take_overflow(self) -> bool:
        """Whether the inbox overflowed since the last call (and reset it)."""
        if not self.overflowed:
            return False
        self.overflowed = False
        self.batches.clear()
        self.queued_events = 0
        return True


class FeedHub:
    """Reads one work coordinator's log for every session of this process."""

    def __init__(self, engine: Engine, coordinator_id: str, options: FeedOptions) -> None:
        self.engine = engine
        self.coordinator_id = coordinator_id
        self.options = options
        self.revision: int | None = None
        self.switched_on = True
        self.generation = 0
        self.inboxes: set[_Inbox] = set()
        self.users = 0
        self._subscribed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._principals: dict[str, asyncio.Future[Principal]] = {}
        self._principals_generation = -1

    async def start(self) -> None:
        """Subscribe to the bus (returns once subscribed) and start reading."""
        self._task = asyncio.create_task(
            self._run(), name=f"workcoord-feed-hub-{self.coordinator_id}"
        )
        waiter = asyncio.create_task(self._subscribed.wait())
        await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if self._task.done():
            self._task.result()  # raises what failed

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def attach(self) -> _Inbox:
        inbox = _Inbox(self.options.max_queued_events)
        self.inboxes.add(inbox)
        return inbox

    def detach(self, inbox: _Inbox) -> None:
        self.inboxes.discard(inbox)

    async def principal(self, credential: Credential, generation: int) -> Principal:
        """The principal of ``credential`` as authenticated during ``generation``'s catch-up.

        Sessions sharing a credential share one authentication per hub read; an older
        generation authenticates afresh.
        """
        if generation > self._principals_generation:
            self._principals.clear()
            self._principals_generation = generation
        if generation < self._principals_generation or not credential.key:
            return await credential.authenticate()
        future = self._principals.get(credential.key)
        if future is None:
            future = asyncio.ensure_future(credential.authenticate())
            self._principals[credential.key] = future
        return await asyncio.shield(future)

    async def _run(self) -> None:
        async with self.engine.bus.subscribe(self.coordinator_id) as subscription:
            self._subscribed.set()
            while True:
                try:
                    await self._read_all()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the database may be away: the next turn retries
                    _log.warning("feed of %s: reading the log failed: %s", self.coordinator_id, exc)
                # Wait for a notification past what was read, or the backstop poll.
                deadline = time.monotonic() + self.options.poll_seconds
                while True:
                    note = await subscription.next(max(deadline - time.monotonic(), 0.0))
                    if note is None or self.revision is None or note.revision > self.revision:
                        break

    async def _read_all(self) -> None:
        limit = self.options.hub_read_limit
        while True:
            async with self.engine.store.read() as reader:
                coordinator = await reader.get_coordinator(self.coordinator_id)
                if coordinator is None:
                    return
                enabled = await reader.platform_enabled()
                switched_on = rules.coordination_on(coordinator, enabled)
                if self.revision is None:
                    self.revision = coordinator.revision
                    self.switched_on = switched_on
                    return
                events = await reader.list_events(self.coordinator_id, self.revision, limit, "", "")
            # The platform switch is no event of this log: when it (or the coordinator's) moves,
            # an empty batch makes every session re-check at once, not at its next ping.
            switched = switched_on != self.switched_on
            self.switched_on = switched_on
            if not events and not switched:
                return
            self.generation += 1
            if events:
                self.revision = events[-1].revision
            batch = _Batch(self.generation, coordinator, enabled, tuple(events))
            for inbox in tuple(self.inboxes):
                inbox.put(batch)
            if len(events) < limit:
                return


class FeedHubs:
    """The hubs of this process, one per watched work coordinator, shared by its sessions."""

    def __init__(self, engine: Engine, options: FeedOptions | None = None) -> None:
        self.engine = engine
        self.options = options or FeedOptions()
        self._hubs: dict[str, FeedHub] = {}
        self._lock = asyncio.Lock()

    async def acquire(self, coordinator_id: str) -> FeedHub:
        async with self._lock:
            hub = self._hubs.get(coordinator_id)
            if hub is None:
                hub = FeedHub(self.engine, coordinator_id, self.options)
                await hub.start()
                self._hubs[coordinator_id] = hub
            hub.users += 1
            return hub

    async def release(self, hub: FeedHub) -> None:
        async with self._lock:
            hub.users -= 1
            if hub.users <= 0 and self._hubs.get(hub.coordinator_id) is hub:
                del self._hubs[hub.coordinator_id]
                await hub.stop()

    def __len__(self) -> int:
        return len(self._hubs)

    async def close(self) -> None:
        async with self._lock:
            hubs, self._hubs = list(self._hubs.values()), {}
        for hub in hubs:
            await hub.stop()


# --------------------------------------------------------------------------- a session


class FeedSession:
    """One caller's feed: the frames of :meth:`frames`, in order, until cancelled or the
    caller's authority is gone (then the typed error ends the stream)."""

    def __init__(
        self, hubs: FeedHubs, coordinator_id: str, credential: Credential, since: int | None
    ) -> None:
        self.hubs = hubs
        self.engine = hubs.engine
        self.options = hubs.options
        self.coordinator_id = coordinator_id
        self.credential = credential
        self.since = since
        self.delivered = 0

    async def frames(self) -> AsyncIterator[Frame]:
        principal = await self.credential.authenticate()
        # Subscribe (through the hub) before reading anything: a commit between the first read
        # and the subscription would otherwise go unnoticed until the next poll.
        hub = await self.hubs.acquire(self.coordinator_id)
        inbox = hub.attach()
        try:
            async for frame in self._opening(principal):
                yield frame
            async for frame in self._live(hub, inbox):
                yield frame
        finally:
            hub.detach(inbox)
            await self.hubs.release(hub)

    # --- opening ------------------------------------------------------------------------

    async def _opening(self, principal: Principal) -> AsyncIterator[Frame]:
        since = self.since
        ping = max(1, round(self.options.ping_seconds))
        if since is not None and since >= self.options.retention_floor:
            page = await self._read(principal, since)
            events, token, current = page.events, page.next_page_token, page.revision
            contiguous = since <= current and (
                not events or (events[0].revision == since + 1 and _consecutive(events))
            )
            if contiguous:
                yield HelloFrame(self.coordinator_id, current, ping, since)
                self.delivered = since
                for delta in self._deltas(events):
                    yield delta
                if token:
                    async for frame in self._catch_up(None):
                        yield frame
                return
        view = await self.engine.reads.view(principal, self._snapshot_input())
        yield HelloFrame(self.coordinator_id, view.revision, ping, view.revision)
        if since is not None:
            yield ResyncFrame(RESYNC_GAP, view.revision)
        yield SnapshotFrame(view.revision, view)
        self.delivered = view.revision

    # --- live -----------------------------------------------------------------------------

    async def _live(self, hub: FeedHub, inbox: _Inbox) -> AsyncIterator[Frame]:
        next_ping = time.monotonic() + self.options.ping_seconds
        while True:
            if inbox.take_overflow():
                async for frame in self._resnapshot(RESYNC_SLOW_CONSUMER):
                    yield frame
                continue
            due = next_ping - time.monotonic()
            batch = await inbox.get(due) if due > 0 else None
            if batch is None:
                if inbox.overflowed:
                    continue
                # Every interval: re-check authority, catch up from the log (the backstop for
                # a hub that missed something) and ping with the current revision.
                async for frame in self._catch_up(None, ping=True):
                    yield frame
                next_ping = time.monotonic() + self.options.ping_seconds
                continue
            # A burst is one delta: merge whatever else is already waiting (up to a frame).
            merged = list(batch.events)
            while len(merged) < self.options.max_events_per_frame:
                more = inbox.get_nowait()
                if more is None:
                    break
                merged.extend(more.events)
                batch = more
            # Authority and the switch as this batch's read saw them; a batch without events
            # is the hub saying the switch moved (see FeedHub._read_all).
            principal = await hub.principal(self.credential, batch.generation)
            authorize(principal, batch.coordinator, Access.READ)
            rules.require_coordination_on(
                principal, batch.coordinator, batch.platform_enabled, Access.READ
            )
            events = [e for e in merged if e.revision > self.delivered]
            if not events:
                continue
            if events[0].revision != self.delivered + 1 or not _consecutive(events):
                async for frame in self._catch_up(None):
                    yield frame
                continue
            for frame in self._deltas(events):
                yield frame

    async def _catch_up(
        self, principal: Principal | None, *, ping: bool = False
    ) -> AsyncIterator[Frame]:
        """Deltas from the log past what was delivered (authority re-checked first); a gap the
        log cannot fill becomes a resync and a snapshot."""
        principal = principal or await self.credential.authenticate()
        while True:
            page = await self._read(principal, self.delivered)
            events, token, current = page.events, page.next_page_token, page.revision
            if current < self.delivered or (
                events and (events[0].revision != self.delivered + 1 or not _consecutive(events))
            ):
                async for frame in self._resnapshot(RESYNC_GAP, principal):
                    yield frame
                return
            for frame in self._deltas(events):
                yield frame
            if not token:
                if ping:
                    yield PingFrame(max(current, self.delivered))
                return

    async def _resnapshot(
        self, reason: str, principal: Principal | None = None
    ) -> AsyncIterator[Frame]:
        principal = principal or await self.credential.authenticate()
        view = await self.engine.reads.view(principal, self._snapshot_input())
        yield ResyncFrame(reason, view.revision)
        yield SnapshotFrame(view.revision, view)
        self.delivered = view.revision

    async def _read(self, principal: Principal, after: int) -> EventPage:
        """One page of the log after ``after`` (READ and the switch checked in the same read)."""
        page = ListEventsInput(
            coordinator_id=self.coordinator_id,
            since_revision=after,
            page_size=self.options.max_events_per_frame,
        )
        return await self.engine.reads.list_events(principal, page)

    def _snapshot_input(self) -> GetViewInput:
        """The view a snapshot frame carries: its first ``snapshot_lanes`` lanes."""
        return GetViewInput(
            coordinator_id=self.coordinator_id, page_size=self.options.snapshot_lanes
        )

    def _deltas(self, events: Sequence[Event]) -> list[DeltaFrame]:
        size = self.options.max_events_per_frame
        frames = []
        for start in range(0, len(events), size):
            chunk = tuple(events[start : start + size])
            frames.append(DeltaFrame(chunk[0].revision, chunk[-1].revision, chunk))
        if events:
            self.delivered = events[-1].revision
        return frames


def _consecutive(events: Sequence[Event]) -> bool:
    return all(b.revision == a.revision + 1 for a, b in itertools.pairwise(events))
