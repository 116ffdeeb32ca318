"""``workcoord view``, ``why`` and ``events``: reading a work coordinator."""

from __future__ import annotations

import argparse

from google.protobuf.message import Message

from workcoord.api.v1 import work_coordinator_pb2
from workcoord.cli.common import add_connection_flags, add_coordinator_flag, run_client_command
from workcoord.cli.output import add_output_flag
from workcoord.client.client import WorkcoordClient

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``view``, ``why`` and ``events``."""
    view = commands.add_parser("view", help="the materialized view of a work coordinator")
    view.add_argument("--page-size", type=int, default=0)
    view.add_argument("--page-token", default="")
    view.set_defaults(handler=_view)

    why = commands.add_parser("why", help="which gate holds an item or lane, and since when")
    target = why.add_mutually_exclusive_group(required=True)
    target.add_argument("--item", dest="item_id", metavar="ITEM_ID")
    target.add_argument("--lane", dest="lane_id", metavar="LANE_ID")
    why.set_defaults(handler=_why)

    events = commands.add_parser("events", help="the event log from a revision on")
    events.add_argument("--since", type=int, default=0, metavar="N", help="events after revision N")
    events.add_argument("--lane", dest="lane_id", default="", metavar="LANE_ID")
    events.add_argument("--item", dest="item_id", default="", metavar="ITEM_ID")
    events.add_argument("--page-size", type=int, default=0)
    events.add_argument("--page-token", default="")
    events.set_defaults(handler=_events)

    for parser in (view, why, events):
        add_output_flag(parser)
        add_coordinator_flag(parser)
        add_connection_flags(parser)


def _view(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        return await client.coordinators.GetView(
            work_coordinator_pb2.GetViewRequest(
                coordinator_id=args.coordinator_id,
                page_size=args.page_size,
                page_token=args.page_token,
            )
        )

    return run_client_command(args, body)


def _why(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        return await client.coordinators.Explain(
            work_coordinator_pb2.ExplainRequest(
                coordinator_id=args.coordinator_id,
                item_id=args.item_id or "",
                lane_id=args.lane_id or "",
            )
        )

    return run_client_command(args, body)


def _events(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        return await client.coordinators.ListEvents(
            work_coordinator_pb2.ListEventsRequest(
                coordinator_id=args.coordinator_id,
                since_revision=args.since,
                lane_id=args.lane_id,
                item_id=args.item_id,
                page_size=args.page_size,
                page_token=args.page_token,
            )
        )

    return run_client_command(args, body)
