"""The verdict: the invariant checker over the whole event log, and the acknowledged writes held
against the final state.

Read straight from PostgreSQL in one REPEATABLE READ snapshot, after every service stopped.
An acknowledged write is *lost* when the final state does not show it:

- a created lane that does not exist or lacks items it was created with;
- a granted lease with no attempt, or no ``ITEM_LEASED`` event naming it;
- a start whose attempt never started;
- a completion whose attempt is not COMPLETED (or has no ``ITEM_SUCCEEDED``), a failure whose
  attempt is not FAILED (or has no ``ITEM_FAILED``);
- a heartbeat whose acknowledged expiry the attempt did not get: recovery expired it earlier.

A lease the load abandoned must have been expired by recovery (``ATTEMPT_EXPIRED``); one still
live is reported as ``unexpired_abandoned``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.chaos.load import Ledger
from tests.support.invariants import check_invariants, load_events
from workcoord.coordinator.domain.model import AttemptStatus, EventType
from workcoord.coordinator.storage.sql.engine import make_engine
from workcoord.coordinator.storage.sql.store import SqlStore
from workcoord.kit.clock import SystemClock

__all__ = ["Verdict", "audit", "live_attempt_count"]

# Timestamps cross the wire as nanoseconds and are stored as microseconds.
_TOLERANCE = timedelta(milliseconds=5)


@dataclass
class Verdict:
    checker: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    unexpired_abandoned: list[str] = field(default_factory=list)
    events: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)

    def categories(self) -> dict[str, int]:
        """The checker's findings sorted into the soak's headline counts."""
        counts = {"double_live": 0, "capacity_overruns": 0, "gaps": 0, "other_invariants": 0}
        for line in self.checker:
            if "capacity" in line:
                counts["capacity_overruns"] += 1
            elif "gap-free" in line or ("revision" in line and "last event" in line):
                counts["gaps"] += 1
            elif "live attempts" in line or "while" in line or "live holders" in line:
                counts["double_live"] += 1
            else:
                counts["other_invariants"] += 1
        return counts

    def violations(self) -> int:
        return len(self.checker) + len(self.lost) + len(self.unexpired_abandoned)


def _store(database_url: str) -> SqlStore:
    return SqlStore(make_engine(database_url, pool_size=4), SystemClock())


async def live_attempt_count(database_url: str, coordinator_id: str) -> int:
    """How many attempts of ``coordinator_id`` are live (LEASED or RUNNING) right now."""
    store = _store(database_url)
    try:
        async with store.read() as reader:
            return len(await reader.live_attempts(coordinator_id, None))
    finally:
        await store.close()


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


async def audit(database_url: str, coordinator_id: str, ledger: Ledger) -> Verdict:
    """Check the invariants and account for every write in ``ledger``."""
    verdict = Verdict()
    store = _store(database_url)
    try:
        async with store.read() as reader:
            verdict.checker = await check_invariants(
                reader, coordinator_id, private_values=sorted(ledger.tokens)
            )
            events = await load_events(reader, coordinator_id)
            lane_ids = sorted(ledger.lanes)
            lanes = {}
            for lane_id in lane_ids:
                lane = await reader.get_lane(lane_id)
                if lane is not None:
                    lanes[lane_id] = lane
            items = await reader.lane_items(lane_ids) if lane_ids else []
            item_ids = [i.item_id for i in items]
            attempts = {a.lease_id: a for a in await reader.item_attempts(item_ids)}
    finally:
        await store.close()
    verdict.events = len(events)
    for item in items:
        verdict.outcomes[f"item {item.state.value}"] += 1
    for each in attempts.values():
        verdict.outcomes[f"attempt {each.status.value}"] += 1

    by_type: dict[EventType, dict[str, datetime]] = {}
    for event in events:
        if event.lease_id:
            by_type.setdefault(event.type, {})[event.lease_id] = _naive(event.time)
    items_per_lane = Counter(item.lane_id for item in items)
    lost = verdict.lost

    for lane_id, count in ledger.lanes.items():
        if lane_id not in lanes:
            lost.append(f"created lane {lane_id} does not exist")
        elif items_per_lane[lane_id] != count:
            lost.append(f"lane {lane_id} has {items_per_lane[lane_id]} items, created with {count}")
    leased = by_type.get(EventType.ITEM_LEASED, {})
    for lease_id, item_id in ledger.leases.items():
        attempt = attempts.get(lease_id)
        if attempt is None or attempt.item_id != item_id:
            lost.append(f"granted lease {lease_id} has no attempt of item {item_id}")
        elif lease_id not in leased:
            lost.append(f"granted lease {lease_id} has no ITEM_LEASED event")
    for lease_id in ledger.started:
        attempt = attempts.get(lease_id)
        if attempt is None or attempt.start_time is None:
            lost.append(f"started lease {lease_id} never started")
    ends = (
        (ledger.completed, AttemptStatus.COMPLETED, EventType.ITEM_SUCCEEDED, "completed"),
        (ledger.failed, AttemptStatus.FAILED, EventType.ITEM_FAILED, "failed"),
    )
    for acknowledged, status, event_type, verb in ends:
        recorded = by_type.get(event_type, {})
        for lease_id in acknowledged:
            attempt = attempts.get(lease_id)
            if attempt is None or attempt.status != status:
                found = "missing" if attempt is None else attempt.status.value
                lost.append(f"{verb} lease {lease_id} is {found}")
            elif lease_id not in recorded:
                lost.append(f"{verb} lease {lease_id} has no {event_type.value} event")
    expired = by_type.get(EventType.ATTEMPT_EXPIRED, {})
    for lease_id, expiry in ledger.heartbeats.items():
        when = expired.get(lease_id)
        if when is not None and when + _TOLERANCE < expiry:
            lost.append(
                f"lease {lease_id} expired at {when.isoformat()} before its acknowledged "
                f"heartbeat expiry {expiry.isoformat()}"
            )
    for lease_id in ledger.abandoned:
        attempt = attempts.get(lease_id)
        if attempt is None:
            continue  # already reported as lost
        if attempt.live:
            verdict.unexpired_abandoned.append(f"abandoned lease {lease_id} is still live")
        elif lease_id not in expired:
            verdict.unexpired_abandoned.append(
                f"abandoned lease {lease_id} ended {attempt.status.value} without ATTEMPT_EXPIRED"
            )
    return verdict


def summary(verdict: Verdict) -> dict[str, Any]:
    return {
        "events": verdict.events,
        "outcomes": dict(sorted(verdict.outcomes.items())),
    }
