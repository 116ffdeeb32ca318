"""``TrackerService``: a work coordinator's tracker connections. The credential goes in and
never comes back out: the answer says ``credential_set`` and a fingerprint."""

from __future__ import annotations

from workcoord.api.v1 import tracker_pb2, tracker_pb2_grpc
from workcoord.coordinator.domain.inputs import (
    CreateTrackerConnectionInput,
    DeleteTrackerConnectionInput,
    ListTrackerConnectionsInput,
    UpdateTrackerConnectionInput,
)

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller
from .mapping.trackers import tracker_connection_to_pb

__all__ = ["TrackerServicer"]


class TrackerServicer(EngineServicer, tracker_pb2_grpc.TrackerServiceServicer):
    async def CreateTrackerConnection(
        self, request: tracker_pb2.CreateTrackerConnectionRequest, context: Context
    ) -> tracker_pb2.CreateTrackerConnectionResponse:
        c = request.tracker_connection
        command = CreateTrackerConnectionInput(
            coordinator_id=request.coordinator_id,
            tracker=c.tracker,
            credential=c.credential,
            projects=tuple(c.projects),
            base_url=c.base_url,
            done_status=c.done_status,
        )
        created = await self.engine.tracker_connections.create(caller().principal, command)
        return tracker_pb2.CreateTrackerConnectionResponse(
            tracker_connection=tracker_connection_to_pb(created)
        )

    async def ListTrackerConnections(
        self, request: tracker_pb2.ListTrackerConnectionsRequest, context: Context
    ) -> tracker_pb2.ListTrackerConnectionsResponse:
        listing = ListTrackerConnectionsInput(
            request.coordinator_id, request.page_size, request.page_token
        )
        page = await self.engine.tracker_connections.list_connections(caller().principal, listing)
        return m.page_to_pb(
            tracker_pb2.ListTrackerConnectionsResponse,
            "tracker_connections",
            page,
            tracker_connection_to_pb,
        )

    async def UpdateTrackerConnection(
        self, request: tracker_pb2.UpdateTrackerConnectionRequest, context: Context
    ) -> tracker_pb2.UpdateTrackerConnectionResponse:
        c = request.tracker_connection
        paths = list(request.update_mask.paths) or m.populated_paths(c)
        command = UpdateTrackerConnectionInput(
            coordinator_id=request.coordinator_id,
            tracker_id=request.tracker_id,
            update_mask=tuple(paths),
            credential=c.credential,
            projects=tuple(c.projects),
            base_url=c.base_url,
            done_status=c.done_status,
        )
        updated = await self.engine.tracker_connections.update(caller().principal, command)
        return tracker_pb2.UpdateTrackerConnectionResponse(
            tracker_connection=tracker_connection_to_pb(updated)
        )

    async def DeleteTrackerConnection(
        self, request: tracker_pb2.DeleteTrackerConnectionRequest, context: Context
    ) -> tracker_pb2.DeleteTrackerConnectionResponse:
        command = DeleteTrackerConnectionInput(request.coordinator_id, request.tracker_id)
        await self.engine.tracker_connections.delete(caller().principal, command)
        return tracker_pb2.DeleteTrackerConnectionResponse()
