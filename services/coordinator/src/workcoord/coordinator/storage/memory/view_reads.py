"""What the view cache reads, in memory: the twin of :mod:`..sql.view_reads`."""

from __future__ import annotations

from collections.abc import Sequence

from workcoord.coordinator.domain.model import Lane, Ticket
from workcoord.coordinator.domain.ports import LaneCursor, LaneStamp

from ._base import MemoryTxBase, copied
from .lanes_items import newest_first


class ViewReadsMemory(MemoryTxBase):
    async def lane_stamps(
        self, coordinator_id: str, after: LaneCursor | None, limit: int
    ) -> list[LaneStamp]:
        mine = (
            lane for lane in self.tables.lanes.values() if lane.coordinator_id == coordinator_id
        )
        lanes = newest_first(mine, after)[: max(limit, 0)]
        return [LaneStamp(x.lane_id, x.create_time, x.version) for x in lanes]

    async def get_lanes(self, lane_ids: Sequence[str]) -> list[Lane]:
        found = [self.tables.lanes[i] for i in sorted(set(lane_ids)) if i in self.tables.lanes]
        return [copied(lane) for lane in found]

    async def coordinator_tickets(self, coordinator_id: str) -> list[Ticket]:
        found = [tk for cid, tk in self.tables.tickets.values() if cid == coordinator_id]
        found.sort(key=lambda tk: (tk.key, tk.tracker, tk.lane_id))
        return [copied(tk) for tk in found]
