"""Attempts (leases) and the exclusive keys their live ones hold."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, func, select

from workcoord.coordinator.domain.model import Attempt, Item, ItemState

from .. import schema as t
from ..records import hold_keys
from ._base import LIVE, SqlTxBase
from .lanes_items import GET_ITEM
from .rows import ATTEMPTS, ITEMS, LANES

_HOLDS = t.exclusive_holds
_A, _I = t.attempts, t.items

# The hot statements, built once (see RowMap.insert_statement).
_GET_ATTEMPT = select(_A).where(_A.c.lease_id == bindparam("id"))
_L, _OTHER = t.lanes, t.items.alias("other_items")


def _with_lane(states: Any) -> Any:
    """The attempt, its item, the item's lane and the states of the lane's other items (one
    text, comma-separated, aggregated by ``states``)."""
    others = (
        select(states(_OTHER.c.state, ","))
        .where(_OTHER.c.lane_id == _I.c.lane_id, _OTHER.c.item_id != _I.c.item_id)
        .scalar_subquery()
    )
    return (
        select(_A, _I, _L, others.label("other_states"))
        .select_from(
            _A.outerjoin(_I, _I.c.item_id == _A.c.item_id).outerjoin(
                _L, _L.c.lane_id == _I.c.lane_id
            )
        )
        .where(_A.c.lease_id == bindparam("lease_id"))
    )


_ATTEMPT_WITH_LANE = {
    "postgresql": _with_lane(func.string_agg),
    "sqlite": _with_lane(func.group_concat),
}
_LIVE_WHERE = (_A.c.coordinator_id == bindparam("coordinator_id"), _A.c.status.in_(LIVE))
_OF_CLASS = _A.c.worker_class == bindparam("worker_class")
_LIVE = select(_A).where(*_LIVE_WHERE).order_by(_A.c.create_time, _A.c.lease_id)
_LIVE_OF_CLASS = _LIVE.where(_OF_CLASS)
_COUNT_LIVE = select(func.count()).where(*_LIVE_WHERE, _OF_CLASS)


class AttemptsSql(SqlTxBase):
    async def get_attempt(self, lease_id: str) -> Attempt | None:
        held_back = self._pending_attempts
        return await self._held_back_or_stored(held_back, ATTEMPTS, _GET_ATTEMPT, lease_id)

    async def attempt_with_item(self, lease_id: str) -> tuple[Attempt | None, Item | None]:
        """One round trip (a join), unless held-back updates already hold the records."""
        attempt = self._pending_attempts.get(lease_id)
        if attempt is not None:
            item = await self._held_back_or_stored(
                self._pending_items, ITEMS, GET_ITEM, attempt.item_id
            )
            return copy.copy(attempt), item
        # With the item's lane and its other items' states: a Complete needs them next.
        statement = _ATTEMPT_WITH_LANE[self.dialect]
        row = (await self.conn.execute(statement, {"lease_id": lease_id})).first()
        if row is None:
            return None, None
        found = ATTEMPTS.load(row)
        pending = self._pending_items.get(found.item_id)
        if pending is not None:
            return found, copy.copy(pending)
        if row[ATTEMPTS.width] is None:  # no item row (its first column, the item id)
            return found, None
        item = ITEMS.load(row, ATTEMPTS.width)
        lane_at = ATTEMPTS.width + ITEMS.width
        held_back = any(i.lane_id == item.lane_id for i in self._pending_items.values())
        if row[lane_at] is not None and not held_back:
            # Kept for lane_with_state_counts (held-back items would be counted as stored).
            states = row[lane_at + LANES.width]
            counts = Counter(ItemState(s) for s in states.split(",")) if states else Counter()
            self._lane_counts[item.lane_id] = (LANES.load(row, lane_at), dict(counts), item.item_id)
        return found, item

    async def item_attempts(self, item_ids: Sequence[str]) -> list[Attempt]:
        if item_ids:
            await self.write_held_back()
        return await self._list_in(ATTEMPTS, "item_id", item_ids, "item_id", "attempt")

    async def live_attempts(self, coordinator_id: str, worker_class: str | None) -> list[Attempt]:
        await self.write_held_back()
        if worker_class is None:
            rows = await self.conn.execute(_LIVE, {"coordinator_id": coordinator_id})
        else:
            rows = await self.conn.execute(
                _LIVE_OF_CLASS, {"coordinator_id": coordinator_id, "worker_class": worker_class}
            )
        return [ATTEMPTS.load(r) for r in rows.fetchall()]

    async def count_live_attempts(self, coordinator_id: str, worker_class: str) -> int:
        await self.write_held_back()
        params = {"coordinator_id": coordinator_id, "worker_class": worker_class}
        return int((await self.conn.execute(_COUNT_LIVE, params)).scalar_one())

    async def live_exclusive_holders(
        self, coordinator_id: str, keys: Sequence[str]
    ) -> dict[str, str]:
        """Exclusive key -> the lease holding it, for the held ones among ``keys``."""
        rows = await self._rows(
            select(_HOLDS.c.key, _HOLDS.c.lease_id).where(
                _HOLDS.c.coordinator_id == coordinator_id, _HOLDS.c.key.in_(list(keys))
            )
        )
        return {r.key: r.lease_id for r in rows}

    async def lease_request_attempts(
        self, coordinator_id: str, lease_request: str
    ) -> list[Attempt]:
        """The attempts under ``lease_request`` (what one Lease call granted), by lease id."""
        if not lease_request:
            return []
        await self.write_held_back()
        c = t.attempts.c
        return await self._list(
            ATTEMPTS,
            select(t.attempts)
            .where(c.coordinator_id == coordinator_id, c.lease_request == lease_request)
            .order_by(c.lease_id),
        )

    async def insert_attempts(self, attempts: Sequence[Attempt]) -> None:
        """Insert the attempts and their holds: a key held twice breaks the primary key of
        ``exclusive_holds`` (one live holder per exclusive key). Held-back attempt updates are
        written first: one may end the item's live attempt, and an item has one at most."""
        if attempts:
            await self.write_held_back()
        await self._insert(ATTEMPTS, attempts)
        holds = [
            {"coordinator_id": a.coordinator_id, "key": key, "lease_id": a.lease_id}
            for a in attempts
            for key in hold_keys(a)
        ]
        if holds:
            await self.conn.execute(_HOLDS.insert(), holds)

    async def update_attempts(self, attempts: Sequence[Attempt]) -> None:
        """Write the attempts; the ones that ended release their holds."""
        for attempt in attempts:
            # A copy: the record as it is now is what gets written (see write_held_back).
            self._pending_attempts[attempt.lease_id] = copy.copy(attempt)
        await self._release_holds([a for a in attempts if a.status.value not in LIVE])
