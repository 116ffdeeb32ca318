"""``workcoord view``, ``why`` and ``events``: reading a work coordinator."""

from __future__ import annotations

import argparse

from workcoord.api.v1 import work_coordinator_pb2
from workcoord.cli.common import add_client_flags, add_paging_flags, paging, request_of, set_call
from workcoord.cli.output import add_output_flag

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``view``, ``why`` and ``events``."""
    view = commands.add_parser("view", help="the materialized view of a work coordinator")
    add_paging_flags(view)
    set_call(
        view,
        request_of(work_coordinator_pb2.GetViewRequest, "coordinator_id", paged=True),
        lambda c: c.coordinators.GetView,
    )

    why = commands.add_parser("why", help="which gate holds an item or lane, and since when")
    target = why.add_mutually_exclusive_group(required=True)
    target.add_argument("--item", dest="item_id", metavar="ITEM_ID")
    target.add_argument("--lane", dest="lane_id", metavar="LANE_ID")
    set_call(why, _explain_request, lambda c: c.coordinators.Explain)

    events = commands.add_parser("events", help="the event log from a revision on")
    events.add_argument("--since", type=int, default=0, metavar="N", help="events after revision N")
    events.add_argument("--lane", dest="lane_id", default="", metavar="LANE_ID")
    events.add_argument("--item", dest="item_id", default="", metavar="ITEM_ID")
    add_paging_flags(events)
    set_call(events, _events_request, lambda c: c.coordinators.ListEvents)

    for parser in (view, why, events):
        add_output_flag(parser)
    add_client_flags((view, why, events), coordinator=True)


def _explain_request(args: argparse.Namespace) -> work_coordinator_pb2.ExplainRequest:
    return work_coordinator_pb2.ExplainRequest(
        coordinator_id=args.coordinator_id, item_id=args.item_id or "", lane_id=args.lane_id or ""
    )


def _events_request(args: argparse.Namespace) -> work_coordinator_pb2.ListEventsRequest:
    return work_coordinator_pb2.ListEventsRequest(
        coordinator_id=args.coordinator_id,
        since_revision=args.since,
        lane_id=args.lane_id,
        item_id=args.item_id,
        **paging(args),
    )
