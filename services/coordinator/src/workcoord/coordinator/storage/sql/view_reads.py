"""What the view cache reads to bring its lanes up to date: light rows, no JSON bodies."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from workcoord.coordinator.domain.model import Lane, Ticket
from workcoord.coordinator.domain.ports import LaneCursor, LaneStamp

from .. import schema as t
from ._base import SqlTxBase
from .keyset import newest_first
from .rows import LANES, TICKETS


class ViewReadsSql(SqlTxBase):
    async def lane_stamps(
        self, coordinator_id: str, after: LaneCursor | None, limit: int
    ) -> list[LaneStamp]:
        """``list_lanes`` (all states) as (lane id, create time, version): the same order and
        cursor, from the index of the lanes by coordinator and creation, plus the version."""
        c = t.lanes.c
        stmt = select(c.lane_id, c.create_time, c.version).where(c.coordinator_id == coordinator_id)
        stmt = newest_first(stmt, c.create_time, c.lane_id, after, limit)
        return [LaneStamp(r.lane_id, r.create_time, r.version) for r in await self._rows(stmt)]

    async def get_lanes(self, lane_ids: Sequence[str]) -> list[Lane]:
        return await self._list_in(LANES, "lane_id", lane_ids, "lane_id")

    async def coordinator_tickets(self, coordinator_id: str) -> list[Ticket]:
        """Every ticket of the work coordinator's lanes, in ``lane_tickets``'s order. Found
        through the lanes (``ix_lanes_coordinator_created``, then the tickets' primary key,
        which starts with the lane id): no index leads from ``tickets.coordinator_id``."""
        c = t.tickets.c
        stmt = (
            select(t.tickets)
            .join(t.lanes, t.lanes.c.lane_id == c.lane_id)
            .where(t.lanes.c.coordinator_id == coordinator_id)
            .order_by(c.key, c.tracker, c.lane_id)
        )
        return await self._list(TICKETS, stmt)
