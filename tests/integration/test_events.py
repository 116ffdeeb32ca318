"""The event log: gap-free revisions, pagination, and nothing private in it or in reads."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import UTC, timedelta
from typing import Any

from google.protobuf import json_format

from tests.support.harness import (
    Stack,
    TestClock,
    all_events,
    expect_error,
    start_coordinator_for,
    task,
)
from workcoord.api.v1 import (
    event_pb2,
    lane_pb2,
    work_coordinator_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import InvalidArgument

SECRET = "zq-very-private-8c1f3a"


async def make_history(stack: Stack) -> None:
    await stack.create_lane(task("a"), task("b", depends_on=["a"]), task("c"))
    a = await stack.lease_and_start()
    await stack.complete(a)
    b, c = await stack.lease(max_items=2)
    await stack.release(c)
    await stack.start(b)
    await stack.fail(b)


async def test_revisions_are_gap_free_from_one(stack: Stack) -> None:
    await make_history(stack)
    events = await stack.events()
    assert [e.revision for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == event_pb2.Event.COORDINATOR_CREATED
    assert all(e.type != event_pb2.Event.TYPE_UNSPECIFIED for e in events)
    response = await stack.admin.coordinators.ListEvents(
        work_coordinator_pb2.ListEventsRequest(coordinator_id=stack.cid)
    )
    assert response.revision == len(events)


async def test_pagination_and_since_revision(stack: Stack) -> None:
    await make_history(stack)
    everything = await stack.events()
    pages: list[list[int]] = []
    token = ""
    while True:
        response = await stack.admin.coordinators.ListEvents(
            work_coordinator_pb2.ListEventsRequest(
                coordinator_id=stack.cid, page_size=3, page_token=token
            )
        )
        pages.append([e.revision for e in response.events])
        token = response.next_page_token
        if not token:
            break
    assert all(len(page) == 3 for page in pages[:-1])
    assert 1 <= len(pages[-1]) <= 3
    assert [r for page in pages for r in page] == [e.revision for e in everything]

    since = await stack.admin.coordinators.ListEvents(
        work_coordinator_pb2.ListEventsRequest(coordinator_id=stack.cid, since_revision=5)
    )
    assert [e.revision for e in since.events] == list(range(6, len(everything) + 1))
    # Paging by a work key with READ gives the same log.
    assert [e.revision for e in await all_events(stack.worker, stack.cid, 2)] == [
        e.revision for e in everything
    ]


async def test_each_coordinator_has_its_own_revisions(stack: Stack) -> None:
    other = await stack.new_coordinator()
    await stack.create_lane(task("a"))
    events = await all_events(stack.admin, other)
    assert [e.revision for e in events] == [1]


async def test_no_input_token_or_checkpoint_body_leaves(stack: Stack) -> None:
    lane = await stack.create_lane(
        task("a", inputs={"password": SECRET}),
        task("b", inputs={"nested": {"deep": [SECRET]}}),
        inputs={"lane-secret": SECRET},
    )
    a, b = await stack.lease(max_items=2)
    assert SECRET in json_format.MessageToJson(a)  # the holder does get its inputs
    await stack.start(a)
    await stack.start(b)
    await stack.checkpoint(
        a,
        lane_pb2.Checkpoint(
            summary=f"summary {SECRET}", files_changed=[SECRET], next_action=SECRET
        ),
    )
    await stack.heartbeat(b, progress="working")
    (a2,) = await stack.lease()
    assert SECRET in a2.item.checkpoint.summary  # the continuation gets the checkpoint
    await stack.start(a2)
    await stack.complete(a2)

    tokens = [a.lease_token, b.lease_token, a2.lease_token]
    leaked: list[str] = []

    def scan(where: str, message: object) -> None:
        text = json_format.MessageToJson(message)  # type: ignore[arg-type]
        for needle in (SECRET, *tokens, stack.key_secret, stack.admin_token):
            if needle in text:
                leaked.append(f"{where}: {needle[:12]}…")

    for event in await stack.events():
        scan(f"event {event.revision}", event)
    # Admins may read a lane's inputs and checkpoints (GetLane/GetItem); a work key may not.
    key_reader = stack.client(stack.key_secret)
    got = await key_reader.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    scan("GetLane (work key)", got)
    assert got.lane.inputs_redacted
    for item in lane.items:
        read = await key_reader.lanes.GetItem(
            lane_pb2.GetItemRequest(
                coordinator_id=stack.cid, lane_id=item.lane_id, item_id=item.item_id
            )
        )
        scan(f"GetItem {item.key} (work key)", read)
        scan(f"Explain {item.key}", await stack.explain(item.item_id))
    lane_why = await stack.admin.coordinators.Explain(
        work_coordinator_pb2.ExplainRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    scan("Explain lane", lane_why)
    view = await stack.admin.coordinators.GetView(
        work_coordinator_pb2.GetViewRequest(coordinator_id=stack.cid)
    )
    scan("GetView", view)
    lanes = await stack.admin.lanes.ListLanes(lane_pb2.ListLanesRequest(coordinator_id=stack.cid))
    scan("ListLanes", lanes)
    scan("CreateLane reply", lane)
    assert leaked == []


async def test_bad_page_tokens_and_sizes(stack: Stack) -> None:
    calls = {
        "negative page_size": work_coordinator_pb2.ListEventsRequest(
            coordinator_id=stack.cid, page_size=-1
        ),
        "garbage token": work_coordinator_pb2.ListEventsRequest(
            coordinator_id=stack.cid, page_token="not-a-token!"
        ),
        "foreign token": work_coordinator_pb2.ListEventsRequest(
            # Well-formed base64 JSON, but not a revision this server would issue.
            coordinator_id=stack.cid,
            page_token="WyJ4Il0",  # ["x"]
        ),
    }
    for name, request in calls.items():
        err = await expect_error(
            stack.admin.coordinators.ListEvents(request), InvalidArgument, "INVALID_ARGUMENT"
        )
        expected = "page_size" if "size" in name else "page_token"
        assert {v.field for v in err.field_violations} == {expected}, name


async def test_foreign_page_tokens_on_every_list(stack: Stack) -> None:
    """A token this server never issued is bad input on every list, never an internal error."""
    foreign = ["WyJ4Il0", "WyJ4IiwgMV0", "e30"]  # ["x"], ["x", 1], {}
    for token in foreign:
        requests: list[Awaitable[Any]] = [
            stack.admin.coordinators.GetView(
                work_coordinator_pb2.GetViewRequest(coordinator_id=stack.cid, page_token=token)
            ),
            stack.admin.lanes.ListLanes(
                lane_pb2.ListLanesRequest(coordinator_id=stack.cid, page_token=token)
            ),
            stack.admin.coordinators.ListEvents(
                work_coordinator_pb2.ListEventsRequest(coordinator_id=stack.cid, page_token=token)
            ),
        ]
        for call in requests:
            err = await expect_error(call, InvalidArgument)
            assert {v.field for v in err.field_violations} == {"page_token"}, token


async def test_event_times_never_decrease_across_replicas_with_skewed_clocks(
    stack: Stack,
) -> None:
    """Before, each replica stamped events with its own clock: a write on a replica 30 s
    behind the one that wrote the previous event logged the later revision at an earlier time.
    Now a write never stamps an event before the coordinator's last one."""
    ahead = TestClock(stack.clock.now() + timedelta(seconds=30))
    other = await start_coordinator_for(
        stack.database_url, stack.redis_url, ahead, stack.admin_token, stack.service_key
    )
    try:
        async with WorkcoordClient(other.address, stack.key_secret) as on_ahead:
            await stack.create_lane(task("a"))
            await stack.create_lane(task("b"), client=on_ahead)
            await stack.create_lane(task("c"))  # behind: follows the replica ahead
            stack.clock.advance(60)
            await stack.create_lane(task("d"))  # its own time again, once that is later
    finally:
        await other.stop(0)
    events = await stack.events()
    times = [e.time.ToDatetime(tzinfo=UTC) for e in events]
    shown = [(e.revision, t.isoformat()) for e, t in zip(events, times, strict=True)]
    assert times == sorted(times), shown
    assert times[-1] == stack.clock.now()
