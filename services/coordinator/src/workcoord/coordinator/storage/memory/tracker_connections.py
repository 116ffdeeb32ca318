"""Tracker connections, in memory: the twin of :mod:`..sql.tracker_connections`."""

from __future__ import annotations

from workcoord.coordinator.domain.tickets import TrackerConnection

from ._base import MemoryTxBase, copied, insert_new


class TrackerConnectionsMemory(MemoryTxBase):
    async def insert_tracker_connection(self, connection: TrackerConnection) -> None:
        insert_new(
            self._w().tracker_connections,
            [connection],
            lambda c: c.tracker_id,
            "pk_tracker_connections",
        )

    async def update_tracker_connection(self, connection: TrackerConnection) -> None:
        stored = self._w().tracker_connections
        if connection.tracker_id in stored:
            stored[connection.tracker_id] = copied(connection)

    async def delete_tracker_connection(self, tracker_id: str) -> bool:
        return self._w().tracker_connections.pop(tracker_id, None) is not None

    async def get_tracker_connection(self, tracker_id: str) -> TrackerConnection | None:
        found = self.tables.tracker_connections.get(tracker_id)
        return copied(found) if found else None

    async def list_tracker_connections(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[TrackerConnection]:
        found = sorted(
            (
                c
                for c in self.tables.tracker_connections.values()
                if c.coordinator_id == coordinator_id and c.tracker_id > after_id
            ),
            key=lambda c: c.tracker_id,
        )
        return [copied(c) for c in found[:limit]]
