"""``workcoord view``, ``why``, ``events``, ``usage`` and ``budget``: reading a work
coordinator."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from workcoord.api.v1 import work_coordinator_pb2
from workcoord.cli.common import (
    EXIT_USAGE,
    CliError,
    add_client_flags,
    add_paging_flags,
    paging,
    request_of,
    set_call,
)
from workcoord.cli.output import add_output_flag

__all__ = ["register"]

_GROUPS = ("LANE", "WORKER_CLASS", "MODEL", "DAY")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``view``, ``why``, ``events`` and ``usage``."""
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

    usage = commands.add_parser(
        "usage", help="what the attempts spent: a UTC day's total (default today), grouped"
    )
    usage.add_argument("day", nargs="?", default=None, metavar="DAY", help="YYYY-MM-DD (UTC)")
    usage.add_argument(
        "--all-time", action="store_true", help="every day's spend instead of one day's"
    )
    usage.add_argument("--lane", dest="lane_id", default="", metavar="LANE_ID")
    usage.add_argument(
        "--by", dest="group_by", choices=_GROUPS, default=None, help="one total per group"
    )
    set_call(usage, _usage_request, lambda c: c.coordinators.GetUsage)

    budget = commands.add_parser(
        "budget", help="the day budget (and a lane's budget): limits, used, left, whether spent"
    )
    budget.add_argument("--lane", dest="lane_id", default="", metavar="LANE_ID")
    set_call(
        budget,
        request_of(work_coordinator_pb2.GetBudgetRequest, "coordinator_id", "lane_id"),
        lambda c: c.coordinators.GetBudget,
    )

    for parser in (view, why, events, usage, budget):
        add_output_flag(parser)
    add_client_flags((view, why, events, usage, budget), coordinator=True)


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


def _usage_request(args: argparse.Namespace) -> work_coordinator_pb2.GetUsageRequest:
    if args.all_time and args.day:
        raise CliError("usage: give a DAY or --all-time, not both", EXIT_USAGE)
    day = "" if args.all_time else args.day or datetime.now(UTC).strftime("%Y-%m-%d")
    group_by = args.group_by or "GROUP_BY_UNSPECIFIED"
    return work_coordinator_pb2.GetUsageRequest(
        coordinator_id=args.coordinator_id, day=day, lane_id=args.lane_id, group_by=group_by
    )
