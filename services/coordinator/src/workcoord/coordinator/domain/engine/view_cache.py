"""The view's lanes, kept per work coordinator between calls and brought up to date from the log.

A view shows every lane of a page with its items, their attempts, blockers and tickets. Read
and rebuilt in full on every call, that is ten thousand items for a coordinator of five hundred
lanes. The cache keeps, per work coordinator, each lane's details as they were at a revision R.
A view at revision N (read in one snapshot) reuses a cached lane unless

- an event in (R, N] names the lane: every change to a lane, its items, their attempts, its
  blockers or its tickets appends such an event in the same transaction (the log is gap-free
  per work coordinator, so none is missed);
- the lane's version (moved by every write of the lane) differs from the one read now;
- a live attempt of the lane differs from the one read now (a heartbeat moves the expiry and
  the progress of a lease without an event);
- its tickets differ from those read now (a ticket sync records when it looked, with no event
  when nothing changed);

and reloads only the lanes that fail those checks. Everything else the view shows (the work
coordinator, workers, capacity, pending actions, escalations) is read afresh on every call,
and the view is the same for every caller allowed to read it. So a cached answer equals a
fresh build at the same revision.

The cache is per process (each replica keeps its own; the checks read the shared database).
It is bounded: at most ``max_items`` items in all, dropping the least recently used work
coordinators first, and a work coordinator unused for ``idle_seconds`` is dropped.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..model import Attempt, Ticket
from ..results import LaneDetail

# A lease as the view shows what a heartbeat changes of it.
LeaseStamp = tuple[str, str, object, str]


def lease_stamps(attempts: Sequence[Attempt]) -> frozenset[LeaseStamp]:
    """What can change of live attempts without an event: expiry and progress (heartbeats)."""
    return frozenset(
        (a.lease_id, a.status.value, a.lease_expire_time, a.progress) for a in attempts if a.live
    )


@dataclass(frozen=True, slots=True)
class CachedLane:
    """One lane's details at the snapshot's revision (``surroundings`` left unset: they are the
    coordinator's, set per call) and the stamps of its live attempts."""

    detail: LaneDetail
    live: frozenset[LeaseStamp]

    @classmethod
    def of(cls, detail: LaneDetail) -> CachedLane:
        attempts = [a for i in detail.items for a in detail.attempts.get(i.item_id, ())]
        return cls(detail, lease_stamps(attempts))

    def still_valid(self, version: int, live: frozenset[LeaseStamp], tickets: list[Ticket]) -> bool:
        """Whether nothing the log does not record has changed since it was read: the lane's
        version, its live leases and its tickets are what they were."""
        return (
            self.detail.lane.version == version
            and self.live == live
            and self.detail.tickets == tickets
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A work coordinator's cached lanes, each valid at ``revision`` (immutable: a call that
    brings it up to date installs a new one)."""

    revision: int
    lanes: Mapping[str, CachedLane]

    def size(self) -> int:
        """How many items it holds (what bounds the cache)."""
        return sum(len(c.detail.items) for c in self.lanes.values())


class ViewCache:
    """Snapshots per work coordinator, least recently used first out."""

    def __init__(
        self,
        *,
        max_items: int = 50_000,
        idle_seconds: float = 600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_items = max_items
        self.idle_seconds = idle_seconds
        self._monotonic = monotonic
        # Work coordinator -> (snapshot, its size, when last used); least recently used first.
        self._snapshots: OrderedDict[str, tuple[Snapshot, int, float]] = OrderedDict()

    def get(self, coordinator_id: str) -> Snapshot | None:
        now = self._monotonic()
        self._drop_idle(now)
        held = self._snapshots.get(coordinator_id)
        if held is None:
            return None
        self._snapshots[coordinator_id] = (held[0], held[1], now)
        self._snapshots.move_to_end(coordinator_id)
        return held[0]

    def put(self, coordinator_id: str, snapshot: Snapshot) -> None:
        """Keep ``snapshot`` unless a newer one is already held (calls may finish out of order)."""
        held = self._snapshots.get(coordinator_id)
        if held is not None and held[0].revision > snapshot.revision:
            return
        size = snapshot.size()
        if size > self.max_items:
            self._snapshots.pop(coordinator_id, None)
            return
        self._snapshots[coordinator_id] = (snapshot, size, self._monotonic())
        self._snapshots.move_to_end(coordinator_id)
        total = sum(s for _, s, _ in self._snapshots.values())
        while total > self.max_items:
            _, (_, dropped, _) = self._snapshots.popitem(last=False)
            total -= dropped

    def forget(self, coordinator_id: str) -> None:
        self._snapshots.pop(coordinator_id, None)

    def __len__(self) -> int:
        return len(self._snapshots)

    def _drop_idle(self, now: float) -> None:
        cutoff = now - self.idle_seconds
        while self._snapshots:
            oldest = next(iter(self._snapshots))
            if self._snapshots[oldest][2] >= cutoff:
                break
            del self._snapshots[oldest]
