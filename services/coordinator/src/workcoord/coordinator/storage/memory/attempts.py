"""Attempts and their exclusive holds, in memory: the twin of :mod:`..sql.attempts`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from workcoord.coordinator.domain.model import LIVE_ATTEMPT_STATUSES, Attempt, Item, Worker
from workcoord.coordinator.domain.ports import ClassLoads

from ..records import hold_keys
from ._base import MemoryTxBase, copied, refuse, selected


class AttemptsMemory(MemoryTxBase):
    async def get_attempt(self, lease_id: str) -> Attempt | None:
        attempt = self.tables.attempts.get(lease_id)
        return copied(attempt) if attempt else None

    async def attempt_with_item(self, lease_id: str) -> tuple[Attempt | None, Item | None]:
        attempt = await self.get_attempt(lease_id)
        if attempt is None:
            return None, None
        item = self.tables.items.get(attempt.item_id)
        return attempt, copied(item) if item else None

    async def attempts_with_items(
        self, lease_ids: Sequence[str], *, skip_locked: bool = False
    ) -> dict[str, tuple[Attempt | None, Item | None]]:
        found = {lease_id: await self.attempt_with_item(lease_id) for lease_id in lease_ids}
        if skip_locked:
            # One writer at a time: no row is held by another transaction, only unknown
            # leases are left out.
            return {lease_id: pair for lease_id, pair in found.items() if pair[0] is not None}
        return found

    async def item_attempts(self, item_ids: Sequence[str]) -> list[Attempt]:
        wanted = set(item_ids)
        found = [a for a in self.tables.attempts.values() if a.item_id in wanted]
        found.sort(key=lambda a: (a.item_id, a.attempt))
        return [copied(a) for a in found]

    async def worker_and_loads(
        self, coordinator_id: str, worker_id: str, worker_classes: Sequence[str]
    ) -> tuple[Worker | None, ClassLoads]:
        worker = self.tables.workers.get((coordinator_id, worker_id))
        classes = set(worker_classes)
        live = [
            a
            for a in self.tables.attempts.values()
            if a.coordinator_id == coordinator_id
            and a.status in LIVE_ATTEMPT_STATUSES
            and a.worker_class in classes
        ]
        own = selected(
            live, lambda a: a.worker_id == worker_id, lambda a: (a.create_time, a.lease_id)
        )
        loads = ClassLoads(own, dict(Counter(a.worker_class for a in live)))
        return (copied(worker) if worker else None), loads

    async def count_live_attempts(self, coordinator_id: str, worker_class: str) -> int:
        return sum(
            1
            for a in self.tables.attempts.values()
            if a.coordinator_id == coordinator_id
            and a.status in LIVE_ATTEMPT_STATUSES
            and a.worker_class == worker_class
        )

    async def live_attempts(self, coordinator_id: str, worker_class: str | None) -> list[Attempt]:
        return selected(
            self.tables.attempts.values(),
            lambda a: (
                a.coordinator_id == coordinator_id
                and a.status in LIVE_ATTEMPT_STATUSES
                and (worker_class is None or a.worker_class == worker_class)
            ),
            lambda a: (a.create_time, a.lease_id),
        )

    async def live_exclusive_holders(
        self, coordinator_id: str, keys: Sequence[str]
    ) -> dict[str, str]:
        """Exclusive key -> the lease holding it, for the held ones among ``keys``."""
        holds = self.tables.holds
        return {k: holds[(coordinator_id, k)] for k in keys if (coordinator_id, k) in holds}

    async def lease_request_attempts(
        self, coordinator_id: str, lease_request: str
    ) -> list[Attempt]:
        """The attempts under ``lease_request`` (what one Lease call granted), by lease id."""
        return selected(
            self.tables.attempts.values(),
            lambda a: (
                a.coordinator_id == coordinator_id
                and bool(lease_request)
                and a.lease_request == lease_request
            ),
            lambda a: a.lease_id,
        )

    def _check_one_live_per_item(self, attempt: Attempt) -> None:
        """The partial unique index ``uq_attempts_one_live_per_item``."""
        if attempt.status not in LIVE_ATTEMPT_STATUSES:
            return
        for other in self.tables.attempts.values():
            if (
                other.item_id == attempt.item_id
                and other.lease_id != attempt.lease_id
                and other.status in LIVE_ATTEMPT_STATUSES
            ):
                refuse("uq_attempts_one_live_per_item")

    async def insert_attempts(self, attempts: Sequence[Attempt]) -> None:
        """Insert the attempts and their holds: a key held twice breaks the primary key of
        the holds (one live holder per exclusive key)."""
        tables = self._w()
        for attempt in attempts:
            if attempt.lease_id in tables.attempts:
                refuse("pk_attempts")
            if attempt.item_id not in tables.items:
                refuse("fk_attempts_item_id_items")
            self._check_one_live_per_item(attempt)
            tables.attempts[attempt.lease_id] = copied(attempt)
        for attempt in attempts:
            for key in hold_keys(attempt):
                if (attempt.coordinator_id, key) in tables.holds:
                    refuse("pk_exclusive_holds")
                tables.holds[(attempt.coordinator_id, key)] = attempt.lease_id

    async def update_attempts(self, attempts: Sequence[Attempt]) -> None:
        """Write the attempts; the ones that ended release their holds."""
        tables = self._w()
        for attempt in attempts:
            if attempt.lease_id not in tables.attempts:
                continue
            self._check_one_live_per_item(attempt)
            tables.attempts[attempt.lease_id] = copied(attempt)
        self._release_holds(a for a in attempts if a.status not in LIVE_ATTEMPT_STATUSES)
