"""What the view cache reads to bring its lanes up to date: light rows, no JSON bodies."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, or_, select

from workcoord.coordinator.domain.model import Lane, Ticket
from workcoord.coordinator.domain.ports import LaneStamp

from .. import schema as t
from ._base import SqlTxBase
from .rows import LANES, TICKETS


class ViewReadsSql(SqlTxBase):
    async def lane_stamps(
        self, coordinator_id: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[LaneStamp]:
        """``list_lanes`` (all states) as (lane id, create time, version): the same order and
        cursor, from the index of the lanes by coordinator and creation, plus the version."""
        c = t.lanes.c
        stmt = select(c.lane_id, c.create_time, c.version).where(c.coordinator_id == coordinator_id)
        if after is not None:
            stmt = stmt.where(
                or_(c.create_time < after[0], and_(c.create_time == after[0], c.lane_id < after[1]))
            )
        stmt = stmt.order_by(c.create_time.desc(), c.lane_id.desc()).limit(limit)
        return [LaneStamp(r.lane_id, r.create_time, r.version) for r in await self._rows(stmt)]

    async def get_lanes(self, lane_ids: Sequence[str]) -> list[Lane]:
        return await self._list_in(LANES, "lane_id", lane_ids, "lane_id")

    async def coordinator_tickets(self, coordinator_id: str) -> list[Ticket]:
        """Every ticket of the work coordinator's lanes, in ``lane_tickets``'s order."""
        c = t.tickets.c
        stmt = (
            select(t.tickets)
            .join(t.lanes, t.lanes.c.lane_id == c.lane_id)
            .where(t.lanes.c.coordinator_id == coordinator_id)
            .order_by(c.key, c.tracker, c.lane_id)
        )
        return await self._list(TICKETS, stmt)
