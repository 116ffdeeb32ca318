"""The parts of a lane that REST reached before the CLI did: ``item get|create``,
``lane blocker add|resolve``, ``lane ticket link`` and ``worker list|forget|report``."""

from __future__ import annotations

import argparse

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.cli.common import (
    add_client_flags,
    add_command_group,
    add_paging_flags,
    load_message,
    request_of,
    run_client_command,
    set_call,
)
from workcoord.cli.items import lane_of
from workcoord.client.client import WorkcoordClient

__all__ = ["register_item_parts", "register_lane_parts", "register_worker_reads"]

_SubCommands = argparse._SubParsersAction


def register_item_parts(sub: _SubCommands[argparse.ArgumentParser]) -> None:
    """Add ``get`` and ``create`` to the ``item`` command."""
    get = sub.add_parser("get", help="show an item")
    get.add_argument("item_id", metavar="ITEM_ID")
    get.add_argument(
        "--lane", dest="lane_id", default="", metavar="LANE_ID", help="default: looked up"
    )
    get.set_defaults(handler=_get_item)

    create = sub.add_parser("create", help="add an item to a lane from a JSON file (the Item)")
    create.add_argument("--lane", dest="lane_id", required=True, metavar="LANE_ID")
    create.add_argument("--file", required=True, help="proto3 JSON of the Item; - reads stdin")
    create.add_argument(
        "--request-id", default="", help="idempotency key: a retry with it creates nothing new"
    )
    set_call(create, _create_item_request, lambda c: c.lanes.CreateItem)
    add_client_flags((get, create), coordinator=True)


def register_lane_parts(sub: _SubCommands[argparse.ArgumentParser]) -> None:
    """Add ``blocker add|resolve`` and ``ticket link`` to the ``lane`` command."""
    blockers = add_command_group(sub, "blocker_command", "blocker", help="a lane's blockers")
    add = blockers.add_parser(
        "add", help="block a lane: none of its items is leased until resolved"
    )
    add.add_argument("lane_id", metavar="LANE_ID")
    add.add_argument("--reason", required=True, help="what it waits for")
    set_call(add, _blocker_request, lambda c: c.lanes.AddBlocker)
    resolve = blockers.add_parser("resolve", help="resolve a lane's blocker")
    resolve.add_argument("lane_id", metavar="LANE_ID")
    resolve.add_argument("blocker_id", metavar="BLOCKER_ID")
    resolve.add_argument("--note", default="", help="recorded with the resolution")
    set_call(
        resolve,
        request_of(
            lane_pb2.ResolveBlockerRequest, "coordinator_id", "lane_id", "blocker_id", "note"
        ),
        lambda c: c.lanes.ResolveBlocker,
    )

    tickets = add_command_group(sub, "ticket_command", "ticket", help="a lane's tickets")
    link = tickets.add_parser("link", help="link a tracker ticket to a lane")
    link.add_argument("lane_id", metavar="LANE_ID")
    link.add_argument("--tracker", required=True, help="e.g. github")
    link.add_argument("--key", required=True, help="e.g. acme/parser#12")
    link.add_argument("--url", default="")
    set_call(link, _ticket_request, lambda c: c.lanes.LinkTicket)
    add_client_flags((add, resolve, link), coordinator=True)


def register_worker_reads(sub: _SubCommands[argparse.ArgumentParser]) -> None:
    """Add ``list``, ``forget`` and ``report`` to the ``worker`` command."""
    list_ = sub.add_parser("list", help="list the workers a coordinator knows (fences included)")
    add_paging_flags(list_)
    set_call(
        list_,
        request_of(worker_pb2.ListWorkersRequest, "coordinator_id", paged=True),
        lambda c: c.workers.ListWorkers,
    )
    forget = sub.add_parser("forget", help="forget a worker holding no live lease (admins)")
    forget.add_argument("worker_id", metavar="WORKER_ID")
    set_call(
        forget,
        request_of(worker_pb2.ForgetWorkerRequest, "coordinator_id", "worker_id"),
        lambda c: c.workers.ForgetWorker,
    )
    report = sub.add_parser(
        "report", help="register a worker or record a new observation of it, from a JSON file"
    )
    report.add_argument("--file", required=True, help="proto3 JSON of the Worker; - reads stdin")
    set_call(report, _report_worker_request, lambda c: c.workers.ReportWorker)
    add_client_flags((list_, forget, report), coordinator=True)


def _get_item(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> lane_pb2.GetItemResponse:
        lane_id = args.lane_id or await lane_of(client, args.coordinator_id, args.item_id)
        request = lane_pb2.GetItemRequest(
            coordinator_id=args.coordinator_id, lane_id=lane_id, item_id=args.item_id
        )
        return await client.lanes.GetItem(request)

    return run_client_command(args, body)


def _create_item_request(args: argparse.Namespace) -> lane_pb2.CreateItemRequest:
    return lane_pb2.CreateItemRequest(
        coordinator_id=args.coordinator_id,
        lane_id=args.lane_id,
        item=load_message(args.file, lane_pb2.Item()),
        request_id=args.request_id,
    )


def _report_worker_request(args: argparse.Namespace) -> worker_pb2.ReportWorkerRequest:
    return worker_pb2.ReportWorkerRequest(
        coordinator_id=args.coordinator_id, worker=load_message(args.file, worker_pb2.Worker())
    )


def _blocker_request(args: argparse.Namespace) -> lane_pb2.AddBlockerRequest:
    return lane_pb2.AddBlockerRequest(
        coordinator_id=args.coordinator_id,
        lane_id=args.lane_id,
        blocker=lane_pb2.Blocker(reason=args.reason),
    )


def _ticket_request(args: argparse.Namespace) -> lane_pb2.LinkTicketRequest:
    return lane_pb2.LinkTicketRequest(
        coordinator_id=args.coordinator_id,
        lane_id=args.lane_id,
        ticket=lane_pb2.Ticket(tracker=args.tracker, key=args.key, url=args.url),
    )
