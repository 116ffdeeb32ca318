"""The CLI for humans without a server: ``watch``'s resume logic over scripted streams, the
``--output table`` renderings, and the command tree. (Against the running services:
``tests/e2e/test_cli_humans.py``.)"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from workcoord.api.v1 import (
    event_pb2,
    feed_pb2,
    lane_pb2,
    work_coordinator_pb2,
)
from workcoord.cli.completion import command_tree
from workcoord.cli.main import build_parser
from workcoord.cli.output import format_table, render_table
from workcoord.cli.watch import FeedFollower, event_line
from workcoord.kit.errors import CoordinationDisabled, PermissionDenied, WorkcoordError


def hello(revision: int, resume_from: int) -> feed_pb2.WatchResponse:
    return feed_pb2.WatchResponse(
        hello=feed_pb2.Hello(coordinator_id="wc-1", revision=revision, resume_from=resume_from)
    )


def delta(*revisions: int) -> feed_pb2.WatchResponse:
    events = [
        event_pb2.Event(revision=r, type=event_pb2.Event.ITEM_QUEUED, lane_id="ln-1")
        for r in revisions
    ]
    return feed_pb2.WatchResponse(
        delta=feed_pb2.Delta(from_revision=revisions[0], to_revision=revisions[-1], events=events)
    )


class ScriptedFeed:
    """Each call to ``watch`` plays the next script: its frames, then its ending (an error to
    raise, or None for a stream the server ended)."""

    def __init__(
        self, *scripts: tuple[list[feed_pb2.WatchResponse], WorkcoordError | None]
    ) -> None:
        self.scripts = list(scripts)
        self.requests: list[feed_pb2.WatchRequest] = []

    async def watch(self, request: feed_pb2.WatchRequest) -> AsyncIterator[feed_pb2.WatchResponse]:
        self.requests.append(request)
        frames, ending = self.scripts.pop(0)
        for frame in frames:
            yield frame
        if ending is not None:
            raise ending


def follower(
    feed: ScriptedFeed, since: int | None, **options: object
) -> tuple[FeedFollower, list[int], list[str], list[float]]:
    events: list[int] = []
    notices: list[str] = []
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    made = FeedFollower(
        watch=feed.watch,
        coordinator_id="wc-1",
        since=since,
        on_event=lambda event: events.append(event.revision),
        notice=notices.append,
        sleep=sleep,
        **options,  # type: ignore[arg-type]
    )
    return made, events, notices, delays


async def test_watch_resumes_from_the_last_revision_after_a_lost_stream() -> None:
    feed = ScriptedFeed(
        ([hello(12, 10), delta(11, 12)], CoordinationDisabled("switched off")),
        ([], None),  # the server ended the stream at once
        ([hello(14, 12), delta(13), delta(14)], None),
    )
    watch, events, notices, delays = follower(feed, since=10, max_events=4)
    await watch.run()
    assert events == [11, 12, 13, 14]
    assert [r.since for r in feed.requests] == [10, 12, 12]
    assert delays == [0.5, 1.0]  # backoff doubles while nothing gets through
    assert any("COORDINATION_DISABLED" in n for n in notices)
    assert any("resuming from revision 12" in n for n in notices)


async def test_watch_without_since_starts_from_the_snapshot() -> None:
    snapshot = feed_pb2.WatchResponse(
        snapshot=feed_pb2.Snapshot(revision=40, view=work_coordinator_pb2.View(revision=40))
    )
    resync = feed_pb2.WatchResponse(resync=feed_pb2.Resync(reason="SLOW_CONSUMER", revision=50))
    later = feed_pb2.WatchResponse(
        snapshot=feed_pb2.Snapshot(revision=50, view=work_coordinator_pb2.View(revision=50))
    )
    feed = ScriptedFeed(
        ([hello(40, 0), snapshot, delta(41), resync, later], None),
        ([delta(51)], None),
    )
    watch, events, notices, _ = follower(feed, since=None, max_events=2)
    await watch.run()
    assert not feed.requests[0].HasField("since")
    assert feed.requests[1].since == 50  # the snapshot after the resync
    assert events == [41, 51]
    assert any("resync (SLOW_CONSUMER)" in n for n in notices)


async def test_watch_stops_on_an_error_that_waiting_cannot_fix() -> None:
    feed = ScriptedFeed(([hello(3, 1)], PermissionDenied("grant revoked")))
    watch, _, _, delays = follower(feed, since=1)
    with pytest.raises(PermissionDenied):
        await watch.run()
    assert delays == []


def test_event_lines() -> None:
    event = event_pb2.Event(
        revision=42,
        type=event_pb2.Event.ITEM_LEASED,
        lane_id="ln-1",
        item_id="it-1",
        actor="key:k1",
    )
    event.time.FromJsonString("2026-11-30T12:00:00Z")
    event.data.update({"workerId": "w1"})
    line = event_line(event)
    assert line.split("  ")[:6] == [
        "#42",
        "2026-11-30T12:00:00Z",
        "ITEM_LEASED",
        "lane=ln-1",
        "item=it-1",
        "by key:k1",
    ]
    assert '"workerId": "w1"' in line and "\n" not in line
    assert "\n" not in event_line(event, "json")


def test_tables_for_people() -> None:
    view = work_coordinator_pb2.GetViewResponse(
        view=work_coordinator_pb2.View(
            revision=7,
            lanes=[
                lane_pb2.Lane(
                    lane_id="ln-1",
                    title="Speed up the parser",
                    state=lane_pb2.Lane.ACTIVE,
                    next_action="approve ship",
                    items=[
                        lane_pb2.Item(
                            item_id="it-1",
                            key="ship",
                            state=lane_pb2.Item.AWAITING_APPROVAL,
                            next_action="approve ship",
                        )
                    ],
                )
            ],
            capacity=[
                work_coordinator_pb2.ClassUsage(worker_class="machine", in_use=1, capacity=2)
            ],
        )
    )
    lines = render_table(view).splitlines()
    assert lines[0] == "revision 7"
    lane_row = next(line for line in lines if line.startswith("ln-1"))
    item_row = next(line for line in lines if "it-1" in line)
    assert "Speed up the parser" in lane_row
    assert item_row.startswith("  it-1") and "AWAITING_APPROVAL" in item_row
    assert "capacity: machine 1/2" in lines
    # A response wrapping one message renders that message.
    approved = lane_pb2.ApproveItemResponse(
        item=lane_pb2.Item(item_id="it-1", lane_id="ln-1", state=lane_pb2.Item.QUEUED)
    )
    header, row = render_table(approved).splitlines()
    assert header.split() == ["ITEM", "KEY", "KIND", "CLASS", "STATE", "ATTEMPTS", "NEXT", "LANE"]
    assert row.split() == ["it-1", "-", "-", "-", "QUEUED", "0", "-", "ln-1"]


def test_format_table_aligns_and_cuts() -> None:
    lines = format_table(["A", "LONG HEADER"], [["x" * 70, 1], [None, True]])
    assert lines[0].index("LONG HEADER") == lines[1].index("1")
    assert lines[1].startswith("x" * 59 + "…")
    assert lines[2].split() == ["-", "yes"]


def test_the_commands_for_humans_are_in_the_tree() -> None:
    tree = command_tree(build_parser())
    assert {"item", "coordinators", "digest", "pending-actions", "watch"} <= set(tree[""])
    assert set(tree["item"]) == {
        *("-h", "--help", "approve", "deny", "resume", "retry", "cancel", "get", "create")
    }
    assert {"pause", "resume", "cancel", "create", "get", "list"} <= set(tree["lane"])
    assert {"create", "list", "get", "update"} <= set(tree["coordinators"])
    assert {"list", "resolve"} <= set(tree["pending-actions"])
    for command in ("view", "why", "events", "lane get", "digest", "coordinators list"):
        assert "--output" in tree[command], command
