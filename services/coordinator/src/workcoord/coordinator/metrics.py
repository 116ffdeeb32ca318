"""The coordinator's Prometheus metrics: the queue as the database sees it, attempts and events
as they commit, and the database connection pool.

- ``workcoord_queue_depth`` / ``workcoord_capacity_in_use`` / ``workcoord_capacity_limit``
  ``{coordinator, worker_class}`` come from a :class:`QueueSampler` that reads them through the
  store's ``Reader`` (``count_ready``, ``live_attempts``) every few seconds; a scrape only reads
  the last sample, so scrapes cost no query. Every replica samples the same database: aggregate
  with ``max by (coordinator, worker_class)``.
- ``workcoord_attempts_total{worker_class, outcome}`` and ``workcoord_events_total{type}`` are
  counted by :class:`MeteredStore` from what a write transaction changed, once it committed
  (no engine code is involved: the domain reaches the database only through the store port).
- ``workcoord_tokens_total`` and ``workcoord_cost_micros_total{coordinator, worker_class,
  model}`` are what the attempts reported spending, counted by :class:`MeteredStore` from the
  usage roll-ups a write added to, once it committed (``model`` bounded as ``worker_class``).
- ``workcoord_items_awaiting_human{coordinator, reason}`` (``approval``: AWAITING_APPROVAL,
  ``stopped``: STOPPED) and ``workcoord_awaiting_human_oldest_seconds`` (how long the oldest of
  them has waited) are sampled with the queue (``count_awaiting_human``).
- ``workcoord_ready_wait_seconds`` is how long an item waited from ready (``ready_time``) to
  leased, observed when the lease commits.
- ``workcoord_webhook_deliveries_total{outcome}`` counts tries of webhook deliveries
  (:data:`DELIVERY_OUTCOMES`) and ``workcoord_webhook_delivery_lag_seconds`` is commit →
  acknowledged by the receiver, both counted by the sender (:mod:`.webhooks.sender`).
- ``workcoord_feed_lag_seconds`` is how old the newest event of each feed delta is when the
  coordinator sends it to a subscriber (:func:`observe_feed_frame`).
- ``workcoord_db_pool_connections_in_use`` reads SQLAlchemy's pool.

Label sets are bounded: ``outcome`` is a fixed enum (:data:`OUTCOMES`), ``type`` the contract's
event types, ``coordinator`` the first :data:`MAX_COORDINATOR_LABELS` work coordinators by id
(the rest add up under ``other``), and ``worker_class`` at most :data:`MAX_CLASS_LABELS`
distinct names per process (classes come from each coordinator's configuration; more also go
to ``other``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any, cast

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.ext.asyncio import AsyncEngine

from workcoord.coordinator.domain.model import (
    Attempt,
    AttemptStatus,
    Coordinator,
    Item,
    ItemState,
    NewEvent,
    UsageScope,
    UsageTotal,
)
from workcoord.coordinator.domain.ports import ExpiredLease, Reader, Store, Tx, WriteLock
from workcoord.coordinator.domain.rules import class_usage
from workcoord.kit.clock import Clock, SystemClock

__all__ = [
    "ATTEMPTS",
    "DELIVERY_OUTCOMES",
    "EVENTS",
    "FEED_LAG",
    "HUMAN_REASONS",
    "MAX_CLASS_LABELS",
    "MAX_COORDINATOR_LABELS",
    "OUTCOMES",
    "READY_WAIT",
    "WEBHOOK_DELIVERIES",
    "WEBHOOK_LAG",
    "MeteredStore",
    "QueueSample",
    "QueueSampler",
    "observe_feed_frame",
    "watch_pool",
]

_log = logging.getLogger(__name__)

MAX_COORDINATOR_LABELS = 100
MAX_CLASS_LABELS = 64
OTHER = "other"
# Sampling reads at most this many work coordinators (the rest are not shown at all).
_MAX_SAMPLED_COORDINATORS = 1000
_PAGE = 200

OUTCOMES: dict[AttemptStatus, str] = {
    AttemptStatus.COMPLETED: "completed",
    AttemptStatus.FAILED: "failed",
    AttemptStatus.CHECKPOINTED: "checkpointed",
    AttemptStatus.RELEASED: "released",
    AttemptStatus.DEAD: "expired",
}
"""How an attempt ended → its ``outcome`` label."""

ATTEMPTS = Counter(
    "workcoord_attempts_total",
    "Attempts that ended, by worker class and outcome "
    "(completed, failed, checkpointed, released, expired).",
    ["worker_class", "outcome"],
)
EVENTS = Counter(
    "workcoord_events_total",
    "Events committed to the log, by event type (e.g. ITEM_DEAD_LETTERED).",
    ["type"],
)

TOKENS = Counter(
    "workcoord_tokens_total",
    "Tokens the attempts reported spending (input, output and cache), by work coordinator, "
    "worker class and model.",
    ["coordinator", "worker_class", "model"],
)
COST_MICROS = Counter(
    "workcoord_cost_micros_total",
    "What the attempts reported spending, in millionths of a US dollar, by work coordinator, "
    "worker class and model.",
    ["coordinator", "worker_class", "model"],
)

FEED_LAG = Histogram(
    "workcoord_feed_lag_seconds",
    "Age of the newest event in a feed delta when the coordinator sends it (commit → send).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)


READY_WAIT = Histogram(
    "workcoord_ready_wait_seconds",
    "How long an item waited from ready to leased (observed when the lease commits).",
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600),
)

DELIVERY_OUTCOMES = ("succeeded", "failed", "dead", "refused")
"""How a try of a webhook delivery went: a 2xx answer; an error, timeout or other answer (it
is retried); the last failure before giving up (the delivery is DEAD); the SSRF rules refused
the address at connect time."""

WEBHOOK_DELIVERIES = Counter(
    "workcoord_webhook_deliveries_total",
    "Tries of webhook deliveries, by outcome (succeeded, failed, dead, refused).",
    ["outcome"],
)
WEBHOOK_LAG = Histogram(
    "workcoord_webhook_delivery_lag_seconds",
    "From an event's commit to its webhook delivery's 2xx answer (retries included).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 3600, 24 * 3600),
)

HUMAN_REASONS: dict[str, str] = {
    ItemState.AWAITING_APPROVAL.value: "approval",
    ItemState.STOPPED.value: "stopped",
}
"""An item state that waits on a person → its ``reason`` label."""


def observe_feed_frame(response: Any) -> None:
    """Record :data:`FEED_LAG` for a ``WatchResponse`` carrying a delta."""
    if response.WhichOneof("frame") != "delta" or not response.delta.events:
        return
    committed = response.delta.events[-1].time
    age = time.time() - (committed.seconds + committed.nanos / 1e9)
    FEED_LAG.observe(max(age, 0.0))


class _BoundedLabel:
    """Admits the first ``limit`` distinct values; later ones become ``other``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self._limit:
                self._seen.add(value)
                return value
        return OTHER


_class_label = _BoundedLabel(MAX_CLASS_LABELS)
_coordinator_label = _BoundedLabel(MAX_COORDINATOR_LABELS)
_model_label = _BoundedLabel(MAX_CLASS_LABELS)


# --- attempts and events, counted at commit ---------------------------------------------------


class _ObservedTx:
    """A Tx that notes what ended and what was logged; everything else goes to the real one."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx
        self.ended: dict[str, Attempt] = {}
        self.events: list[NewEvent] = []
        # (coordinator, class, model) -> [tokens, cost in micro-dollars] added.
        self.spent: dict[tuple[str, str, str], list[int]] = {}
        self.leased: dict[str, Attempt] = {}
        self.items: dict[str, Item] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_tx", "ended", "events", "spent", "leased", "items"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._tx, name, value)

    async def update_attempts(self, attempts: Sequence[Attempt]) -> None:
        await self._tx.update_attempts(attempts)
        for attempt in attempts:
            if attempt.status in OUTCOMES:
                self.ended[attempt.lease_id] = attempt

    async def insert_attempts(self, attempts: Sequence[Attempt]) -> None:
        await self._tx.insert_attempts(attempts)
        for attempt in attempts:
            self.leased[attempt.item_id] = attempt

    async def update_items(self, items: Sequence[Item]) -> None:
        await self._tx.update_items(items)
        for item in items:
            self.items[item.item_id] = item

    async def end_expired_leases(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[ExpiredLease]:
        expired: list[ExpiredLease] = await self._tx.end_expired_leases(coordinator_id, now, limit)
        for lease in expired:
            self.ended[lease.attempt.lease_id] = lease.attempt
        return expired

    async def extend_attempts(
        self, extended: Sequence[tuple[Attempt, Sequence[UsageTotal]]]
    ) -> set[str]:
        written = await self._tx.extend_attempts(extended)
        for attempt, totals in extended:
            if attempt.lease_id in written:
                self._spent(totals)
        return written

    async def add_usage(self, totals: Sequence[UsageTotal]) -> None:
        await self._tx.add_usage(totals)
        self._spent(totals)

    def _spent(self, totals: Sequence[UsageTotal]) -> None:
        # One increase's all-time rows come class first, then model (``usage.rollups``).
        worker_class = ""
        for total in totals:
            if total.day:
                continue
            if total.scope == UsageScope.WORKER_CLASS:
                worker_class = total.key
            elif total.scope == UsageScope.MODEL:
                key = (total.coordinator_id, worker_class, total.key)
                spent = self.spent.setdefault(key, [0, 0])
                spent[0] += total.tokens
                spent[1] += total.cost_micros

    async def append(self, coordinator: Coordinator, events: Sequence[NewEvent], actor: str) -> int:
        revision = await self._tx.append(coordinator, events, actor)
        self.events.extend(events)
        return revision

    def count(self) -> None:
        # Tallied first: a recovery batch ends thousands of attempts and logs twice as many
        # events, and each labelled increment takes a lock.
        ended = collections.Counter((a.worker_class, a.status) for a in self.ended.values())
        for (worker_class, status), n in ended.items():
            ATTEMPTS.labels(_class_label(worker_class), OUTCOMES[status]).inc(n)
        for event_type, n in collections.Counter(e.type for e in self.events).items():
            EVENTS.labels(event_type.value).inc(n)
        for (coordinator_id, worker_class, model), (tokens, cost) in self.spent.items():
            labels = (
                _coordinator_label(coordinator_id),
                _class_label(worker_class),
                _model_label(model),
            )
            TOKENS.labels(*labels).inc(tokens)
            COST_MICROS.labels(*labels).inc(cost)
        for item_id, attempt in self.leased.items():
            item = self.items.get(item_id)
            if item is not None and item.ready_time is not None:
                waited = (attempt.create_time - item.ready_time).total_seconds()
                READY_WAIT.observe(max(waited, 0.0))


class MeteredStore:
    """The store, counting :data:`ATTEMPTS` and :data:`EVENTS` of every committed write.

    Other attributes (``engine``, ``dialect``, ``close`` …) are the wrapped store's.
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def read(self, *, snapshot: bool = True) -> AbstractAsyncContextManager[Reader]:
        """The wrapped store's read transaction."""
        return self._store.read(snapshot=snapshot)

    def write(
        self, coordinator_id: str | None = None, lock: WriteLock = WriteLock.ALL
    ) -> AbstractAsyncContextManager[Tx]:
        """The wrapped store's write transaction, counted once it commits."""
        return self._counted(self._store.write(coordinator_id, lock))

    def extend(self) -> AbstractAsyncContextManager[Tx]:
        """The wrapped store's heartbeat round, counted once all its statements ran."""
        return self._counted(self._store.extend())

    @asynccontextmanager
    async def _counted(self, opening: AbstractAsyncContextManager[Tx]) -> AsyncIterator[Tx]:
        async with opening as tx:
            observed = _ObservedTx(tx)
            yield cast(Tx, observed)
        # Only reached when the transaction committed.
        observed.count()


# --- queue depth and capacity, sampled ---------------------------------------------------------

QueueSample = dict[tuple[str, str], tuple[int, int, int]]
"""(coordinator label, class label) → (ready items, capacity in use, capacity limit)."""

# The three gauges of a queue sample, in the order of its values.
_QUEUE_FAMILIES = (
    (
        "workcoord_queue_depth",
        "Items ready to lease (QUEUED), by work coordinator and worker class.",
    ),
    (
        "workcoord_capacity_in_use",
        "Live attempts holding class capacity, by work coordinator and worker class.",
    ),
    (
        "workcoord_capacity_limit",
        "Configured class capacity, by work coordinator and worker class.",
    ),
)


HumanSample = dict[tuple[str, str], tuple[int, float]]
"""(coordinator label, reason) → (items waiting on a person, seconds the oldest has waited)."""


class _QueueCollector(Collector):
    """Serves the latest sample of every live :class:`QueueSampler` of this process."""

    def __init__(self) -> None:
        self.samplers: weakref.WeakSet[QueueSampler] = weakref.WeakSet()

    def collect(self) -> Iterator[Metric]:
        yield from self._queue()
        yield from self._human()

    def _human(self) -> Iterator[Metric]:
        waiting = GaugeMetricFamily(
            "workcoord_items_awaiting_human",
            "Items waiting on a person, by work coordinator and reason (approval, stopped).",
            labels=["coordinator", "reason"],
        )
        oldest = GaugeMetricFamily(
            "workcoord_awaiting_human_oldest_seconds",
            "How long the oldest item waiting on a person has waited, by coordinator and reason.",
            labels=["coordinator", "reason"],
        )
        merged: HumanSample = {}
        for sampler in list(self.samplers):
            merged.update(sampler.human)
        for labels, (count, age) in sorted(merged.items()):
            waiting.add_metric(list(labels), count)
            oldest.add_metric(list(labels), age)
        yield waiting
        yield oldest

    def _queue(self) -> Iterator[Metric]:
        families = [
            GaugeMetricFamily(name, documentation, labels=["coordinator", "worker_class"])
            for name, documentation in _QUEUE_FAMILIES
        ]
        merged: QueueSample = {}
        for sampler in list(self.samplers):
            for key, values in sampler.sample.items():
                # Several coordinators in one process see the same database: one value each.
                merged[key] = values
        for labels, values in sorted(merged.items()):
            for family, value in zip(families, values, strict=True):
                family.add_metric(list(labels), value)
        yield from families


class _PoolCollector(Collector):
    def __init__(self) -> None:
        self.engines: weakref.WeakSet[Any] = weakref.WeakSet()

    def collect(self) -> Iterator[Metric]:
        in_use = GaugeMetricFamily(
            "workcoord_db_pool_connections_in_use",
            "Database connections checked out of the coordinator's pool.",
        )
        total = 0
        for engine in list(self.engines):
            checkedout = getattr(engine.pool, "checkedout", None)
            if checkedout is not None:
                total += int(checkedout())
        in_use.add_metric([], total)
        yield in_use


_queue_collector = _QueueCollector()
_pool_collector = _PoolCollector()
REGISTRY.register(_queue_collector)
REGISTRY.register(_pool_collector)


def watch_pool(engine: AsyncEngine) -> None:
    """Count ``engine``'s checked-out connections in ``workcoord_db_pool_connections_in_use``."""
    _pool_collector.engines.add(engine.sync_engine)


STOP_WAIT_SECONDS = 10.0


class QueueSampler:
    """Reads queue depth and class usage every ``interval_seconds`` into :attr:`sample`."""

    def __init__(
        self, store: Store, interval_seconds: float = 10.0, clock: Clock | None = None
    ) -> None:
        self._store = store
        self._clock: Clock = clock or SystemClock()
        self._interval = interval_seconds
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.sample: QueueSample = {}
        self.human: HumanSample = {}

    def start(self) -> None:
        """Sample now and then every interval, in the background; appear in the metrics."""
        _queue_collector.samplers.add(self)
        self._task = asyncio.create_task(self._run(), name="workcoord-queue-sampler")

    async def stop(self) -> None:
        """Stop sampling and leave the metrics. A sample being taken is let finish rather than
        cancelled (unless it hangs past ``STOP_WAIT_SECONDS``): a cancelled query can leave the
        database driver's worker (aiosqlite's thread) answering a loop that has closed by then."""
        _queue_collector.samplers.discard(self)
        self._stopping.set()
        if self._task is None:
            return
        done, _pending = await asyncio.wait({self._task}, timeout=STOP_WAIT_SECONDS)
        if not done:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def refresh(self) -> None:
        """Take one sample now."""
        async with self._store.read() as reader:
            coordinators = await _coordinators(reader)
            sample: QueueSample = {}
            human: HumanSample = {}
            now = self._clock.now()
            for index, coordinator in enumerate(coordinators):
                label = coordinator.coordinator_id if index < MAX_COORDINATOR_LABELS else OTHER
                waiting = await reader.count_awaiting_human(coordinator.coordinator_id)
                for state, (count, since) in waiting.items():
                    key = (label, HUMAN_REASONS[state])
                    age = (now - since).total_seconds() if since is not None else 0.0
                    before_count, before_age = human.get(key, (0, 0.0))
                    human[key] = (before_count + count, max(before_age, age))
                ready = await reader.count_ready(coordinator.coordinator_id)
                live = await reader.live_attempts(coordinator.coordinator_id, None)
                usage, _holding = class_usage(live, coordinator.config.class_capacity)
                for worker_class in set(usage) | set(ready):
                    used, capacity = usage.get(worker_class, (0, 0))
                    key = (label, _class_label(worker_class))
                    before = sample.get(key, (0, 0, 0))
                    sample[key] = (
                        before[0] + ready.get(worker_class, 0),
                        before[1] + used,
                        before[2] + capacity,
                    )
        self.sample = sample
        self.human = human

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.refresh()
            except Exception as exc:  # the database may be away: try again next time
                _log.debug("queue sample failed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._interval)


async def _coordinators(reader: Reader) -> list[Coordinator]:
    found: list[Coordinator] = []
    after = ""
    while len(found) < _MAX_SAMPLED_COORDINATORS:
        page = await reader.list_coordinators(after, _PAGE, None)
        found.extend(page)
        if len(page) < _PAGE:
            break
        after = page[-1].coordinator_id
    return found
