"""``workcoord lane``: create a lane from a JSON file, get one, list them (pause, resume and
cancel: :mod:`workcoord.cli.items`)."""

from __future__ import annotations

import argparse

from workcoord.api.v1 import lane_pb2
from workcoord.cli.common import (
    add_client_flags,
    add_command_group,
    add_paging_flags,
    enum_names,
    load_message,
    request_of,
    set_call,
)
from workcoord.cli.items import register_lane_decisions
from workcoord.cli.lane_parts import register_lane_parts
from workcoord.cli.output import add_output_flag

__all__ = ["register"]

_STATES = enum_names(lane_pb2.Lane.State)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lane create|get|list|pause|resume|cancel|blocker|ticket``."""
    sub = add_command_group(commands, "lane_command", "lane", help="lanes: durable units of work")

    create = sub.add_parser("create", help="create a lane from a JSON file (the Lane resource)")
    create.add_argument(
        "--file", required=True, help="proto3 JSON of the Lane (camelCase); - reads stdin"
    )
    create.add_argument(
        "--request-id", default="", help="idempotency key: a retry with it creates nothing new"
    )
    set_call(create, _create_request, lambda c: c.lanes.CreateLane)

    get = sub.add_parser("get", help="show a lane with its items")
    get.add_argument("lane_id", metavar="LANE_ID")
    set_call(
        get,
        request_of(lane_pb2.GetLaneRequest, "coordinator_id", "lane_id"),
        lambda c: c.lanes.GetLane,
    )

    list_ = sub.add_parser("list", help="list lanes")
    list_.add_argument("--state", choices=_STATES, default=None)
    add_paging_flags(list_)
    set_call(
        list_,
        request_of(lane_pb2.ListLanesRequest, "coordinator_id", "state", paged=True),
        lambda c: c.lanes.ListLanes,
    )

    for parser in (create, get, list_):
        add_output_flag(parser)
    add_client_flags((create, get, list_), coordinator=True)
    register_lane_decisions(sub)
    register_lane_parts(sub)


def _create_request(args: argparse.Namespace) -> lane_pb2.CreateLaneRequest:
    return lane_pb2.CreateLaneRequest(
        coordinator_id=args.coordinator_id,
        lane=load_message(args.file, lane_pb2.Lane()),
        request_id=args.request_id,
    )
