"""Waking a waiting webhook sender on the commits of every coordinator replica, over the bus.

A commit that writes outbox rows sets the sender's ``written`` event on the replica that made
it (``EngineCore.announce``). A sender waiting on another replica would only find the rows at
its next look; instead, while it waits (:meth:`OutboxWake.watching`), it subscribes to the bus
notifications of the work coordinators that have enabled webhooks — the notification every
commit already publishes for the feed and waiting workers; nothing more is published — and
any of them sets ``written`` too (a commit that wrote no outbox row costs one read of it).

Which coordinators have webhooks is read at most every :data:`REFRESH_SECONDS` (at once after
a webhook change on this replica, :meth:`OutboxWake.forget`); until then a coordinator that got
its first webhook on another replica is found at the sender's next look, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workcoord.kit.bus import Subscription

    from ._base import EngineCore

__all__ = ["MAX_WATCHED", "REFRESH_SECONDS", "OutboxWake"]

# How long the list of coordinators with webhooks is kept before it is read again.
REFRESH_SECONDS = 10.0
# At most this many coordinators are watched (the rest are found at the sender's next look).
MAX_WATCHED = 200
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
    """Sets ``written`` on a bus notification of a work coordinator with enabled webhooks,
    while a sender waits (:meth:`watching`)."""

    def __init__(self, core: EngineCore, written: asyncio.Event) -> None:
        self.core = core
        self._written = written
        self._ids: list[str] = []
        self._listed_at: float | None = None
        self._watches: set[_Watch] = set()

    @property
    def watched(self) -> frozenset[str]:
        """The coordinators some waiting sender watches now."""
        return frozenset(c for watch in self._watches for c in watch.relays)

    def forget(self) -> None:
        """Read the coordinators with webhooks again at the next look (a webhook changed)."""
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

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[_Watch]:
        """Relay the notifications of the coordinators with webhooks to ``written`` until the
        block ends; call the watch's ``sync()`` after each look to follow webhook changes."""
        watch = _Watch(self)
        self._watches.add(watch)
        try:
            await watch.sync()
            yield watch
        finally:
            self._watches.discard(watch)
            await watch.close()

    async def relay(self, subscription: Subscription) -> None:
        while True:
            if await subscription.next(_RELAY_TIMEOUT_SECONDS) is not None:
                self._written.set()
