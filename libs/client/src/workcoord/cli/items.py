"""The human decisions from a terminal: ``workcoord item approve|deny|resume|retry|cancel`` and
``workcoord lane pause|resume|cancel``.

They need a human's credential (an admin token, ``WORKCOORD_TOKEN``); the coordinator refuses
every work key. ``--lane`` may be left out: the item's lane is then looked up with ``why``.
``item approve|deny ITEM_ID --show`` prints the facts of the decision and decides nothing
(:mod:`workcoord.cli.approval`).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message

from workcoord.api.v1 import lane_pb2, work_coordinator_pb2
from workcoord.cli.common import (
    add_command_group,
    add_connection_flags,
    add_coordinator_flag,
    run_client_command,
)
from workcoord.cli.output import add_output_flag
from workcoord.client.client import WorkcoordClient

__all__ = ["register", "register_lane_decisions"]

# verb → (help, request class, the stub method's name, whether a reason is required)
_ITEM_DECISIONS: dict[str, tuple[str, type[Message], str, bool]] = {
    "approve": (
        "approve an item awaiting approval (it is queued)",
        lane_pb2.ApproveItemRequest,
        "ApproveItem",
        False,
    ),
    "deny": (
        "deny an item awaiting approval (it is cancelled, the lane closes out)",
        lane_pb2.DenyItemRequest,
        "DenyItem",
        True,
    ),
    "resume": (
        "resume a STOPPED item (it is queued again)",
        lane_pb2.ResumeItemRequest,
        "ResumeItem",
        False,
    ),
    "retry": (
        "redrive a dead-lettered item with a fresh attempt budget",
        lane_pb2.RetryItemRequest,
        "RetryItem",
        False,
    ),
    "cancel": ("cancel an unfinished item", lane_pb2.CancelItemRequest, "CancelItem", False),
}

_LANE_DECISIONS: dict[str, tuple[str, type[Message], str]] = {
    "pause": ("pause a lane: none of its items is leased", lane_pb2.PauseLaneRequest, "PauseLane"),
    "resume": ("resume a paused lane", lane_pb2.ResumeLaneRequest, "ResumeLane"),
    "cancel": ("cancel a lane and its unfinished items", lane_pb2.CancelLaneRequest, "CancelLane"),
}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``item approve|deny|resume|retry|cancel|get|create``."""
    sub = add_command_group(
        commands,
        "item_command",
        "item",
        help="an item: get, create; decide: approve, deny, resume, retry, cancel",
    )
    for verb, (help_text, _, _, reason_required) in _ITEM_DECISIONS.items():
        parser = sub.add_parser(verb, help=help_text)
        parser.add_argument("item_id", metavar="ITEM_ID")
        parser.add_argument(
            "--lane", dest="lane_id", default="", metavar="LANE_ID", help="default: looked up"
        )
        if reason_required:
            parser.add_argument("--reason", required=True, help="why (recorded with the decision)")
        else:
            parser.add_argument(
                "--note", "--reason", dest="reason", default="", help="recorded with the decision"
            )
        if verb == "approve":
            parser.add_argument(
                "--show",
                action="store_true",
                help="print the facts of the decision (evidence, tickets, inputs, who asked); "
                "decide nothing",
            )
        parser.set_defaults(handler=_item_decision, verb=verb)
        add_output_flag(parser)
        add_coordinator_flag(parser)
        add_connection_flags(parser)
    # Imported here: lane_parts uses lane_of from this module.
    from workcoord.cli.lane_parts import register_item_parts

    register_item_parts(sub)


def register_lane_decisions(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``pause``, ``resume`` and ``cancel`` to the ``lane`` command."""
    for verb, (help_text, _, _) in _LANE_DECISIONS.items():
        parser = sub.add_parser(verb, help=help_text)
        parser.add_argument("lane_id", metavar="LANE_ID")
        parser.add_argument("--reason", default="", help="why (recorded with the change)")
        parser.set_defaults(handler=_lane_decision, verb=verb)
        add_output_flag(parser)
        add_coordinator_flag(parser)
        add_connection_flags(parser)


async def lane_of(client: WorkcoordClient, coordinator_id: str, item_id: str) -> str:
    """The lane of ``item_id`` (asked with ``why``, which needs only the item)."""
    answer = await client.coordinators.Explain(
        work_coordinator_pb2.ExplainRequest(coordinator_id=coordinator_id, item_id=item_id)
    )
    return str(answer.explanation.lane_id)


def _item_decision(args: argparse.Namespace) -> int:
    if getattr(args, "show", False):
        from workcoord.cli.approval import show_facts

        return show_facts(args)
    _, request_class, method, _ = _ITEM_DECISIONS[args.verb]

    async def body(client: WorkcoordClient) -> Message:
        lane_id = args.lane_id or await lane_of(client, args.coordinator_id, args.item_id)
        request = request_class(
            coordinator_id=args.coordinator_id,
            lane_id=lane_id,
            item_id=args.item_id,
            note=args.reason,
        )
        call: Callable[[Any], Awaitable[Message]] = getattr(client.lanes, method)
        return await call(request)

    return run_client_command(args, body)


def _lane_decision(args: argparse.Namespace) -> int:
    _, request_class, method = _LANE_DECISIONS[args.verb]

    async def body(client: WorkcoordClient) -> Message:
        request = request_class(
            coordinator_id=args.coordinator_id, lane_id=args.lane_id, reason=args.reason
        )
        call: Callable[[Any], Awaitable[Message]] = getattr(client.lanes, method)
        return await call(request)

    return run_client_command(args, body)
