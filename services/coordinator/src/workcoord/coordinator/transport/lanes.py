"""``LaneService``: lanes, their items, blockers and tickets, and people's decisions on items.

Each RPC is one method: read the request into the engine command's input, call the engine as
the caller (:func:`~.gate.caller`), map the answer back to protobuf."""

from __future__ import annotations

from workcoord.api.v1 import lane_pb2, lane_pb2_grpc
from workcoord.coordinator.domain.inputs import (
    AddBlockerInput,
    CancelLaneInput,
    CreateItemInput,
    CreateLaneInput,
    DecideItemInput,
    GetItemInput,
    LinkTicketInput,
    ListLanesInput,
    PauseLaneInput,
    ResolveBlockerInput,
    UpdateLaneInput,
)
from workcoord.coordinator.domain.model import LaneState, Ticket
from workcoord.coordinator.domain.results import ItemDetail
from workcoord.coordinator.domain.specs import Decision
from workcoord.kit.fingerprint import request_fingerprint

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller

__all__ = ["LaneServicer"]


class LaneServicer(EngineServicer, lane_pb2_grpc.LaneServiceServicer):
    async def CreateLane(
        self, request: lane_pb2.CreateLaneRequest, context: Context
    ) -> lane_pb2.CreateLaneResponse:
        command = CreateLaneInput(
            coordinator_id=request.coordinator_id,
            spec=m.lane_spec_from_pb(request.lane),
            request_id=request.request_id,
            fingerprint=request_fingerprint(request),
        )
        detail = await self.engine.lanes.create_lane(caller().principal, command)
        return lane_pb2.CreateLaneResponse(lane=m.lane_to_pb(detail))

    async def ListLanes(
        self, request: lane_pb2.ListLanesRequest, context: Context
    ) -> lane_pb2.ListLanesResponse:
        query = ListLanesInput(
            coordinator_id=request.coordinator_id,
            state=m.enum_from_pb(lane_pb2.Lane.State, request.state, LaneState),
            page_size=request.page_size,
            page_token=request.page_token,
        )
        page = await self.engine.lanes.list_lanes(caller().principal, query)
        return m.page_to_pb(lane_pb2.ListLanesResponse, "lanes", page, m.lane_to_pb)

    async def GetLane(
        self, request: lane_pb2.GetLaneRequest, context: Context
    ) -> lane_pb2.GetLaneResponse:
        detail = await self.engine.lanes.get_lane(
            caller().principal, request.coordinator_id, request.lane_id
        )
        return lane_pb2.GetLaneResponse(lane=m.lane_to_pb(detail))

    async def UpdateLane(
        self, request: lane_pb2.UpdateLaneRequest, context: Context
    ) -> lane_pb2.UpdateLaneResponse:
        paths = list(request.update_mask.paths) or m.populated_paths(request.lane)
        command = UpdateLaneInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            edit=m.lane_edit_from_pb(request.lane, paths),
            etag=request.lane.etag,
        )
        detail = await self.engine.lanes.update_lane(caller().principal, command)
        return lane_pb2.UpdateLaneResponse(lane=m.lane_to_pb(detail))

    async def PauseLane(
        self, request: lane_pb2.PauseLaneRequest, context: Context
    ) -> lane_pb2.PauseLaneResponse:
        command = PauseLaneInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            pause=True,
            reason=request.reason,
        )
        detail = await self.engine.lanes.pause_lane(caller().principal, command)
        return lane_pb2.PauseLaneResponse(lane=m.lane_to_pb(detail))

    async def ResumeLane(
        self, request: lane_pb2.ResumeLaneRequest, context: Context
    ) -> lane_pb2.ResumeLaneResponse:
        command = PauseLaneInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            pause=False,
            reason=request.reason,
        )
        detail = await self.engine.lanes.pause_lane(caller().principal, command)
        return lane_pb2.ResumeLaneResponse(lane=m.lane_to_pb(detail))

    async def CancelLane(
        self, request: lane_pb2.CancelLaneRequest, context: Context
    ) -> lane_pb2.CancelLaneResponse:
        command = CancelLaneInput(
            coordinator_id=request.coordinator_id, lane_id=request.lane_id, reason=request.reason
        )
        detail = await self.engine.lanes.cancel_lane(caller().principal, command)
        return lane_pb2.CancelLaneResponse(lane=m.lane_to_pb(detail))

    async def AddBlocker(
        self, request: lane_pb2.AddBlockerRequest, context: Context
    ) -> lane_pb2.AddBlockerResponse:
        command = AddBlockerInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            reason=request.blocker.reason,
        )
        detail = await self.engine.lanes.add_blocker(caller().principal, command)
        return lane_pb2.AddBlockerResponse(lane=m.lane_to_pb(detail))

    async def ResolveBlocker(
        self, request: lane_pb2.ResolveBlockerRequest, context: Context
    ) -> lane_pb2.ResolveBlockerResponse:
        command = ResolveBlockerInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            blocker_id=request.blocker_id,
        )
        detail = await self.engine.lanes.resolve_blocker(caller().principal, command)
        return lane_pb2.ResolveBlockerResponse(lane=m.lane_to_pb(detail))

    async def LinkTicket(
        self, request: lane_pb2.LinkTicketRequest, context: Context
    ) -> lane_pb2.LinkTicketResponse:
        ticket = request.ticket
        command = LinkTicketInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            ticket=Ticket("", ticket.tracker, ticket.key, ticket.url),
        )
        detail = await self.engine.lanes.link_ticket(caller().principal, command)
        return lane_pb2.LinkTicketResponse(lane=m.lane_to_pb(detail))

    async def CreateItem(
        self, request: lane_pb2.CreateItemRequest, context: Context
    ) -> lane_pb2.CreateItemResponse:
        command = CreateItemInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            spec=m.item_spec_from_pb(request.item),
            request_id=request.request_id,
            fingerprint=request_fingerprint(request),
        )
        detail = await self.engine.lanes.create_item(caller().principal, command)
        return lane_pb2.CreateItemResponse(item=m.item_detail_to_pb(detail))

    async def GetItem(
        self, request: lane_pb2.GetItemRequest, context: Context
    ) -> lane_pb2.GetItemResponse:
        query = GetItemInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            item_id=request.item_id,
        )
        detail = await self.engine.lanes.get_item(caller().principal, query)
        return lane_pb2.GetItemResponse(item=m.item_detail_to_pb(detail))

    async def ApproveItem(
        self, request: lane_pb2.ApproveItemRequest, context: Context
    ) -> lane_pb2.ApproveItemResponse:
        detail = await self._decide(request, Decision.APPROVE)
        return lane_pb2.ApproveItemResponse(item=m.item_detail_to_pb(detail))

    async def DenyItem(
        self, request: lane_pb2.DenyItemRequest, context: Context
    ) -> lane_pb2.DenyItemResponse:
        detail = await self._decide(request, Decision.DENY)
        return lane_pb2.DenyItemResponse(item=m.item_detail_to_pb(detail))

    async def ResumeItem(
        self, request: lane_pb2.ResumeItemRequest, context: Context
    ) -> lane_pb2.ResumeItemResponse:
        detail = await self._decide(request, Decision.RESUME)
        return lane_pb2.ResumeItemResponse(item=m.item_detail_to_pb(detail))

    async def CancelItem(
        self, request: lane_pb2.CancelItemRequest, context: Context
    ) -> lane_pb2.CancelItemResponse:
        detail = await self._decide(request, Decision.CANCEL)
        return lane_pb2.CancelItemResponse(item=m.item_detail_to_pb(detail))

    async def RetryItem(
        self, request: lane_pb2.RetryItemRequest, context: Context
    ) -> lane_pb2.RetryItemResponse:
        detail = await self._decide(request, Decision.RETRY)
        return lane_pb2.RetryItemResponse(item=m.item_detail_to_pb(detail))

    async def _decide(
        self,
        request: lane_pb2.ApproveItemRequest
        | lane_pb2.DenyItemRequest
        | lane_pb2.ResumeItemRequest
        | lane_pb2.CancelItemRequest
        | lane_pb2.RetryItemRequest,
        decision: Decision,
    ) -> ItemDetail:
        """Make ``decision`` on the item the request names (the five decision RPCs share one
        request shape: coordinator, lane, item, note)."""
        command = DecideItemInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            item_id=request.item_id,
            decision=decision,
            note=request.note,
        )
        return await self.engine.lanes.decide_item(caller().principal, command)
