"""``workcoord view``, ``why`` and ``events``: reading a work coordinator."""

from __future__ import annotations

import argparse

from workcoord.api.v1 import work_coordinator_pb2
from workcoord.cli.common import add_client_flags, add_paging_flags, paging, run_call
from workcoord.cli.output import add_output_flag

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``view``, ``why`` and ``events``."""
    view = commands.add_parser("view", help="the materialized view of a work coordinator")
    add_paging_flags(view)
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
    add_paging_flags(events)
    events.set_defaults(handler=_events)

    for parser in (view, why, events):
        add_output_flag(parser)
    add_client_flags((view, why, events), coordinator=True)


def _view(args: argparse.Namespace) -> int:
    request = work_coordinator_pb2.GetViewRequest(
        coordinator_id=args.coordinator_id, **paging(args)
    )
    return run_call(args, lambda client: client.coordinators.GetView(request))


def _why(args: argparse.Namespace) -> int:
    request = work_coordinator_pb2.ExplainRequest(
        coordinator_id=args.coordinator_id, item_id=args.item_id or "", lane_id=args.lane_id or ""
    )
    return run_call(args, lambda client: client.coordinators.Explain(request))


def _events(args: argparse.Namespace) -> int:
    request = work_coordinator_pb2.ListEventsRequest(
        coordinator_id=args.coordinator_id,
        since_revision=args.since,
        lane_id=args.lane_id,
        item_id=args.item_id,
        **paging(args),
    )
    return run_call(args, lambda client: client.coordinators.ListEvents(request))
