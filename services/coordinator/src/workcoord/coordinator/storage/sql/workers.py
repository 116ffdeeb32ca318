"""The worker pool of each work coordinator.

Statements: :mod:`.statements.workers`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import JsonObject, Worker

from ..records import first_sighting
from ._base import SqlTxBase
from .rows import WORKERS
from .statements import workers as sql


class WorkersSql(SqlTxBase):
    async def get_worker(self, coordinator_id: str, worker_id: str) -> Worker | None:
        params = {"coordinator_id": coordinator_id, "worker_id": worker_id}
        return await self._get(WORKERS, sql.GET_WORKER, params)

    async def list_workers(self, coordinator_id: str, after_id: str, limit: int) -> list[Worker]:
        params = {"coordinator_id": coordinator_id, "after_id": after_id, "limit": limit}
        return await self._list(WORKERS, sql.LIST_WORKERS, params)

    async def count_workers(self, coordinator_id: str) -> int:
        row = await self._one(sql.COUNT_WORKERS, {"coordinator_id": coordinator_id})
        return int(row[0]) if row is not None else 0

    async def upsert_worker(self, worker: Worker) -> bool:
        """Register or refresh the worker (keeping its create time); whether it is new."""
        existed = await self.get_worker(worker.coordinator_id, worker.worker_id) is not None
        await self.conn.execute(sql.UPSERT_WORKER.of(self.dialect), WORKERS.values(worker))
        return not existed

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
        bare = first_sighting(
            coordinator_id, worker_id, worker_class, principal, self.now, worker_classes
        )
        await self.conn.execute(sql.TOUCH_WORKER_ASK.of(self.dialect), WORKERS.values(bare))

    async def set_worker_fence(
        self, coordinator_id: str, worker_id: str, fence: JsonObject | None
    ) -> None:
        """Set (or, with ``None``, lift) the worker's fence; nothing if it is unknown."""
        params: dict[str, object] = {"b_coordinator_id": coordinator_id, "b_worker_id": worker_id}
        if fence is None:
            await self.conn.execute(sql.LIFT_FENCE, params)
        else:
            await self.conn.execute(sql.SET_FENCE, {**params, "fence": fence})

    async def delete_worker(self, coordinator_id: str, worker_id: str) -> bool:
        """Forget the worker; whether it was there."""
        params = {"coordinator_id": coordinator_id, "worker_id": worker_id}
        return bool(await self._rowcount(sql.DELETE_WORKER, params))

    async def evict_workers(self, coordinator_id: str, unseen_before: datetime) -> list[str]:
        """Remove the workers unseen since ``unseen_before`` that hold no live attempt
        (held-back attempt updates written first: one may end a worker's last live one)."""
        await self.write_held_back()
        params = {"coordinator_id": coordinator_id, "unseen_before": unseen_before}
        ids = [r.worker_id for r in await self._rows(sql.EVICTABLE_WORKERS, params)]
        if ids:
            doomed = {"coordinator_id": coordinator_id, "worker_ids": ids}
            await self.conn.execute(sql.DELETE_WORKERS, doomed)
        return ids
