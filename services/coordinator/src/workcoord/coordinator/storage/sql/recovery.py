"""Recovery as set operations: a batch of expired leases ended in one statement, and the
retries and dead-letters of their items written in one more.

Statements: :mod:`.statements.attempts` (``END_EXPIRED_LEASES``, ``EXPIRED_ITEMS``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import Attempt, Item, RetryPolicy
from workcoord.coordinator.domain.ports import RETRY_FIELDS, ExpiredLease

from ._base import SqlTxBase
from .rows import ATTEMPTS, ITEMS, LANES
from .statements import attempts as sql
from .statements import items as item_sql
from .statements import lanes as lane_sql


class RecoverySql(SqlTxBase):
    async def end_expired_leases(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[ExpiredLease]:
        """One UPDATE … RETURNING ends the batch (the coordinator lock serialises writers, so
        no row lock is needed), one DELETE frees the exclusive holds, then the items and their
        lanes are read with one statement each. Held-back attempt updates (a Heartbeat's
        new expiry) are written first, so the batch sees them."""
        await self.write_held_back()
        params = {"b_coordinator_id": coordinator_id, "now": now, "limit": limit}
        attempts = [ATTEMPTS.load(r) for r in await self._rows(sql.END_EXPIRED_LEASES, params)]
        if not attempts:
            return []
        # RETURNING has no order: the batch is handed back in expiry order.
        attempts.sort(key=lambda a: (a.lease_expire_time, a.lease_id))
        await self._release_holds(attempts)
        items = await self._items_of(attempts)
        lane_ids = sorted({i.lane_id for i in items.values()})
        lanes = (
            await self._list(LANES, lane_sql.LANES_BY_IDS, {"lane_ids": lane_ids})
            if lane_ids
            else []
        )
        policies = {lane.lane_id: lane.retry_policy for lane in lanes}
        found: list[ExpiredLease] = []
        for attempt in attempts:
            item = items.get(attempt.item_id)
            policy = policies.get(item.lane_id, RetryPolicy()) if item else RetryPolicy()
            found.append(ExpiredLease(attempt, item, policy))
        return found

    async def _items_of(self, attempts: Sequence[Attempt]) -> dict[str, Item]:
        """The attempts' items, only :data:`EXPIRED_ITEM_FIELDS` of them (no inputs, evidence
        or other JSON). The retry policy comes as text and each distinct text is decoded once
        (the records are immutable, so items share one)."""
        ids = sorted({a.item_id for a in attempts})
        rows = await self._rows(sql.EXPIRED_ITEMS, {"item_ids": ids})
        policies: dict[str | None, RetryPolicy] = {}
        found: dict[str, Item] = {}
        columns = sql.EXPIRED_ITEM_COLUMNS
        for row in rows:
            stored = row[-1]
            policy = policies.get(stored)
            if policy is None:
                value = json.loads(stored) if stored is not None else None
                policy = policies[stored] = ITEMS.decode_column("retry_policy", value)
            item = ITEMS.load_some(columns, row[:-1], retry_policy=policy)
            found[item.item_id] = item
        return found

    async def write_retries(self, items: Sequence[Item]) -> None:
        """Held-back updates first (they may be of the same items), then RETRY_FIELDS of each
        item (``bulk.unnest_update`` / ``bulk.update_by_key``). On PostgreSQL the ready queue's
        update trigger stands aside for that one statement (``WRITER_KEEPS_QUEUE``) and the
        queue rows of these items are rewritten with two set statements after it: a requeued
        batch enters the queue in one insert, not a trigger call per item."""
        await self.write_held_back()
        if self.dialect != "postgresql" or len(items) < 2:
            await self._update_each(ITEMS, "item_id", items, RETRY_FIELDS)
            return
        await self.conn.execute(item_sql.SET_WRITER_KEEPS_QUEUE, {"on": "on"})
        await self._update_each(ITEMS, "item_id", items, RETRY_FIELDS)
        await self.conn.execute(item_sql.SET_WRITER_KEEPS_QUEUE, {"on": "off"})
        ids = {"item_ids": [item.item_id for item in items]}
        await self.conn.execute(item_sql.SYNC_QUEUE_DELETE, ids)
        await self.conn.execute(item_sql.SYNC_QUEUE_INSERT, ids)
