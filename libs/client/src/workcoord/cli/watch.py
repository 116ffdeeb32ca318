"""``workcoord watch``: follow a work coordinator's feed over gRPC (``FeedService.Watch``).

One line per event on stdout (``--output json``: the event as one line of proto3 JSON); what is
not an event (the opening, snapshots, resyncs, reconnections) goes to stderr. A lost stream is
resumed from the last revision seen, so nothing is printed twice and nothing is skipped; when the
server cannot guarantee that (a resync), it says so and the watch goes on from its snapshot.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass
from typing import TextIO

from google.protobuf import json_format

from workcoord.api.v1 import event_pb2, feed_pb2
from workcoord.cli.common import (
    add_connection_flags,
    add_coordinator_flag,
    client_from_args,
    run_and_report,
)
from workcoord.cli.output import add_output_flag
from workcoord.kit.errors import Code, WorkcoordError

__all__ = ["FeedFollower", "event_line", "register"]

# Errors after which the same request may well succeed later: resume from the last revision.
_RESUMABLE = frozenset(
    {Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.INTERNAL, Code.UNKNOWN, Code.CANCELLED}
)
_FIRST_RETRY_SECONDS = 0.5
_LAST_RETRY_SECONDS = 10.0
_DATA_LIMIT = 120


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``watch``."""
    watch = commands.add_parser(
        "watch", help="follow the live feed: one line per event, resumes by revision"
    )
    watch.add_argument(
        "--since",
        type=int,
        default=None,
        metavar="N",
        help="print the events after revision N first (default: only new ones)",
    )
    watch.add_argument(
        "--max-events", type=int, default=None, metavar="N", help="stop after N events"
    )
    watch.add_argument("--pings", action="store_true", help="also report the server's pings")
    watch.set_defaults(handler=_watch)
    add_output_flag(watch)
    add_coordinator_flag(watch)
    add_connection_flags(watch)


def event_line(event: event_pb2.Event, output: str = "table") -> str:
    """One event as one line: ``#42 <time> ITEM_LEASED lane=… item=… by …`` or JSON."""
    if output == "json":
        return json_format.MessageToJson(event, indent=None)
    document = json_format.MessageToDict(event)
    parts = [f"#{event.revision}", document.get("time", "-"), document.get("type", "-")]
    if event.lane_id:
        parts.append(f"lane={event.lane_id}")
    if event.item_id:
        parts.append(f"item={event.item_id}")
    if event.actor:
        parts.append(f"by {event.actor}")
    data = document.get("data")
    if data:
        text = json_format.MessageToJson(event.data, indent=None, sort_keys=True)
        parts.append(text if len(text) <= _DATA_LIMIT else text[: _DATA_LIMIT - 1] + "…")
    return "  ".join(parts)


Watch = Callable[[feed_pb2.WatchRequest], AsyncIterable[feed_pb2.WatchResponse]]


@dataclass
class FeedFollower:
    """Follows one work coordinator's feed across lost streams, from a revision on."""

    watch: Watch
    coordinator_id: str
    since: int | None
    on_event: Callable[[event_pb2.Event], None]
    notice: Callable[[str], None]
    pings: bool = False
    max_events: int | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def run(self) -> None:
        """Until ``max_events`` events were delivered (forever without it); a non-resumable
        error (no access, bad request) is raised."""
        revision = self.since
        delivered = 0
        failures = 0
        while True:
            request = feed_pb2.WatchRequest(coordinator_id=self.coordinator_id)
            if revision is not None:
                request.since = revision
            try:
                async for frame in self.watch(request):
                    kind = frame.WhichOneof("frame")
                    if kind == "hello":
                        failures = 0
                        self.notice(
                            f"following {frame.hello.coordinator_id} from revision "
                            f"{frame.hello.resume_from} (now {frame.hello.revision})"
                        )
                    elif kind == "snapshot":
                        revision = frame.snapshot.revision
                        lanes = len(frame.snapshot.view.lanes)
                        self.notice(f"snapshot at revision {revision}: {lanes} lanes")
                    elif kind == "delta":
                        for event in frame.delta.events:
                            self.on_event(event)
                            delivered += 1
                            revision = event.revision
                            if self.max_events is not None and delivered >= self.max_events:
                                return
                        revision = frame.delta.to_revision
                    elif kind == "resync":
                        self.notice(
                            f"resync ({frame.resync.reason}): events before revision "
                            f"{frame.resync.revision} may be missing; a snapshot follows"
                        )
                    elif kind == "ping" and self.pings:
                        self.notice(f"ping at revision {frame.ping.revision}")
                self.notice("the server ended the feed")
            except WorkcoordError as err:
                if err.code not in _RESUMABLE:
                    raise
                self.notice(f"feed lost ({err.reason}: {err.message})")
            failures += 1
            delay = min(_LAST_RETRY_SECONDS, _FIRST_RETRY_SECONDS * 2 ** (failures - 1))
            where = "the start" if revision is None else f"revision {revision}"
            self.notice(f"resuming from {where} in {delay:g} s")
            await self.sleep(delay)


def _watch(args: argparse.Namespace) -> int:
    out: TextIO = sys.stdout

    def on_event(event: event_pb2.Event) -> None:
        print(event_line(event, args.output), file=out, flush=True)

    def notice(text: str) -> None:
        print(f"watch: {text}", file=sys.stderr, flush=True)

    async def go() -> None:
        async with client_from_args(args) as client:
            follower = FeedFollower(
                watch=client.feed.Watch,
                coordinator_id=args.coordinator_id,
                since=args.since,
                on_event=on_event,
                notice=notice,
                pings=args.pings,
                max_events=args.max_events,
            )
            await follower.run()

    return run_and_report(go, print_result=False)
