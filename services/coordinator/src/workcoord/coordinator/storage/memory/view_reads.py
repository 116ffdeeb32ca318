"""What the view cache reads, in memory: the twin of :mod:`..sql.view_reads`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workcoord.coordinator.domain.model import Lane, Ticket
from workcoord.coordinator.domain.ports import LaneStamp

from ._base import MemoryTxBase, copied


class ViewReadsMemory(MemoryTxBase):
    async def lane_stamps(
        self, coordinator_id: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[LaneStamp]:
        lanes = [
            lane
            for lane in self.tables.lanes.values()
            if lane.coordinator_id == coordinator_id
            and (after is None or (lane.create_time, lane.lane_id) < after)
        ]
        lanes.sort(key=lambda lane: (lane.create_time, lane.lane_id), reverse=True)
        return [LaneStamp(x.lane_id, x.create_time, x.version) for x in lanes[: max(limit, 0)]]

    async def get_lanes(self, lane_ids: Sequence[str]) -> list[Lane]:
        found = [self.tables.lanes[i] for i in sorted(set(lane_ids)) if i in self.tables.lanes]
        return [copied(lane) for lane in found]

    async def coordinator_tickets(self, coordinator_id: str) -> list[Ticket]:
        found = [tk for cid, tk in self.tables.tickets.values() if cid == coordinator_id]
        found.sort(key=lambda tk: (tk.key, tk.tracker, tk.lane_id))
        return [copied(tk) for tk in found]
