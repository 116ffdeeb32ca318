"""What the view cache reads to bring its lanes up to date: light rows, no JSON bodies.

Statements: :mod:`.statements.view_reads` and ``LANES_BY_IDS`` of :mod:`.statements.lanes`."""

from __future__ import annotations

from collections.abc import Sequence

from workcoord.coordinator.domain.model import Lane, Ticket
from workcoord.coordinator.domain.ports import LaneCursor, LaneStamp

from ._base import SqlTxBase
from .rows import LANES, TICKETS
from .statements import lanes as lane_sql
from .statements import view_reads as sql


class ViewReadsSql(SqlTxBase):
    async def lane_stamps(
        self, coordinator_id: str, after: LaneCursor | None, limit: int
    ) -> list[LaneStamp]:
        """``list_lanes`` (all states) as (lane id, create time, version)."""
        rows = await self._rows(sql.lane_stamps(coordinator_id, after, limit))
        return [LaneStamp(r.lane_id, r.create_time, r.version) for r in rows]

    async def get_lanes(self, lane_ids: Sequence[str]) -> list[Lane]:
        if not lane_ids:
            return []
        return await self._list(LANES, lane_sql.LANES_BY_IDS, {"lane_ids": list(lane_ids)})

    async def coordinator_tickets(self, coordinator_id: str) -> list[Ticket]:
        """Every ticket of the work coordinator's lanes, in ``lane_tickets``'s order."""
        params = {"coordinator_id": coordinator_id}
        return await self._list(TICKETS, sql.COORDINATOR_TICKETS, params)
