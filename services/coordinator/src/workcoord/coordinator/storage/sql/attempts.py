"""Attempts (leases) and the exclusive keys their live ones hold.

Statements: :mod:`.statements.attempts`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from workcoord.coordinator.domain.model import (
    Attempt,
    Coordinator,
    Item,
    ItemState,
    UsageTotal,
    Worker,
)
from workcoord.coordinator.domain.ports import ClassLoads

from .. import schema as t
from ..records import hold_keys
from ._base import SqlTxBase, changed_params, copied
from .rows import ATTEMPTS, COORDINATORS, ITEMS, LANES, USAGE_TOTALS, WORKERS
from .statements import attempts as sql
from .statements import bulk
from .statements import coordinators as coordinator_sql
from .statements import items as item_sql
from .statements import usage as usage_sql


class AttemptsSql(SqlTxBase):
    async def get_attempt(self, lease_id: str) -> Attempt | None:
        held_back = self._pending_attempts
        by_id = sql.GET_ATTEMPT_FOR_UPDATE if self.lock_attempts else sql.GET_ATTEMPT
        return await self._held_back_or_stored(held_back, ATTEMPTS, by_id, lease_id)

    async def attempt_with_item(self, lease_id: str) -> tuple[Attempt | None, Item | None]:
        """One round trip (``ATTEMPT_WITH_LANE``), unless held-back updates already hold the
        records."""
        attempt = self._pending_attempts.get(lease_id)
        if attempt is not None:
            item = await self._held_back_or_stored(
                self._pending_items, ITEMS, item_sql.GET_ITEM, attempt.item_id
            )
            return copied(attempt), item
        # With the item's lane and its other items' states: a Complete needs them next.
        read = sql.ATTEMPT_WITH_LANE_FOR_UPDATE if self.lock_attempts else sql.ATTEMPT_WITH_LANE
        row = await self._one(read.of(self.dialect), {"lease_id": lease_id})
        if row is None:
            return None, None
        found = self._load_attempt(row)
        pending = self._pending_items.get(found.item_id)
        if pending is not None:
            return found, copied(pending)
        if row[ATTEMPTS.width] is None:  # no item row (its first column, the item id)
            return found, None
        item = self._load_item(row, ATTEMPTS.width)
        lane_at = ATTEMPTS.width + ITEMS.width
        held_back = any(i.lane_id == item.lane_id for i in self._pending_items.values())
        if row[lane_at] is not None and not held_back:
            # Kept for lane_with_state_counts (held-back items would be counted as stored).
            states = row[lane_at + LANES.width]
            counts = Counter(ItemState(s) for s in states.split(",")) if states else Counter()
            self._lane_counts[item.lane_id] = (LANES.load(row, lane_at), dict(counts), item.item_id)
        return found, item

    async def attempts_with_items(
        self, lease_ids: Sequence[str], *, skip_locked: bool = False
    ) -> dict[str, tuple[Attempt | None, Item | None]]:
        """One round trip (``ATTEMPTS_WITH_ITEMS``) for the leases whose records are not held
        back; the held-back ones read as ``attempt_with_item`` reads them. ``skip_locked``:
        ``ATTEMPTS_WITH_ITEMS_SKIP_LOCKED`` (on PostgreSQL; SQLite renders no lock), and the
        leases it did not return are left out (held by another transaction, or unknown)."""
        found: dict[str, tuple[Attempt | None, Item | None]] = {}
        stored = [lease_id for lease_id in lease_ids if lease_id not in self._pending_attempts]
        if stored:
            read = sql.ATTEMPTS_WITH_ITEMS
            if self.lock_attempts:
                read = (
                    sql.ATTEMPTS_WITH_ITEMS_SKIP_LOCKED
                    if skip_locked
                    else sql.ATTEMPTS_WITH_ITEMS_FOR_UPDATE
                )
            for row in await self._rows(read, {"lease_ids": stored}):
                attempt = self._load_attempt(row)
                pending = self._pending_items.get(attempt.item_id)
                if pending is not None:
                    item: Item | None = copied(pending)
                elif row[ATTEMPTS.width] is None:  # no item row
                    item = None
                else:
                    item = self._load_item(row, ATTEMPTS.width)
                found[attempt.lease_id] = (attempt, item)
        for lease_id in lease_ids:
            if lease_id in self._pending_attempts:
                found[lease_id] = await self.attempt_with_item(lease_id)
        if skip_locked:
            return {lease_id: found[lease_id] for lease_id in lease_ids if lease_id in found}
        return {lease_id: found.get(lease_id, (None, None)) for lease_id in lease_ids}

    async def _coordinators_and_attempts(
        self, coordinator_ids: Sequence[str], lease_ids: Sequence[str]
    ) -> tuple[dict[str, Coordinator | None], dict[str, tuple[Attempt | None, Item | None]]]:
        """``coordinators_and_attempts`` in place (``SqlStore.extend`` on PostgreSQL): ONE
        statement, ``coordinators:COORDINATORS_AND_ATTEMPTS``, no lock; each attempt's row
        version kept for ``extend_attempts``."""
        coordinators: dict[str, Coordinator | None] = dict.fromkeys(coordinator_ids)
        found: dict[str, tuple[Attempt | None, Item | None]] = {}
        params = {"coordinator_ids": list(coordinator_ids), "lease_ids": list(lease_ids)}
        at = COORDINATORS.width + 2  # the coordinator's columns, the switch and the epoch
        item_at = at + ATTEMPTS.width
        for row in await self._rows(coordinator_sql.COORDINATORS_AND_ATTEMPTS, params):
            cid = row[0]
            if coordinators[cid] is None:
                coordinators[cid] = self._load_coordinator(row)
            if row[at] is None:  # no attempt of it was named
                continue
            attempt = self._load_attempt(row, at)
            self._versions[attempt.lease_id] = row[-1]
            item = None if row[item_at] is None else self._load_item(row, item_at)
            found[attempt.lease_id] = (attempt, item)
        in_order = {lease_id: found[lease_id] for lease_id in lease_ids if lease_id in found}
        return coordinators, in_order

    async def item_attempts(self, item_ids: Sequence[str]) -> list[Attempt]:
        if not item_ids:
            return []
        await self.write_held_back()
        return await self._list(ATTEMPTS, sql.ITEM_ATTEMPTS, {"item_ids": list(item_ids)})

    async def live_attempts(self, coordinator_id: str, worker_class: str | None) -> list[Attempt]:
        await self.write_held_back()
        if worker_class is None:
            return await self._list(ATTEMPTS, sql.LIVE_ATTEMPTS, {"coordinator_id": coordinator_id})
        params = {"coordinator_id": coordinator_id, "worker_class": worker_class}
        return await self._list(ATTEMPTS, sql.LIVE_ATTEMPTS_OF_CLASS, params)

    async def worker_and_loads(
        self, coordinator_id: str, worker_id: str, worker_classes: Sequence[str]
    ) -> tuple[Worker | None, ClassLoads]:
        """One round trip (``WORKER_AND_LOADS``): ``get_worker``, the worker's own live attempts
        of ``worker_classes`` in lease order, and each class's count of live attempts."""
        await self.write_held_back()
        params = {
            "coordinator_id": coordinator_id,
            "worker_id": worker_id,
            "worker_classes": list(worker_classes),
        }
        worker: Worker | None = None
        own: list[Attempt] = []
        live: dict[str, int] = {}
        counted = WORKERS.width + ATTEMPTS.width
        for row in await self._rows(sql.WORKER_AND_LOADS, params):
            if row[counted] is not None:  # a class's count
                live[row[counted]] = int(row[counted + 1])
            elif row[WORKERS.width] is None:  # no attempt: the worker's row
                worker = WORKERS.load(row)
            else:
                own.append(ATTEMPTS.load(row, WORKERS.width))
        own.sort(key=lambda a: (a.create_time, a.lease_id))
        return worker, ClassLoads(own, live)

    async def count_live_attempts(self, coordinator_id: str, worker_class: str) -> int:
        await self.write_held_back()
        params = {"coordinator_id": coordinator_id, "worker_class": worker_class}
        return int((await self.conn.execute(sql.COUNT_LIVE_ATTEMPTS, params)).scalar_one())

    async def live_exclusive_holders(
        self, coordinator_id: str, keys: Sequence[str]
    ) -> dict[str, str]:
        """Exclusive key -> the lease holding it, for the held ones among ``keys``. The holds
        are written as they change (never held back)."""
        params = {"coordinator_id": coordinator_id, "keys": list(keys)}
        return {r.key: r.lease_id for r in await self._rows(sql.EXCLUSIVE_HOLDERS, params)}

    async def lease_request_attempts(
        self, coordinator_id: str, lease_request: str
    ) -> list[Attempt]:
        """The attempts under ``lease_request`` (what one Lease call granted), by lease id."""
        if not lease_request:
            return []
        await self.write_held_back()
        params = {"coordinator_id": coordinator_id, "lease_request": lease_request}
        read = (
            sql.LEASE_REQUEST_ATTEMPTS_FOR_UPDATE
            if self.lock_attempts
            else sql.LEASE_REQUEST_ATTEMPTS
        )
        return await self._list(ATTEMPTS, read, params)

    async def insert_attempts(self, attempts: Sequence[Attempt]) -> None:
        """Insert the attempts and their holds (``INSERT_HOLDS``, at once): a key held twice
        breaks the primary key of ``exclusive_holds`` (one live holder per exclusive key).
        Held-back attempt updates are written first: one may end the item's live attempt, and
        an item has one at most. On PostgreSQL the attempts themselves are then held back like
        updates (read by id from memory, written before any scan, else with the flush): a
        claim's transaction writes them with its items, events and revision, one round trip."""
        if not attempts:
            return
        await self.write_held_back()
        if self.dialect == "postgresql":
            for attempt in attempts:
                self._pending_attempts[attempt.lease_id] = copied(attempt)
                self._attempts_to_insert.add(attempt.lease_id)
        else:
            await self._insert(ATTEMPTS, attempts)
        holds = [
            {"coordinator_id": a.coordinator_id, "key": key, "lease_id": a.lease_id}
            for a in attempts
            for key in hold_keys(a)
        ]
        if holds:
            await self.conn.execute(sql.INSERT_HOLDS, holds)

    async def update_attempts(self, attempts: Sequence[Attempt]) -> None:
        """Hold the attempts' updates back (see :class:`SqlTxBase`); the ones that ended
        release their holds at once (``RELEASE_HOLDS``)."""
        for attempt in attempts:
            # A copy: the record as it is now is what gets written (see write_held_back).
            self._pending_attempts[attempt.lease_id] = copied(attempt)
        await self._release_holds([a for a in attempts if a.status.value not in sql.LIVE])

    async def _extend_unchanged(
        self, extended: Sequence[tuple[Attempt, Sequence[UsageTotal]]]
    ) -> set[str]:
        """``extend_attempts`` in place (``SqlStore.extend`` on PostgreSQL):
        ``bulk:extend_unchanged``, one statement writing the columns that changed of the
        attempts whose rows are still at the version read and free, and adding only their
        roll-ups; the lease ids written."""
        attempts = [attempt for attempt, _ in extended]
        changed = changed_params(ATTEMPTS, "lease_id", attempts, self._stored_attempts)
        if changed is None:  # no column to write: the rows are still confirmed, locked
            changed = [{"b_lease_id": attempt.lease_id} for attempt in attempts]
        for params in changed:
            params["b_version"] = self._versions[params["b_lease_id"]]
        added = [
            {"b_lease_id": attempt.lease_id, **USAGE_TOTALS.values(total)}
            for attempt, totals in extended
            for total in totals
        ]
        statement = bulk.extend_unchanged(
            ATTEMPTS.table,
            changed,
            t.usage_totals,
            usage_sql.KEY,
            usage_sql.TOTALS,
            added,
            self.conn.dialect,
        )
        rows = (await self.conn.exec_driver_sql(*statement)).fetchall()
        return {row[0] for row in rows}
