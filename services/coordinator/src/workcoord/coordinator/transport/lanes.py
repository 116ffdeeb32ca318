"""``LaneService``: lanes, their items, blockers and tickets, and people's decisions on items."""

from __future__ import annotations

from typing import TypeVar

from google.protobuf.message import Message

from workcoord.api.v1 import lane_pb2, lane_pb2_grpc
from workcoord.coordinator.domain.model import LaneState, Ticket
from workcoord.coordinator.domain.specs import Decision
from workcoord.kit.fingerprint import request_fingerprint

from . import mapping as m
from .base import EngineServicer, Rpc, rpc

__all__ = ["LaneServicer"]

_DecisionRequest = TypeVar(
    "_DecisionRequest",
    bound=lane_pb2.ApproveItemRequest
    | lane_pb2.DenyItemRequest
    | lane_pb2.ResumeItemRequest
    | lane_pb2.CancelItemRequest
    | lane_pb2.RetryItemRequest,
)
_ItemResponse = TypeVar("_ItemResponse", bound=Message)
_PauseRequest = TypeVar(
    "_PauseRequest", bound=lane_pb2.PauseLaneRequest | lane_pb2.ResumeLaneRequest
)
_LaneResponse = TypeVar("_LaneResponse", bound=Message)


def _decision(
    request_type: type[_DecisionRequest],
    decision: Decision,
    response: type[_ItemResponse],
) -> Rpc[_DecisionRequest, _ItemResponse]:
    """The method that makes ``decision`` on the item the request names and answers with it."""
    return rpc(
        request_type,
        lambda s, p, r: s.engine.decide_item(
            p, r.coordinator_id, r.lane_id, r.item_id, decision, r.note
        ),
        lambda detail: response(item=m.item_detail_to_pb(detail)),
    )


def _pause(
    request_type: type[_PauseRequest], pause: bool, response_type: type[_LaneResponse]
) -> Rpc[_PauseRequest, _LaneResponse]:
    """The method that pauses the lane the request names (resumes it when ``pause`` is False)
    and answers with the lane."""
    return rpc(
        request_type,
        lambda s, p, r: s.engine.pause_lane(p, r.coordinator_id, r.lane_id, r.reason, pause),
        lambda detail: response_type(lane=m.lane_to_pb(detail)),
    )


class LaneServicer(EngineServicer, lane_pb2_grpc.LaneServiceServicer):
    CreateLane = rpc(
        lane_pb2.CreateLaneRequest,
        lambda s, p, r: s.engine.create_lane(
            p,
            r.coordinator_id,
            m.lane_spec_from_pb(r.lane),
            r.request_id,
            fingerprint=request_fingerprint(r),
        ),
        lambda detail: lane_pb2.CreateLaneResponse(lane=m.lane_to_pb(detail)),
    )

    ListLanes = rpc(
        lane_pb2.ListLanesRequest,
        lambda s, p, r: s.engine.list_lanes(
            p,
            r.coordinator_id,
            m.enum_from_pb(lane_pb2.Lane.State, r.state, LaneState),
            r.page_size,
            r.page_token,
        ),
        lambda page: m.page_to_pb(lane_pb2.ListLanesResponse, "lanes", page, m.lane_to_pb),
    )

    GetLane = rpc(
        lane_pb2.GetLaneRequest,
        lambda s, p, r: s.engine.get_lane(p, r.coordinator_id, r.lane_id),
        lambda detail: lane_pb2.GetLaneResponse(lane=m.lane_to_pb(detail)),
    )

    PauseLane = _pause(lane_pb2.PauseLaneRequest, True, lane_pb2.PauseLaneResponse)
    ResumeLane = _pause(lane_pb2.ResumeLaneRequest, False, lane_pb2.ResumeLaneResponse)

    CancelLane = rpc(
        lane_pb2.CancelLaneRequest,
        lambda s, p, r: s.engine.cancel_lane(p, r.coordinator_id, r.lane_id, r.reason),
        lambda detail: lane_pb2.CancelLaneResponse(lane=m.lane_to_pb(detail)),
    )

    AddBlocker = rpc(
        lane_pb2.AddBlockerRequest,
        lambda s, p, r: s.engine.add_blocker(p, r.coordinator_id, r.lane_id, r.blocker.reason),
        lambda detail: lane_pb2.AddBlockerResponse(lane=m.lane_to_pb(detail)),
    )

    ResolveBlocker = rpc(
        lane_pb2.ResolveBlockerRequest,
        lambda s, p, r: s.engine.resolve_blocker(p, r.coordinator_id, r.lane_id, r.blocker_id),
        lambda detail: lane_pb2.ResolveBlockerResponse(lane=m.lane_to_pb(detail)),
    )

    LinkTicket = rpc(
        lane_pb2.LinkTicketRequest,
        lambda s, p, r: s.engine.link_ticket(
            p,
            r.coordinator_id,
            r.lane_id,
            Ticket("", r.ticket.tracker, r.ticket.key, r.ticket.url),
        ),
        lambda detail: lane_pb2.LinkTicketResponse(lane=m.lane_to_pb(detail)),
    )

    CreateItem = rpc(
        lane_pb2.CreateItemRequest,
        lambda s, p, r: s.engine.create_item(
            p,
            r.coordinator_id,
            r.lane_id,
            m.item_spec_from_pb(r.item),
            r.request_id,
            fingerprint=request_fingerprint(r),
        ),
        lambda detail: lane_pb2.CreateItemResponse(item=m.item_detail_to_pb(detail)),
    )

    GetItem = rpc(
        lane_pb2.GetItemRequest,
        lambda s, p, r: s.engine.get_item(p, r.coordinator_id, r.lane_id, r.item_id),
        lambda detail: lane_pb2.GetItemResponse(item=m.item_detail_to_pb(detail)),
    )

    ApproveItem = _decision(
        lane_pb2.ApproveItemRequest, Decision.APPROVE, lane_pb2.ApproveItemResponse
    )
    DenyItem = _decision(lane_pb2.DenyItemRequest, Decision.DENY, lane_pb2.DenyItemResponse)
    ResumeItem = _decision(lane_pb2.ResumeItemRequest, Decision.RESUME, lane_pb2.ResumeItemResponse)
    CancelItem = _decision(lane_pb2.CancelItemRequest, Decision.CANCEL, lane_pb2.CancelItemResponse)
    RetryItem = _decision(lane_pb2.RetryItemRequest, Decision.RETRY, lane_pb2.RetryItemResponse)
