"""Lanes, blockers, tickets and items, in memory: the twin of :mod:`..sql.lanes_items`."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime

from workcoord.coordinator.domain.leasability import ready_in_store
from workcoord.coordinator.domain.model import Blocker, Item, ItemState, Lane, LaneState, Ticket
from workcoord.coordinator.domain.ports import ClaimPage, ClaimScan, LaneCursor

from ._base import MemoryTxBase, copied, refuse, selected

_HUMAN_STATES = frozenset({ItemState.AWAITING_APPROVAL, ItemState.STOPPED})


def _by_seq(item: Item) -> tuple[int, str]:
    """Items in the order they were created in."""
    return (item.seq, item.item_id)


def ready(item: Item, coordinator_id: str, now: datetime) -> bool:
    """Whether a worker could claim ``item`` at ``now`` as far as a store knows: no gate of
    :data:`~workcoord.coordinator.domain.leasability.STORE_GATES` holds it (queued, not held,
    not backing off; the SQL twin is ``ready_filter``)."""
    return item.coordinator_id == coordinator_id and ready_in_store(item, now)


def newest_first(lanes: Iterable[Lane], after: LaneCursor | None) -> list[Lane]:
    """``lanes`` newest first, by (create_time, lane_id) descending, strictly below ``after``
    (where the previous page ended)."""
    found = [lane for lane in lanes if after is None or (lane.create_time, lane.lane_id) < after]
    found.sort(key=lambda lane: (lane.create_time, lane.lane_id), reverse=True)
    return found


class LanesItemsMemory(MemoryTxBase):
    # -------------------------------------------------------------- lanes

    async def get_lane(self, lane_id: str) -> Lane | None:
        lane = self.tables.lanes.get(lane_id)
        return copied(lane) if lane else None

    async def list_lanes(
        self, coordinator_id: str, state: LaneState | None, after: LaneCursor | None, limit: int
    ) -> list[Lane]:
        mine = (
            lane
            for lane in self.tables.lanes.values()
            if lane.coordinator_id == coordinator_id and (state is None or lane.state == state)
        )
        return [copied(lane) for lane in newest_first(mine, after)[:limit]]

    async def insert_lane(self, lane: Lane) -> None:
        lanes = self._w().lanes
        if lane.lane_id in lanes:
            refuse("pk_lanes")
        if lane.request_id and any(
            other.coordinator_id == lane.coordinator_id and other.request_id == lane.request_id
            for other in lanes.values()
        ):
            refuse("uq_lanes_request")
        if lane.coordinator_id not in self.tables.coordinators:
            refuse("fk_lanes_coordinator_id_work_coordinators")
        lanes[lane.lane_id] = copied(lane)

    async def update_lane(self, lane: Lane) -> None:
        """Write the lane and move its version (on the caller's record too)."""
        lanes = self._w().lanes
        lane.version += 1
        if lane.lane_id in lanes:
            lanes[lane.lane_id] = copied(lane)

    def _check_lane(self, lane_id: str, constraint: str) -> None:
        if lane_id not in self.tables.lanes:
            refuse(constraint)

    async def lane_blockers(self, lane_ids: Sequence[str]) -> list[Blocker]:
        wanted = set(lane_ids)
        found = [b for _, b in self.tables.blockers.values() if b.lane_id in wanted]
        found.sort(key=lambda b: (b.create_time, b.blocker_id))
        return [copied(b) for b in found]

    async def insert_blocker(self, coordinator_id: str, blocker: Blocker) -> None:
        blockers = self._w().blockers
        if blocker.blocker_id in blockers:
            refuse("pk_blockers")
        self._check_lane(blocker.lane_id, "fk_blockers_lane_id_lanes")
        blockers[blocker.blocker_id] = (coordinator_id, copied(blocker))

    async def update_blocker(self, blocker: Blocker) -> None:
        blockers = self._w().blockers
        row = blockers.get(blocker.blocker_id)
        if row is not None:
            stored = dataclasses.replace(
                row[1], open=blocker.open, resolve_time=blocker.resolve_time
            )
            blockers[blocker.blocker_id] = (row[0], stored)

    async def lane_tickets(self, lane_ids: Sequence[str]) -> list[Ticket]:
        wanted = set(lane_ids)
        found = [tk for _, tk in self.tables.tickets.values() if tk.lane_id in wanted]
        found.sort(key=lambda tk: (tk.key, tk.tracker, tk.lane_id))
        return [copied(tk) for tk in found]

    async def insert_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        tickets = self._w().tickets
        key = (ticket.lane_id, ticket.tracker, ticket.key)
        if key in tickets:
            refuse("pk_tickets")
        self._check_lane(ticket.lane_id, "fk_tickets_lane_id_lanes")
        tickets[key] = (coordinator_id, copied(ticket))

    # -------------------------------------------------------------- items

    async def get_item(self, item_id: str) -> Item | None:
        item = self.tables.items.get(item_id)
        return copied(item) if item else None

    async def items_by_ids(self, item_ids: Sequence[str]) -> list[Item]:
        items = self.tables.items
        return [copied(items[i]) for i in sorted(set(item_ids)) if i in items]

    async def lane_items(self, lane_ids: Sequence[str]) -> list[Item]:
        wanted = set(lane_ids)
        found = [i for i in self.tables.items.values() if i.lane_id in wanted]
        found.sort(key=_by_seq)
        return [copied(i) for i in found]

    async def lane_item_states(self, lane_id: str) -> dict[str, ItemState]:
        return {i.key: i.state for i in self.tables.items.values() if i.lane_id == lane_id}

    async def lane_with_state_counts(
        self, lane_id: str
    ) -> tuple[Lane | None, dict[ItemState, int]]:
        lane = await self.get_lane(lane_id)
        if lane is None:
            return None, {}
        counts = Counter(i.state for i in self.tables.items.values() if i.lane_id == lane_id)
        return lane, dict(counts)

    async def queued_items(self, coordinator_id: str) -> list[Item]:
        return selected(
            self.tables.items.values(),
            lambda i: i.coordinator_id == coordinator_id and i.state == ItemState.QUEUED,
            _by_seq,
        )

    async def waiting_items(self, lane_id: str) -> list[Item]:
        return selected(
            self.tables.items.values(),
            lambda i: i.lane_id == lane_id and i.state == ItemState.WAITING,
            _by_seq,
        )

    async def insert_items(self, items: Sequence[Item]) -> None:
        stored = self._w().items
        for item in items:
            if item.item_id in stored:
                refuse("pk_items")
            if any(o.lane_id == item.lane_id and o.key == item.key for o in stored.values()):
                refuse("uq_items_lane_id_key")
            self._check_lane(item.lane_id, "fk_items_lane_id_lanes")
            stored[item.item_id] = copied(item)

    async def update_items(self, items: Sequence[Item]) -> None:
        stored = self._w().items
        for item in items:
            if item.item_id in stored:
                stored[item.item_id] = copied(item)

    async def claim_candidates(self, scan: ClaimScan) -> ClaimPage:
        turns = self.tables.lane_turns
        after = scan.after
        found = [
            ((-i.priority, turns.get(i.lane_id, 0), i.seq), i)
            for i in self.tables.items.values()
            if ready(i, scan.coordinator_id, scan.now) and i.worker_class in scan.worker_classes
        ]
        if after is not None:
            cursor = (-after[0], after[1], after[2])
            found = [(place, i) for place, i in found if place > cursor]
        found.sort(key=lambda pair: pair[0])
        page = found[: scan.limit]
        if not page:
            return ClaimPage([], None)
        (negated, turn, seq), _ = page[-1]
        return ClaimPage([copied(i) for _, i in page], (-negated, turn, seq))

    async def mark_lanes_served(self, lane_ids: Sequence[str], turn: int) -> None:
        turns = self._w().lane_turns
        for lane_id in lane_ids:
            if lane_id in self.tables.lanes:
                turns[lane_id] = turn

    async def has_ready(
        self, coordinator_id: str, worker_classes: tuple[str, ...], now: datetime
    ) -> bool:
        return any(
            ready(i, coordinator_id, now) and i.worker_class in worker_classes
            for i in self.tables.items.values()
        )

    async def count_ready(self, coordinator_id: str) -> dict[str, int]:
        """Queued items per class (held or backing off included)."""
        counts: dict[str, int] = {}
        for item in self.tables.items.values():
            if item.coordinator_id == coordinator_id and item.state == ItemState.QUEUED:
                counts[item.worker_class] = counts.get(item.worker_class, 0) + 1
        return counts

    async def count_awaiting_human(
        self, coordinator_id: str
    ) -> dict[str, tuple[int, datetime | None]]:
        found: dict[str, tuple[int, datetime | None]] = {}
        for item in self.tables.items.values():
            if item.coordinator_id != coordinator_id or item.state not in _HUMAN_STATES:
                continue
            n, since = found.get(item.state.value, (0, None))
            earliest = item.update_time if since is None else min(since, item.update_time)
            found[item.state.value] = (n + 1, earliest)
        return found

    async def next_not_before(
        self, coordinator_id: str, worker_classes: tuple[str, ...], now: datetime
    ) -> datetime | None:
        """When the next queued item of the classes stops backing off (None: none is)."""
        times = [
            i.not_before
            for i in self.tables.items.values()
            if i.coordinator_id == coordinator_id
            and i.worker_class in worker_classes
            and i.state == ItemState.QUEUED
            and i.not_before is not None
            and i.not_before > now
        ]
        return min(times) if times else None
