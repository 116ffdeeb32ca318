"""Tracker connections: a work coordinator's sealed credentials for its ticket trackers.

Statements: :mod:`.statements.trackers`."""

from __future__ import annotations

from workcoord.coordinator.domain.tickets import TrackerConnection

from ._base import SqlTxBase
from .rows import TRACKER_CONNECTIONS
from .statements import trackers as sql


class TrackerConnectionsSql(SqlTxBase):
    async def insert_tracker_connection(self, connection: TrackerConnection) -> None:
        await self._insert(TRACKER_CONNECTIONS, [connection])

    async def update_tracker_connection(self, connection: TrackerConnection) -> None:
        await self._update_each(TRACKER_CONNECTIONS, "tracker_id", [connection])

    async def delete_tracker_connection(self, tracker_id: str) -> bool:
        return await self._rowcount(sql.DELETE_TRACKER_CONNECTION, {"tracker_id": tracker_id}) > 0

    async def get_tracker_connection(self, tracker_id: str) -> TrackerConnection | None:
        params = {"tracker_id": tracker_id}
        return await self._get(TRACKER_CONNECTIONS, sql.GET_TRACKER_CONNECTION, params)

    async def list_tracker_connections(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[TrackerConnection]:
        params = {"coordinator_id": coordinator_id, "after_id": after_id, "limit": limit}
        return await self._list(TRACKER_CONNECTIONS, sql.LIST_TRACKER_CONNECTIONS, params)
