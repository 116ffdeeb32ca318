"""Usage roll-ups, in memory: the twin of :mod:`..sql.usage`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from workcoord.coordinator.domain.model import UsageScope, UsageTotal

from ._base import MemoryTxBase

_TOTALS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micros",
)


class UsageMemory(MemoryTxBase):
    async def add_usage(self, totals: Sequence[UsageTotal]) -> None:
        stored = self._w().usage_totals
        for total in totals:
            key = (total.coordinator_id, total.scope, total.day, total.key)
            before = stored.get(key)
            if before is None:
                stored[key] = dataclasses.replace(total)
            else:
                added = {n: getattr(before, n) + getattr(total, n) for n in _TOTALS}
                stored[key] = dataclasses.replace(before, **added)

    async def usage_totals(
        self,
        coordinator_id: str,
        scope: UsageScope,
        day: str,
        keys: Sequence[str] | None = None,
    ) -> list[UsageTotal]:
        wanted = None if keys is None else set(keys)
        found = [
            dataclasses.replace(u)
            for (cid, s, d, k), u in self.tables.usage_totals.items()
            if cid == coordinator_id and s == scope and d == day and (wanted is None or k in wanted)
        ]
        if keys is None:
            return sorted(found, key=lambda u: (-u.cost_micros, u.key))
        return sorted(found, key=lambda u: u.key)

    async def usage_days(
        self, coordinator_id: str, scope: UsageScope, key: str, since: str
    ) -> list[UsageTotal]:
        found = [
            dataclasses.replace(u)
            for (cid, s, d, k), u in self.tables.usage_totals.items()
            if cid == coordinator_id and s == scope and k == key and d and d >= since
        ]
        return sorted(found, key=lambda u: u.day)
