"""The notification bus: wake-up hints published after commit, per work coordinator.

A notification says "work coordinator C reached revision R (with new ready work for these
classes)". It is a hint, never the truth: subscribers re-read state from the database, a missed
notification costs latency (callers keep a slow poll as backstop), never correctness. So
publishing never raises, full subscriber queues drop their oldest entries, and bursts may be
coalesced.

Two kinds of listener:

- a :class:`Subscription` (the live feed) receives every notification of a work coordinator;
- a :class:`ReadySignal` (a waiting Lease) is one worker class's wake-up: only notifications
  that may have made work of that class ready set it (not a log-only one, not one naming only
  other classes), and however many arrive before its holder waits again count as one wake-up.
  The first of a burst wakes the holder at once; the rest cost nothing until it looks again.

Two implementations share the :class:`NotificationBus` interface:

- :class:`InProcessBus`, for embedded mode and tests: asyncio queues in one process.
- :class:`~workcoord.kit.bus_redis.RedisStreamBus` (``kit/bus_redis.py``), for production:
  one Redis stream per work coordinator (``XADD … MAXLEN ~``), read by one background
  ``XREAD BLOCK`` task per process. Listeners in the publishing process are woken directly,
  without a Redis round trip; the reader skips the entries its own process wrote, so nobody
  sees a notification twice.

redis-py gives the commands but no stream fan-out with these semantics, so that part is here.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, Self, TypeVar

from workcoord.kit import metrics

__all__ = [
    "InProcessBus",
    "Notification",
    "NotificationBus",
    "ReadySignal",
    "Subscription",
    "bus_from_url",
]

_log = logging.getLogger(__name__)

_QUEUE_LIMIT = 256
# After a Redis failure, skip Redis for a moment instead of paying a connect timeout per call.


@dataclass(frozen=True)
class Notification:
    """Work coordinator ``coordinator_id`` reached ``revision``.

    ``worker_classes`` names the classes with newly ready work; empty means unknown or any,
    unless ``log_only``: the commit made no work ready (its events are for the feed; waiting
    workers need not look).
    """

    coordinator_id: str
    revision: int
    worker_classes: frozenset[str] = field(default_factory=frozenset)
    log_only: bool = False

    def may_ready(self, worker_class: str) -> bool:
        """Whether this commit may have made work of ``worker_class`` ready."""
        if self.log_only:
            return False
        return not self.worker_classes or worker_class in self.worker_classes


class _Listening(Protocol):
    """Listens from ``__aenter__`` until ``__aexit__`` (an async context manager)."""

    async def __aenter__(self) -> Self:
        """Start listening."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop listening."""
        ...


class Subscription(_Listening, Protocol):
    """Notifications of one work coordinator; use as an async context manager.

    Every notification published after ``__aenter__`` returned is delivered at most once, in
    publication order per publisher; bursts may be coalesced or, if the consumer lags far
    behind, the oldest dropped.
    """

    # A timeout parameter (not asyncio.timeout) because "nothing yet" is a normal answer here.
    async def next(self, timeout: float) -> Notification | None:  # noqa: ASYNC109
        """The next notification, or None after ``timeout`` seconds without one."""
        ...


class ReadySignal(_Listening, Protocol):
    """The wake-up of one or more worker classes of one work coordinator (one worker serving
    several classes waits on one signal); use as an async context manager.

    Set by every notification published after ``__aenter__`` returned that may have made work
    of any of the classes ready (:meth:`Notification.may_ready`); never by others. It is
    debounced: any number of notifications between two waits count as one wake-up, and the
    first is not delayed. ``generation`` numbers the delivery that last set it: the signals
    that one notification set share it, so their holders can tell who was woken by the same
    commit.
    """

    generation: int

    async def wait(self, timeout: float) -> bool:  # noqa: ASYNC109
        """True at once if the signal was set since the last wait returned (or since entering),
        else True as soon as it is set; False after ``timeout`` seconds without. Clears it."""
        ...


class NotificationBus(Protocol):
    """Publishes and delivers :class:`Notification` hints."""

    async def publish(self, note: Notification) -> None:
        """Publish ``note`` (call after commit). Best effort: never raises on transport failure."""
        ...

    def subscribe(self, coordinator_id: str) -> Subscription:
        """A subscription to ``coordinator_id``'s notifications (enter it to start receiving)."""
        ...

    def ready_signal(self, coordinator_id: str, *worker_classes: str) -> ReadySignal:
        """The wake-up of ``worker_classes`` in ``coordinator_id`` (enter it to start
        listening): set when work of any of them may be ready."""
        ...

    async def close(self) -> None:
        """Release connections and background tasks."""
        ...


_A = TypeVar("_A")


class _LocalListener:
    """A listener of this process's fan-out: entering registers it (on the running loop),
    leaving unregisters it; deliveries may come from any thread."""

    def __init__(self, fanout: _LocalFanout, coordinator_id: str) -> None:
        self.coordinator_id = coordinator_id
        self._fanout = fanout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._active = False

    async def __aenter__(self) -> Self:
        self._loop = asyncio.get_running_loop()
        await self._fanout.register(self)
        self._active = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:  # leaving is the same either way
        self._active = False
        await self._fanout.unregister(self)

    def _in_loop(self, handle: Callable[[_A], None], value: _A) -> None:
        """Run ``handle(value)`` on the listener's loop: now if we are on it, else soon."""
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            handle(value)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(handle, value)


class _LocalSubscription(_LocalListener):
    """A bounded queue of notifications plus a wake-up event; entering registers it."""

    def __init__(self, fanout: _LocalFanout, coordinator_id: str) -> None:
        super().__init__(fanout, coordinator_id)
        self._items: deque[Notification] = deque()
        self._ready = asyncio.Event()

    async def next(self, timeout: float) -> Notification | None:  # noqa: ASYNC109
        """The next notification, or None after ``timeout`` seconds without one."""
        if not self._active:
            raise RuntimeError("enter the subscription (async with) before reading it")
        if not self._items:
            self._ready.clear()
            try:
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                return None
        return self._items.popleft() if self._items else None

    def deliver(self, note: Notification) -> None:
        """Queue ``note``; safe to call from any thread."""
        self._in_loop(self._append, note)

    def _append(self, note: Notification) -> None:
        if len(self._items) >= _QUEUE_LIMIT:
            # Hints only: the newest tells the consumer just as much as the dropped one.
            self._items.popleft()
            metrics.BUS_NOTIFICATIONS_DROPPED.inc()
        self._items.append(note)
        self._ready.set()


class _LocalReadySignal(_LocalListener):
    """One waiter's wake-up for its classes: an event, set by the fan-out, cleared by waiting."""

    def __init__(
        self, fanout: _LocalFanout, coordinator_id: str, worker_classes: tuple[str, ...]
    ) -> None:
        super().__init__(fanout, coordinator_id)
        if not worker_classes:
            raise ValueError("a ready signal needs at least one worker class")
        self.worker_classes = tuple(dict.fromkeys(worker_classes))
        self._set = asyncio.Event()
        self.generation = 0

    async def wait(self, timeout: float) -> bool:  # noqa: ASYNC109
        """True once set (at once if set already), False after ``timeout``; clears it."""
        if not self._active:
            raise RuntimeError("enter the ready signal (async with) before waiting on it")
        if not self._set.is_set():
            try:
                async with asyncio.timeout(timeout):
                    await self._set.wait()
            except TimeoutError:
                return False
        self._set.clear()
        return True

    def fire(self, generation: int) -> None:
        """Set the signal by delivery ``generation``; safe to call from any thread. Setting it
        again before the holder waits only updates the generation: that is the debounce."""
        self._in_loop(self._raise, generation)

    def _raise(self, generation: int) -> None:
        self.generation = max(self.generation, generation)
        self._set.set()


class _LocalFanout:
    """The listeners of this process: subscriptions by work coordinator, ready signals by work
    coordinator and class (so a notification touches only the classes it names)."""

    def __init__(self) -> None:
        self.subscribers: dict[str, set[_LocalSubscription]] = {}
        self.signals: dict[str, dict[str, set[_LocalReadySignal]]] = {}
        self.generation = 0  # deliveries that set ready signals, numbered

    def watched(self, coordinator_id: str) -> bool:
        """Whether any listener of this process needs ``coordinator_id``'s notifications."""
        return coordinator_id in self.subscribers or coordinator_id in self.signals

    async def register(self, listener: _LocalListener) -> None:
        if isinstance(listener, _LocalSubscription):
            self.subscribers.setdefault(listener.coordinator_id, set()).add(listener)
        elif isinstance(listener, _LocalReadySignal):
            by_class = self.signals.setdefault(listener.coordinator_id, {})
            for worker_class in listener.worker_classes:
                by_class.setdefault(worker_class, set()).add(listener)

    async def unregister(self, listener: _LocalListener) -> None:
        coordinator_id = listener.coordinator_id
        if isinstance(listener, _LocalSubscription):
            current = self.subscribers.get(coordinator_id)
            if current is not None:
                current.discard(listener)
                if not current:
                    del self.subscribers[coordinator_id]
            return
        assert isinstance(listener, _LocalReadySignal)
        by_class = self.signals.get(coordinator_id, {})
        for worker_class in listener.worker_classes:
            waiting = by_class.get(worker_class)
            if waiting is not None:
                waiting.discard(listener)
                if not waiting:
                    del by_class[worker_class]
        if not by_class:
            self.signals.pop(coordinator_id, None)

    def deliver(self, note: Notification) -> None:
        for subscription in tuple(self.subscribers.get(note.coordinator_id, ())):
            subscription.deliver(note)
        by_class = self.signals.get(note.coordinator_id)
        if note.log_only or not by_class:
            return
        classes = note.worker_classes or frozenset(by_class)
        self.generation += 1
        for worker_class in classes:
            for signal in tuple(by_class.get(worker_class, ())):
                signal.fire(self.generation)


class InProcessBus:
    """A bus inside one process (embedded mode, unit tests)."""

    def __init__(self) -> None:
        self._fanout = _LocalFanout()

    async def publish(self, note: Notification) -> None:
        """Deliver ``note`` to this process's subscribers of its work coordinator."""
        self._fanout.deliver(note)

    def subscribe(self, coordinator_id: str) -> Subscription:
        """A subscription to ``coordinator_id`` (enter it to start receiving)."""
        return _LocalSubscription(self._fanout, coordinator_id)

    def ready_signal(self, coordinator_id: str, *worker_classes: str) -> ReadySignal:
        """The wake-up of ``worker_classes`` in ``coordinator_id`` (enter it to listen)."""
        return _LocalReadySignal(self._fanout, coordinator_id, worker_classes)

    async def close(self) -> None:
        """Nothing to release."""


def bus_from_url(url: str | None) -> NotificationBus:
    """The bus for ``REDIS_URL``: Redis streams for ``redis://``/``rediss://``/``unix://``,
    the in-process bus when unset (or ``memory://``)."""
    if not url or url.startswith("memory:"):
        return InProcessBus()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from workcoord.kit.bus_redis import RedisStreamBus

        return RedisStreamBus(url)
    raise ValueError("REDIS_URL must start with redis://, rediss:// or unix://")
