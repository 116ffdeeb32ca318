"""Recovery as set operations, in memory: the twin of :mod:`..sql.recovery`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import (
    LIVE_ATTEMPT_STATUSES,
    AttemptStatus,
    Item,
    RetryPolicy,
)
from workcoord.coordinator.domain.ports import EXPIRED_ITEM_FIELDS, RETRY_FIELDS, ExpiredLease

from ._base import MemoryTxBase, copied


class RecoveryMemory(MemoryTxBase):
    async def end_expired_leases(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[ExpiredLease]:
        tables = self._w()
        due = sorted(
            (
                a
                for a in tables.attempts.values()
                if a.coordinator_id == coordinator_id
                and a.status in LIVE_ATTEMPT_STATUSES
                and a.lease_expire_time <= now
            ),
            key=lambda a: (a.lease_expire_time, a.lease_id),
        )[:limit]
        found: list[ExpiredLease] = []
        for stored in due:
            attempt = dataclasses.replace(stored, status=AttemptStatus.DEAD, end_time=now)
            tables.attempts[attempt.lease_id] = attempt
            item = tables.items.get(attempt.item_id)
            lane = tables.lanes.get(item.lane_id) if item else None
            policy = lane.retry_policy if lane else RetryPolicy()
            loaded = Item(**{f: getattr(item, f) for f in EXPIRED_ITEM_FIELDS}) if item else None
            found.append(ExpiredLease(copied(attempt), loaded, policy))
        self._release_holds(due)
        return found

    async def write_retries(self, items: Sequence[Item]) -> None:
        stored = self._w().items
        for item in items:
            current = stored.get(item.item_id)
            if current is None:
                continue
            changed = {name: getattr(item, name) for name in RETRY_FIELDS}
            stored[item.item_id] = dataclasses.replace(current, **changed)
