"""``LaneService``: lanes, their items, blockers and tickets, and people's decisions on items."""

from __future__ import annotations

from typing import Any

from workcoord.api.v1 import lane_pb2, lane_pb2_grpc
from workcoord.coordinator.domain.model import LaneState, Ticket
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
        p = caller().principal
        detail = await self.engine.create_lane(
            p,
            request.coordinator_id,
            m.lane_spec_from_pb(request.lane),
            request.request_id,
            fingerprint=request_fingerprint(request),
        )
        return lane_pb2.CreateLaneResponse(lane=m.lane_to_pb(detail))

    async def ListLanes(
        self, request: lane_pb2.ListLanesRequest, context: Context
    ) -> lane_pb2.ListLanesResponse:
        p = caller().principal
        state_name = lane_pb2.Lane.State.Name(request.state)
        state = None if state_name == "STATE_UNSPECIFIED" else LaneState(state_name)
        page = await self.engine.list_lanes(
            p, request.coordinator_id, state, request.page_size, request.page_token
        )
        return m.page_to_pb(lane_pb2.ListLanesResponse, "lanes", page, m.lane_to_pb)

    async def GetLane(
        self, request: lane_pb2.GetLaneRequest, context: Context
    ) -> lane_pb2.GetLaneResponse:
        p = caller().principal
        detail = await self.engine.get_lane(p, request.coordinator_id, request.lane_id)
        return lane_pb2.GetLaneResponse(lane=m.lane_to_pb(detail))

    async def PauseLane(
        self, request: lane_pb2.PauseLaneRequest, context: Context
    ) -> lane_pb2.PauseLaneResponse:
        p = caller().principal
        detail = await self.engine.pause_lane(
            p, request.coordinator_id, request.lane_id, request.reason, True
        )
        return lane_pb2.PauseLaneResponse(lane=m.lane_to_pb(detail))

    async def ResumeLane(
        self, request: lane_pb2.ResumeLaneRequest, context: Context
    ) -> lane_pb2.ResumeLaneResponse:
        p = caller().principal
        detail = await self.engine.pause_lane(
            p, request.coordinator_id, request.lane_id, request.reason, False
        )
        return lane_pb2.ResumeLaneResponse(lane=m.lane_to_pb(detail))

    async def CancelLane(
        self, request: lane_pb2.CancelLaneRequest, context: Context
    ) -> lane_pb2.CancelLaneResponse:
        p = caller().principal
        detail = await self.engine.cancel_lane(
            p, request.coordinator_id, request.lane_id, request.reason
        )
        return lane_pb2.CancelLaneResponse(lane=m.lane_to_pb(detail))

    async def AddBlocker(
        self, request: lane_pb2.AddBlockerRequest, context: Context
    ) -> lane_pb2.AddBlockerResponse:
        p = caller().principal
        detail = await self.engine.add_blocker(
            p, request.coordinator_id, request.lane_id, request.blocker.reason
        )
        return lane_pb2.AddBlockerResponse(lane=m.lane_to_pb(detail))

    async def ResolveBlocker(
        self, request: lane_pb2.ResolveBlockerRequest, context: Context
    ) -> lane_pb2.ResolveBlockerResponse:
        p = caller().principal
        detail = await self.engine.resolve_blocker(
            p, request.coordinator_id, request.lane_id, request.blocker_id
        )
        return lane_pb2.ResolveBlockerResponse(lane=m.lane_to_pb(detail))

    async def LinkTicket(
        self, request: lane_pb2.LinkTicketRequest, context: Context
    ) -> lane_pb2.LinkTicketResponse:
        p = caller().principal
        t = request.ticket
        detail = await self.engine.link_ticket(
            p, request.coordinator_id, request.lane_id, Ticket("", t.tracker, t.key, t.url)
        )
        return lane_pb2.LinkTicketResponse(lane=m.lane_to_pb(detail))

    async def CreateItem(
        self, request: lane_pb2.CreateItemRequest, context: Context
    ) -> lane_pb2.CreateItemResponse:
        p = caller().principal
        detail = await self.engine.create_item(
            p,
            request.coordinator_id,
            request.lane_id,
            m.item_spec_from_pb(request.item),
            request.request_id,
            fingerprint=request_fingerprint(request),
        )
        return lane_pb2.CreateItemResponse(item=m.item_detail_to_pb(detail))

    async def GetItem(
        self, request: lane_pb2.GetItemRequest, context: Context
    ) -> lane_pb2.GetItemResponse:
        p = caller().principal
        detail = await self.engine.get_item(
            p, request.coordinator_id, request.lane_id, request.item_id
        )
        return lane_pb2.GetItemResponse(item=m.item_detail_to_pb(detail))

    async def _decide(self, request: Any, context: Context, decision: Decision) -> lane_pb2.Item:
        p = caller().principal
        detail = await self.engine.decide_item(
            p, request.coordinator_id, request.lane_id, request.item_id, decision, request.note
        )
        return m.item_detail_to_pb(detail)

    async def ApproveItem(
        self, request: lane_pb2.ApproveItemRequest, context: Context
    ) -> lane_pb2.ApproveItemResponse:
        item = await self._decide(request, context, Decision.APPROVE)
        return lane_pb2.ApproveItemResponse(item=item)

    async def DenyItem(
        self, request: lane_pb2.DenyItemRequest, context: Context
    ) -> lane_pb2.DenyItemResponse:
        item = await self._decide(request, context, Decision.DENY)
        return lane_pb2.DenyItemResponse(item=item)

    async def ResumeItem(
        self, request: lane_pb2.ResumeItemRequest, context: Context
    ) -> lane_pb2.ResumeItemResponse:
        item = await self._decide(request, context, Decision.RESUME)
        return lane_pb2.ResumeItemResponse(item=item)

    async def CancelItem(
        self, request: lane_pb2.CancelItemRequest, context: Context
    ) -> lane_pb2.CancelItemResponse:
        item = await self._decide(request, context, Decision.CANCEL)
        return lane_pb2.CancelItemResponse(item=item)

    async def RetryItem(
        self, request: lane_pb2.RetryItemRequest, context: Context
    ) -> lane_pb2.RetryItemResponse:
        item = await self._decide(request, context, Decision.RETRY)
        return lane_pb2.RetryItemResponse(item=item)
