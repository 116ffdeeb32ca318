"""Waking a waiting webhook sender on the commits of every coordinator replica, over the bus.

A commit that writes outbox rows sets the sender's ``written`` event on the replica that made
it (``EngineCore.announce``). A sender waiting on another replica would only find the rows at
its next look; instead, the replica the sender calls (:meth:`OutboxWake.sync`) subscribes to
the bus notifications of the work coordinators that have enabled webhooks — the notification
every commit already publishes for the feed and waiting workers; nothing more is published —
and any of them sets ``written`` too (a commit that wrote no outbox row costs one read of it).

Which coordinators have webhooks is read at most every :data:`REFRESH_SECONDS` (at once after
a webhook change on this replica, :meth:`OutboxWake.forget`); until then a coordinator that got
its first webhook on another replica is found at the sender's next look, as before.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workcoord.kit.bus import Subscription

    from ._base import EngineCore

__all__ = ["IDLE_SECONDS", "MAX_WATCHED", "REFRESH_SECONDS", "OutboxWake"]

# How long the list of coordinators with webhooks is kept before it is read again.
REFRESH_SECONDS = 10.0
# At most this many coordinators are watched (the rest are found at the sender's next look).
MAX_WATCHED = 200
# The subscriptions are closed after this long without a DeliverWebhooks call.
IDLE_SECONDS = 60.0
# A subscription's read timeout: it only bounds one wait, the relay reads again at once.
_RELAY_TIMEOUT_SECONDS = 3600.0


class _Watch:
    """One waiting sender's subscriptions (coordinator id → its subscription and relay)."""

    def __init__(self, wake: OutboxWake) -> None:
        self._wake = wake
        self.relays: dict[str, tuple[Subscription, asyncio.Task[None]]] = {}

    async def sync(self) -> None:
        """Watch the coordinators that have webhooks now; stop watching the others."""
        wanted = set(await self._wake.coordinator_ids())
        for coordinator_id in [c for c in self.relays if c not in wanted]:
            await self._stop(coordinator_id)
        for coordinator_id in wanted - set(self.relays):
            subscription = self._wake.core.bus.subscribe(coordinator_id)
            await subscription.__aenter__()
            relay = asyncio.create_task(self._wake.relay(subscription))
            self.relays[coordinator_id] = (subscription, relay)

    async def close(self) -> None:
        for coordinator_id in list(self.relays):
            await self._stop(coordinator_id)

    async def _stop(self, coordinator_id: str) -> None:
        subscription, relay = self.relays.pop(coordinator_id)
        relay.cancel()
        await asyncio.gather(relay, return_exceptions=True)
        await subscription.__aexit__(None, None, None)


class OutboxWake:
    """Sets ``written`` on a bus notification of a work coordinator with enabled webhooks.

    The subscriptions are opened by the first :meth:`sync` (each ``DeliverWebhooks`` call makes
    one before its first look, so a commit from then on wakes it) and kept across calls, so a
    commit between two calls is not missed; they are closed after :data:`IDLE_SECONDS` without
    a call (the recovery leader now calls another replica) and by :meth:`close`."""

    def __init__(self, core: EngineCore, written: asyncio.Event) -> None:
        self.core = core
        self._written = written
        self._ids: list[str] = []
        self._listed_at: float | None = None
        self._watch: _Watch | None = None
        self._used = 0.0
        self._reaper: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def watched(self) -> frozenset[str]:
        """The coordinators watched now."""
        return frozenset(self._watch.relays) if self._watch is not None else frozenset()

    def forget(self) -> None:
        """Read the coordinators with webhooks again at the next sync (a webhook changed)."""
        self._listed_at = None

    async def coordinator_ids(self) -> list[str]:
        """The work coordinators with enabled webhooks (read at most every REFRESH_SECONDS)."""
        now = time.monotonic()
        if self._listed_at is None or now - self._listed_at >= REFRESH_SECONDS:
            async with self.core.store.read() as reader:
                found = await reader.list_coordinators("", 100_000, None)
            self._ids = [c.coordinator_id for c in found if c.webhook_filters][:MAX_WATCHED]
            self._listed_at = now
        return self._ids

    async def sync(self) -> None:
        """Watch the coordinators that have webhooks now (opening the watch if it is closed)
        and no others."""
        async with self._lock:
            self._used = time.monotonic()
            if self._watch is None:
                self._watch = _Watch(self)
                self._reaper = asyncio.create_task(self._reap())
            await self._watch.sync()

    async def close(self) -> None:
        """Stop watching (clean shutdown)."""
        async with self._lock:
            reaper, self._reaper = self._reaper, None
            watch, self._watch = self._watch, None
        if reaper is not None:
            reaper.cancel()
            await asyncio.gather(reaper, return_exceptions=True)
        if watch is not None:
            await watch.close()

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(IDLE_SECONDS)
            async with self._lock:
                if time.monotonic() - self._used < IDLE_SECONDS:
                    continue
                watch, self._watch = self._watch, None
                self._reaper = None
                if watch is not None:
                    await watch.close()
                return

    async def relay(self, subscription: Subscription) -> None:
        while True:
            if await subscription.next(_RELAY_TIMEOUT_SECONDS) is not None:
                self._written.set()
