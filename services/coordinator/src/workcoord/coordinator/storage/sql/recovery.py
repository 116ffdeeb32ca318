"""Recovery as set operations: a batch of expired leases ended in one statement, and the
retries and dead-letters of their items written in one more."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, DateTime, Text, bindparam, delete, select, text, update

from workcoord.coordinator.domain.model import (
    Attempt,
    AttemptStatus,
    DeadLetterReason,
    Item,
    ItemKind,
    ItemState,
    RetryPolicy,
)
from workcoord.coordinator.domain.ports import EXPIRED_ITEM_FIELDS, ExpiredLease

from .. import schema as t
from ._base import LIVE, SqlTxBase
from .rows import ATTEMPTS, LANES

_HOLDS = t.exclusive_holds

# What a retry or a dead-letter changes of an item, in the order of the arrays below.
_RETRY_COLUMNS = (
    "state",
    "not_before",
    "ready_time",
    "dead_letter_reason",
    "current_lease_id",
    "update_time",
)

# PostgreSQL: every item of the batch in one statement, its values as parallel arrays.
_RETRIES_FROM_ARRAYS = text(
    """
    UPDATE items SET state = v.state, not_before = v.not_before, ready_time = v.ready_time,
        dead_letter_reason = v.dead_letter_reason, current_lease_id = v.current_lease_id,
        update_time = v.update_time
    FROM unnest(
        CAST(:item_id AS text[]), CAST(:state AS text[]), CAST(:not_before AS timestamptz[]),
        CAST(:ready_time AS timestamptz[]), CAST(:dead_letter_reason AS text[]),
        CAST(:current_lease_id AS text[]), CAST(:update_time AS timestamptz[])
    ) AS v(item_id, state, not_before, ready_time, dead_letter_reason, current_lease_id,
           update_time)
    WHERE items.item_id = v.item_id
    """
).bindparams(
    bindparam("item_id", type_=ARRAY(Text)),
    bindparam("state", type_=ARRAY(Text)),
    bindparam("not_before", type_=ARRAY(DateTime(timezone=True))),
    bindparam("ready_time", type_=ARRAY(DateTime(timezone=True))),
    bindparam("dead_letter_reason", type_=ARRAY(Text)),
    bindparam("current_lease_id", type_=ARRAY(Text)),
    bindparam("update_time", type_=ARRAY(DateTime(timezone=True))),
)

# SQLite: the same update, run once per item (executemany).
_RETRY_EACH = (
    update(t.items)
    .where(t.items.c.item_id == bindparam("b_item_id"))
    .values({name: bindparam(name) for name in _RETRY_COLUMNS})
)


def _retry_values(item: Item) -> dict[str, Any]:
    reason = item.dead_letter_reason
    return {
        "state": item.state.value,
        "not_before": item.not_before,
        "ready_time": item.ready_time,
        "dead_letter_reason": reason.value if reason is not None else None,
        "current_lease_id": item.current_lease_id,
        "update_time": item.update_time,
    }


def _expired_item(values: dict[str, Any]) -> Item:
    """An item of :data:`EXPIRED_ITEM_FIELDS` from its columns (stored as ``rows`` does)."""
    values["kind"] = ItemKind(values["kind"])
    values["state"] = ItemState(values["state"])
    reason = values["dead_letter_reason"]
    values["dead_letter_reason"] = DeadLetterReason(reason) if reason is not None else None
    values["retry_policy"] = _retry_policy(values["retry_policy"])
    return Item(**values)


def _retry_policy(data: dict[str, Any] | None) -> RetryPolicy:
    """A stored retry policy (unset fields left out; JSON gives 5.0 back as 5)."""
    data = data or {}

    def number(name: str) -> float | None:
        value = data.get(name)
        return float(value) if value is not None else None

    attempts = data.get("maximum_attempts")
    return RetryPolicy(
        initial_interval=number("initial_interval"),
        backoff_coefficient=number("backoff_coefficient"),
        maximum_interval=number("maximum_interval"),
        maximum_attempts=int(attempts) if attempts is not None else None,
    )


class RecoverySql(SqlTxBase):
    async def end_expired_leases(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[ExpiredLease]:
        """One UPDATE … RETURNING ends the batch (the coordinator lock serialises writers, so
        no row lock is needed), one DELETE frees the exclusive holds, then the items and their
        lanes are read with one statement each."""
        c = t.attempts.c
        due = (
            select(c.lease_id)
            .where(
                c.coordinator_id == coordinator_id,
                c.status.in_(LIVE),
                c.lease_expire_time <= now,
            )
            .order_by(c.lease_expire_time, c.lease_id)
            .limit(limit)
        )
        ended = (
            update(t.attempts)
            .where(c.lease_id.in_(due.scalar_subquery()))
            .values(status=AttemptStatus.DEAD.value, end_time=now)
            .returning(*t.attempts.c)
        )
        attempts = [ATTEMPTS.load(r) for r in await self._rows(ended)]
        if not attempts:
            return []
        # RETURNING has no order: the batch is handed back in expiry order.
        attempts.sort(key=lambda a: (a.lease_expire_time, a.lease_id))
        keyed = [a.lease_id for a in attempts if a.exclusive_key]
        if keyed:
            await self.raw.execute(delete(_HOLDS).where(_HOLDS.c.lease_id.in_(keyed)))
        items = await self._items_of(attempts)
        lane_ids = sorted({i.lane_id for i in items.values()})
        policies: dict[str, RetryPolicy] = {}
        if lane_ids:
            lanes = select(t.lanes).where(t.lanes.c.lane_id.in_(lane_ids))
            for row in await self._rows(lanes):
                lane = LANES.load(row)
                policies[lane.lane_id] = lane.retry_policy
        found: list[ExpiredLease] = []
        for attempt in attempts:
            item = items.get(attempt.item_id)
            policy = policies.get(item.lane_id, RetryPolicy()) if item else RetryPolicy()
            found.append(ExpiredLease(attempt, item, policy))
        return found

    async def _items_of(self, attempts: Sequence[Attempt]) -> dict[str, Item]:
        """The attempts' items, only :data:`EXPIRED_ITEM_FIELDS` of them (no inputs, evidence
        or other JSON to decode but the retry policy)."""
        ids = sorted({a.item_id for a in attempts})
        columns = [t.items.c[name] for name in EXPIRED_ITEM_FIELDS]
        rows = await self._rows(select(*columns).where(t.items.c.item_id.in_(ids)))
        # By position (the columns are selected in EXPIRED_ITEM_FIELDS order): building a
        # mapping per row costs more than the rest of the decoding.
        return {r[0]: _expired_item(dict(zip(EXPIRED_ITEM_FIELDS, r, strict=True))) for r in rows}

    async def write_retries(self, items: Sequence[Item]) -> None:
        if not items:
            return
        await self.write_pending()
        if self.dialect == "postgresql":
            columns: dict[str, list[Any]] = {"item_id": [i.item_id for i in items]}
            for name in _RETRY_COLUMNS:
                columns[name] = []
            for item in items:
                for name, value in _retry_values(item).items():
                    columns[name].append(value)
            await self.raw.execute(_RETRIES_FROM_ARRAYS, columns)
            return
        params = [{"b_item_id": i.item_id, **_retry_values(i)} for i in items]
        await self.raw.execute(_RETRY_EACH, params)
