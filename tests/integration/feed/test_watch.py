"""``FeedService.Watch`` over gRPC against a started coordinator (PostgreSQL + Redis and SQLite +
in-process bus): hello, snapshot or deltas, pings, resync, authority, privacy."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.integration.tenancy.world import new_user
from tests.support.harness import Stack, identity, task
from workcoord.api.v1 import (
    admin_pb2,
    lane_pb2,
    work_coordinator_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.coordinator.server import start_coordinator
from workcoord.kit.errors import (
    CoordinationDisabled,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from workcoord.kit.settings import CoordinatorSettings

from .watching import POLL_SECONDS, Watch

pytestmark = pytest.mark.usefixtures("backend")


async def current_revision(stack: Stack) -> int:
    response = await stack.admin.coordinators.ListEvents(
        work_coordinator_pb2.ListEventsRequest(coordinator_id=stack.cid, page_size=1)
    )
    return int(response.revision)


async def log_after(stack: Stack, revision: int) -> list[dict[str, Any]]:
    events = await stack.events()
    return as_json([e for e in events if e.revision > revision])


def as_json(events: Sequence[Message]) -> list[dict[str, Any]]:
    return [json_format.MessageToDict(e) for e in events]


async def test_hello_then_a_snapshot_that_is_the_get_view_document(feed_stack: Stack) -> None:
    stack = feed_stack
    await stack.create_lane(task("a"), task("b", depends_on=["a"]))
    leases = await stack.lease()
    revision = await current_revision(stack)
    view = await stack.admin.coordinators.GetView(
        work_coordinator_pb2.GetViewRequest(coordinator_id=stack.cid, page_size=500)
    )
    watch = Watch(stack.admin, stack.cid)
    try:
        await watch.until(lambda w: len(w.frames) >= 2)
        hello, snapshot = watch.frames[0].hello, watch.frames[1].snapshot
        assert watch.kinds()[:2] == ["hello", "snapshot"]
        assert hello.coordinator_id == stack.cid
        assert hello.revision == revision == hello.resume_from == snapshot.revision
        assert hello.ping_seconds >= 1
        assert snapshot.view == view.view
        # The document of issue 4: lanes with items, attempts (no tokens), workers, capacity.
        assert [lane.lane_id for lane in snapshot.view.lanes]
        attempts = [a for lane in snapshot.view.lanes for i in lane.items for a in i.attempts]
        assert [a.lease_id for a in attempts] == [leases[0].lease_id]
        assert snapshot.view.workers and snapshot.view.capacity
        usage = {u.worker_class: u.in_use for u in snapshot.view.capacity}
        assert usage["machine"] == 1
        assert leases[0].lease_token not in snapshot.SerializeToString().decode(errors="replace")
    finally:
        await watch.close()


async def test_since_resumes_with_exactly_the_missed_events(feed_stack: Stack) -> None:
    stack = feed_stack
    await stack.create_lane(task("a"))
    since = await current_revision(stack)
    await stack.create_lane(task("b"), task("c"))
    leases = await stack.lease(max_items=2)
    await stack.start(leases[0])
    missed = await log_after(stack, since)
    assert missed
    watch = Watch(stack.worker, stack.cid, since=since)
    try:
        current = await current_revision(stack)
        await watch.until_revision(current)
        assert "snapshot" not in watch.kinds()
        hello = watch.frames[0].hello
        assert (hello.resume_from, hello.revision) == (since, current)
        assert as_json(watch.events()) == missed
        # And live from there, still exactly the log.
        await stack.complete(leases[0])
        await stack.create_lane(task("d"))
        current = await current_revision(stack)
        await watch.until_revision(current)
        assert as_json(watch.events()) == await log_after(stack, since)
    finally:
        await watch.close()


async def test_concurrent_writers_the_stream_equals_the_log(feed_stack: Stack) -> None:
    stack = feed_stack
    watch = Watch(stack.admin, stack.cid)
    try:
        await watch.until(lambda w: "snapshot" in w.kinds())
        start = watch.frames[1].snapshot.revision
        await asyncio.gather(*(stack.create_lane(task(f"k{n}")) for n in range(12)))
        leases = await stack.lease(max_items=6)
        await asyncio.gather(*(stack.start(lease) for lease in leases))
        await asyncio.gather(*(stack.complete(lease) for lease in leases))
        current = await current_revision(stack)
        await watch.until_revision(current)
        assert as_json(watch.events()) == await log_after(stack, start)
    finally:
        await watch.close()


@pytest.mark.parametrize("since", [10**9, 10**12])
async def test_a_revision_the_log_cannot_continue_gets_a_resync_and_a_snapshot(
    feed_stack: Stack, since: int
) -> None:
    stack = feed_stack
    await stack.create_lane(task("a"))
    revision = await current_revision(stack)
    watch = Watch(stack.admin, stack.cid, since=since)
    try:
        await watch.until(lambda w: "snapshot" in w.kinds())
        assert watch.kinds()[:3] == ["hello", "resync", "snapshot"]
        assert watch.frames[0].hello.resume_from == revision
        resync = watch.frames[1].resync
        assert (resync.reason, resync.revision) == ("GAP", revision)
        assert watch.frames[2].snapshot.revision == revision
    finally:
        await watch.close()


async def test_a_quiet_feed_pings_with_the_current_revision(feed_stack: Stack) -> None:
    stack = feed_stack
    revision = await current_revision(stack)
    watch = Watch(stack.worker, stack.cid, since=revision)
    try:
        await watch.until(lambda w: len(w.of("ping")) >= 3)
        assert {p.revision for p in watch.of("ping")} == {revision}
        assert watch.kinds()[0] == "hello"
    finally:
        await watch.close()


async def test_a_revoked_key_ends_the_stream(feed_stack: Stack) -> None:
    stack = feed_stack
    key_id, client = await stack.work_key()
    watch = Watch(client, stack.cid, since=0)
    try:
        await watch.until(lambda w: bool(w.of("hello")))
        await stack.admin.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=key_id))
        await watch.until_ended()
        assert isinstance(watch.error, Unauthenticated), watch.error
    finally:
        await watch.close()


async def test_a_revoked_key_ends_the_stream_at_the_next_commit(feed_stack: Stack) -> None:
    """Between pings, the authority check of a live delta catches the revocation."""
    stack = feed_stack
    key_id, client = await stack.work_key()
    watch = Watch(client, stack.cid)
    try:
        await watch.until(lambda w: "snapshot" in w.kinds())
        await stack.admin.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=key_id))
        await stack.create_lane(task("after-revoke"))
        await watch.until_ended()
        assert isinstance(watch.error, Unauthenticated), watch.error
        assert watch.of("delta") == []  # nothing after the revocation reached the caller
    finally:
        await watch.close()


async def test_an_org_admin_removed_while_watching_is_sent_nothing_after(
    feed_stack: Stack,
) -> None:
    """The catch-up after the removal resolves the caller again: the member's roles are gone,
    so the stream ends (the coordinator is hidden from a stranger, as on every read)."""
    stack = feed_stack
    admin = await new_user(stack, role=admin_pb2.OrgMember.ORG_ADMIN)
    watch = Watch(admin.client, stack.cid)
    try:
        await watch.until(lambda w: "snapshot" in w.kinds())
        await stack.admin.admin.RemoveOrgMember(
            admin_pb2.RemoveOrgMemberRequest(org_slug=stack.org, user_id=admin.user_id)
        )
        await stack.create_lane(task("after-removal"))
        await watch.until_ended()
        assert isinstance(watch.error, NotFound), watch.error
        assert watch.of("delta") == []
    finally:
        await watch.close()


async def test_resuming_a_feed_with_a_revoked_key_is_refused(feed_stack: Stack) -> None:
    """A reconnect that would catch up from ``since`` is refused before any frame."""
    stack = feed_stack
    key_id, client = await stack.work_key()
    first = Watch(client, stack.cid)
    try:
        await first.until(lambda w: "snapshot" in w.kinds())
        resume_from = first.delivered()
    finally:
        await first.close()
    await stack.create_lane(task("missed"))  # what the catch-up would send
    await stack.admin.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=key_id))
    again = Watch(client, stack.cid, since=resume_from)
    try:
        await again.until_ended()
        assert isinstance(again.error, Unauthenticated), again.error
        assert again.frames == []
    finally:
        await again.close()


async def test_switching_the_coordinator_off_ends_the_stream(feed_stack: Stack) -> None:
    stack = feed_stack
    watch = Watch(stack.worker, stack.cid)
    try:
        await watch.until(lambda w: "snapshot" in w.kinds())
        await stack.admin.coordinators.UpdateWorkCoordinator(
            work_coordinator_pb2.UpdateWorkCoordinatorRequest(
                coordinator_id=stack.cid,
                work_coordinator=work_coordinator_pb2.WorkCoordinator(
                    scope=work_coordinator_pb2.WorkCoordinator.ORG, enabled=False
                ),
                update_mask={"paths": ["enabled"]},
            )
        )
        await watch.until_ended()
        assert isinstance(watch.error, CoordinationDisabled), watch.error
    finally:
        await watch.close()


async def test_who_may_not_read_never_gets_a_frame(feed_stack: Stack) -> None:
    stack = feed_stack
    other = await stack.new_coordinator()
    _, out_of_scope = await stack.work_key(coordinator_ids=[other])
    cases = [
        (stack.client(None), (Unauthenticated,)),
        (stack.client("wck_" + secrets.token_urlsafe(32)), (Unauthenticated,)),
        (out_of_scope, (NotFound, PermissionDenied)),
    ]
    for client, errors in cases:
        watch = Watch(client, stack.cid)
        try:
            await watch.until_ended()
            assert watch.frames == []
            assert isinstance(watch.error, errors), watch.error
        finally:
            await watch.close()
    watch = Watch(stack.admin, "not a valid id!")
    await watch.until_ended()
    assert isinstance(watch.error, InvalidArgument)
    await watch.close()


async def test_nothing_private_ever_appears_in_a_frame(feed_stack: Stack) -> None:
    stack = feed_stack
    marker = f"secret-{secrets.token_hex(8)}"
    watch = Watch(stack.admin, stack.cid, since=0)
    try:
        await stack.create_lane(
            task("a", inputs={"prompt": f"{marker}-item-input"}),
            inputs={"repo": f"{marker}-lane-input"},
        )
        leases = await stack.lease()
        await stack.start(leases[0], identity(stack.clock))
        await stack.heartbeat(leases[0], progress="tests 1/2")
        await stack.checkpoint(
            leases[0],
            lane_pb2.Checkpoint(
                summary=f"{marker}-checkpoint-summary",
                files_changed=[f"src/{marker}-file.py"],
                next_action=f"{marker}-next",
            ),
        )
        # A resumed feed and a fresh snapshot see the same data from the other side.
        snapshot_watch = Watch(stack.admin, stack.cid)
        current = await current_revision(stack)
        await watch.until_revision(current)
        await snapshot_watch.until(lambda w: "snapshot" in w.kinds())
        await snapshot_watch.close()
        frames = [*watch.frames, *snapshot_watch.frames]
        token = leases[0].lease_token
        for frame in frames:
            text = json_format.MessageToJson(frame)
            raw = frame.SerializeToString()
            assert marker not in text and marker.encode() not in raw, text
            assert token not in text and token.encode() not in raw, text
        assert len(watch.events()) >= 6
    finally:
        await watch.close()


async def test_lost_notifications_are_repaired_by_the_backstop_poll(feed_stack: Stack) -> None:
    """Writes through a second coordinator whose bus reaches nobody (an in-process bus of its
    own): the feed still delivers them, from the log, within the poll interval."""
    stack = feed_stack
    silent = await start_coordinator(
        CoordinatorSettings.model_validate(
            {"DATABASE_URL": stack.database_url, "listen_coordinator": "127.0.0.1:0"}
        ),
        clock=stack.clock,
    )
    writer = WorkcoordClient(silent.address, stack.key_secret)
    watch = Watch(stack.admin, stack.cid)
    try:
        await watch.until(lambda w: "snapshot" in w.kinds())
        start = watch.frames[1].snapshot.revision
        for n in range(3):
            await stack.create_lane(task(f"silent-{n}"), client=writer)
        current = await current_revision(stack)
        await watch.until_revision(current, within=POLL_SECONDS * 10 + 5)
        assert as_json(watch.events()) == await log_after(stack, start)
    finally:
        await watch.close()
        await writer.close()
        await silent.stop(0)
