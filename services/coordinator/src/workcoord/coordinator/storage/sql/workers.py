"""The worker pool of each work coordinator."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, null, select, update

from workcoord.coordinator.domain.model import JsonObject, Worker

from .. import schema as t
from ..records import first_sighting
from ._base import LIVE, SqlTxBase
from .keyset import page_after
from .rows import WORKERS

_W = t.workers.c
_KEY = ["coordinator_id", "worker_id"]


class WorkersSql(SqlTxBase):
    async def get_worker(self, coordinator_id: str, worker_id: str) -> Worker | None:
        return await self._get(
            WORKERS, _W.coordinator_id == coordinator_id, _W.worker_id == worker_id
        )

    async def list_workers(self, coordinator_id: str, after_id: str, limit: int) -> list[Worker]:
        mine = _W.coordinator_id == coordinator_id
        return await self._list(WORKERS, page_after(t.workers, "worker_id", after_id, limit, mine))

    async def count_workers(self, coordinator_id: str) -> int:
        row = await self._one(
            select(func.count()).select_from(t.workers).where(_W.coordinator_id == coordinator_id)
        )
        return int(row[0]) if row is not None else 0

    async def upsert_worker(self, worker: Worker) -> bool:
        """Register or refresh the worker (keeping its create time); whether it is new."""
        existed = await self.get_worker(worker.coordinator_id, worker.worker_id) is not None
        values = WORKERS.values(worker)
        refreshed = {k: v for k, v in values.items() if k not in (*_KEY, "create_time")}
        await self.conn.execute(
            self._upsert(t.workers)
            .values(**values)
            .on_conflict_do_update(index_elements=_KEY, set_=refreshed)
        )
        return not existed

    async def touch_worker_ask(
        self, coordinator_id: str, worker_id: str, worker_class: str, principal: str
    ) -> None:
        """Note a lease request: a worker seen for the first time is registered bare."""
        bare = first_sighting(coordinator_id, worker_id, worker_class, principal, self.now)
        await self.conn.execute(
            self._upsert(t.workers)
            .values(**WORKERS.values(bare))
            .on_conflict_do_update(
                index_elements=_KEY, set_={"last_ask_time": self.now, "observe_time": self.now}
            )
        )

    async def set_worker_fence(
        self, coordinator_id: str, worker_id: str, fence: JsonObject | None
    ) -> None:
        """Set (or, with ``None``, lift) the worker's fence; nothing if it is unknown."""
        await self.conn.execute(
            update(t.workers)
            .where(_W.coordinator_id == coordinator_id, _W.worker_id == worker_id)
            .values(fence=fence if fence is not None else null())
        )

    async def delete_worker(self, coordinator_id: str, worker_id: str) -> bool:
        """Forget the worker; whether it was there."""
        result = await self.conn.execute(
            delete(t.workers).where(_W.coordinator_id == coordinator_id, _W.worker_id == worker_id)
        )
        return bool(result.rowcount)

    async def evict_workers(self, coordinator_id: str, unseen_before: datetime) -> list[str]:
        """Remove the workers unseen since ``unseen_before`` that hold no live attempt."""
        await self.write_held_back()
        busy = select(t.attempts.c.worker_id).where(
            t.attempts.c.coordinator_id == coordinator_id, t.attempts.c.status.in_(LIVE)
        )
        rows = await self._rows(
            select(_W.worker_id)
            .where(
                _W.coordinator_id == coordinator_id,
                _W.observe_time < unseen_before,
                _W.worker_id.not_in(busy),
            )
            .order_by(_W.worker_id)
        )
        ids = [r.worker_id for r in rows]
        if ids:
            await self.conn.execute(
                delete(t.workers).where(_W.coordinator_id == coordinator_id, _W.worker_id.in_(ids))
            )
        return ids
