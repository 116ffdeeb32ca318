"""``workcoord children …``: a parent work coordinator reading and steering its children
through the grants they gave it (``admin grants``): ``summary``, ``escalations``, ``assign``,
``steer``, ``escalate``. ``--coordinator`` is the parent; the child is the first argument."""

from __future__ import annotations

import argparse

from workcoord.api.v1 import work_coordinator_pb2
from workcoord.cli.common import add_client_flags, request_of, set_call

__all__ = ["register"]

_SubCommands = argparse._SubParsersAction
_Request = work_coordinator_pb2


def register(commands: _SubCommands[argparse.ArgumentParser]) -> None:
    """Add ``children`` to the command tree."""
    parser = commands.add_parser(
        "children",
        help="a parent's reads and steering of its children (each needs the child's grant)",
        description=(
            "A parent work coordinator (--coordinator) acting on a child that granted it a "
            "permission: SUMMARY, ESCALATIONS, ASSIGN, STEER or ESCALATE (see 'admin grants')."
        ),
    )
    sub = parser.add_subparsers(dest="children_command", metavar="COMMAND", required=True)

    summary = sub.add_parser("summary", help="a child's redacted summary (SUMMARY grant)")
    _add_child(summary)
    set_call(
        summary,
        request_of(_Request.GetChildSummaryRequest, "coordinator_id", "child_id"),
        lambda c: c.coordinators.GetChildSummary,
    )

    escalations = sub.add_parser(
        "escalations", help="a child's open escalations (ESCALATIONS grant)"
    )
    _add_child(escalations)
    set_call(
        escalations,
        request_of(_Request.ListChildEscalationsRequest, "coordinator_id", "child_id"),
        lambda c: c.coordinators.ListChildEscalations,
    )

    assign = sub.add_parser("assign", help="place a child's item on a worker (ASSIGN grant)")
    _add_child(assign)
    assign.add_argument("--lane", dest="lane_id", required=True, metavar="LANE_ID")
    assign.add_argument("--item", dest="item_id", required=True, metavar="ITEM_ID")
    assign.add_argument("--worker", dest="worker_id", required=True, metavar="WORKER_ID")
    set_call(
        assign,
        request_of(
            _Request.AssignChildWorkRequest,
            *("coordinator_id", "child_id", "lane_id", "item_id", "worker_id"),
        ),
        lambda c: c.coordinators.AssignChildWork,
    )

    steer = sub.add_parser("steer", help="set a child's lane priority (STEER grant)")
    _add_child(steer)
    steer.add_argument("--lane", dest="lane_id", required=True, metavar="LANE_ID")
    steer.add_argument("--priority", type=int, required=True, help="0 to 100")
    set_call(
        steer,
        request_of(
            _Request.SteerChildWorkRequest, "coordinator_id", "child_id", "lane_id", "priority"
        ),
        lambda c: c.coordinators.SteerChildWork,
    )

    escalate = sub.add_parser(
        "escalate", help="escalate a child's lane or item to its digest owner (ESCALATE grant)"
    )
    _add_child(escalate)
    escalate.add_argument("--lane", dest="lane_id", required=True, metavar="LANE_ID")
    escalate.add_argument("--item", dest="item_id", default="", metavar="ITEM_ID")
    escalate.add_argument("--reason", required=True, help="why (at most 1024 characters)")
    set_call(
        escalate,
        request_of(
            _Request.EscalateChildWorkRequest,
            *("coordinator_id", "child_id", "lane_id", "item_id", "reason"),
        ),
        lambda c: c.coordinators.EscalateChildWork,
    )

    add_client_flags((summary, escalations, assign, steer, escalate), coordinator=True)


def _add_child(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("child_id", metavar="CHILD_ID", help="the child work coordinator")
