"""The worker pools, in memory: the twin of :mod:`..sql.workers`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import LIVE_ATTEMPT_STATUSES, JsonObject, Worker

from ..records import first_sighting
from ._base import MemoryTxBase, copied


class WorkersMemory(MemoryTxBase):
    async def get_worker(self, coordinator_id: str, worker_id: str) -> Worker | None:
        worker = self.tables.workers.get((coordinator_id, worker_id))
        return copied(worker) if worker else None

    async def list_workers(self, coordinator_id: str, after_id: str, limit: int) -> list[Worker]:
        found = [
            w
            for (cid, wid), w in self.tables.workers.items()
            if cid == coordinator_id and wid > after_id
        ]
        found.sort(key=lambda w: w.worker_id)
        return [copied(w) for w in found[:limit]]

    async def count_workers(self, coordinator_id: str) -> int:
        return sum(1 for cid, _ in self.tables.workers if cid == coordinator_id)

    async def upsert_worker(self, worker: Worker) -> bool:
        """Register or refresh the worker (keeping its create time); whether it is new."""
        workers = self._w().workers
        key = (worker.coordinator_id, worker.worker_id)
        existing = workers.get(key)
        stored = copied(worker)
        if existing is not None:
            stored.create_time = existing.create_time
        workers[key] = stored
        return existing is None

    async def touch_worker_ask(
        self,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        principal: str,
        worker_classes: Sequence[str] = (),
    ) -> None:
        """Note a lease request: a worker seen for the first time is registered bare (serving
        the classes it asked for)."""
        workers = self._w().workers
        key = (coordinator_id, worker_id)
        existing = workers.get(key)
        if existing is None:
            workers[key] = first_sighting(
                coordinator_id, worker_id, worker_class, principal, self.now, worker_classes
            )
        else:
            workers[key] = dataclasses.replace(
                existing, last_ask_time=self.now, observe_time=self.now
            )

    async def set_worker_fence(
        self, coordinator_id: str, worker_id: str, fence: JsonObject | None
    ) -> None:
        """Set (or, with ``None``, lift) the worker's fence; nothing if it is unknown."""
        workers = self._w().workers
        key = (coordinator_id, worker_id)
        if key in workers:
            workers[key] = dataclasses.replace(workers[key], fence=copied(fence))

    async def delete_worker(self, coordinator_id: str, worker_id: str) -> bool:
        """Forget the worker; whether it was there."""
        return self._w().workers.pop((coordinator_id, worker_id), None) is not None

    async def evict_workers(self, coordinator_id: str, unseen_before: datetime) -> list[str]:
        """Remove the workers unseen since ``unseen_before`` that hold no live attempt."""
        tables = self._w()
        busy = {
            a.worker_id
            for a in tables.attempts.values()
            if a.coordinator_id == coordinator_id and a.status in LIVE_ATTEMPT_STATUSES
        }
        ids = sorted(
            wid
            for (cid, wid), w in tables.workers.items()
            if cid == coordinator_id and w.observe_time < unseen_before and wid not in busy
        )
        for wid in ids:
            del tables.workers[(coordinator_id, wid)]
        return ids
