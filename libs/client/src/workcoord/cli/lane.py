"""``workcoord lane``: create a lane from a JSON file, get one, list them (pause, resume and
cancel: :mod:`workcoord.cli.items`)."""

from __future__ import annotations

import argparse

from google.protobuf import field_mask_pb2

from workcoord.api.v1 import lane_pb2
from workcoord.cli.common import (
    EXIT_USAGE,
    CliError,
    add_client_flags,
    add_command_group,
    add_paging_flags,
    enum_names,
    load_message,
    parse_limit,
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

    update = sub.add_parser(
        "update", help="edit a lane: its title, priority or budget (the budget: humans only)"
    )
    update.add_argument("lane_id", metavar="LANE_ID")
    update.add_argument("--title", default=None)
    update.add_argument("--priority", type=int, default=None)
    update.add_argument(
        "--budget-cost",
        default=None,
        metavar="DOLLARS",
        help="the lane's lifetime cost limit in dollars (none: no limit; the budget flags set "
        "the whole budget)",
    )
    update.add_argument(
        "--budget-tokens",
        default=None,
        metavar="N",
        help="the lane's lifetime token limit (none: no limit)",
    )
    update.add_argument("--etag", default="", help="refuse the change if the lane moved since")
    set_call(update, _update_request, lambda c: c.lanes.UpdateLane)

    for parser in (create, get, list_, update):
        add_output_flag(parser)
    add_client_flags((create, get, list_, update), coordinator=True)
    register_lane_decisions(sub)
    register_lane_parts(sub)


def _create_request(args: argparse.Namespace) -> lane_pb2.CreateLaneRequest:
    return lane_pb2.CreateLaneRequest(
        coordinator_id=args.coordinator_id,
        lane=load_message(args.file, lane_pb2.Lane()),
        request_id=args.request_id,
    )


def _update_request(args: argparse.Namespace) -> lane_pb2.UpdateLaneRequest:
    """The fields given, and an update mask naming them. The budget flags set the lane's whole
    budget: a limit whose flag is not given is none (give both to keep both)."""
    lane = lane_pb2.Lane(etag=args.etag)
    changed: list[str] = []
    if args.title is not None:
        lane.title = args.title
        changed.append("title")
    if args.priority is not None:
        lane.priority = args.priority
        changed.append("priority")
    if args.budget_cost is not None or args.budget_tokens is not None:
        for flag, field, dollars in (
            (args.budget_cost, "cost_micros", True),
            (args.budget_tokens, "tokens", False),
        ):
            value = parse_limit(flag, dollars=dollars) if flag is not None else None
            if value is not None:
                setattr(lane.budget, field, value)
        lane.budget.SetInParent()
        changed.append("budget")
    if not changed:
        raise CliError("nothing to change: give at least one field flag", EXIT_USAGE)
    return lane_pb2.UpdateLaneRequest(
        coordinator_id=args.coordinator_id,
        lane_id=args.lane_id,
        lane=lane,
        update_mask=field_mask_pb2.FieldMask(paths=changed),
    )
