"""The SDK: the credential on every call, typed errors from unary calls and streams."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workcoord.api.v1 import admin_pb2, feed_pb2, lane_pb2, worker_pb2
from workcoord.client import LeaseHandle, WorkcoordClient, Worker, run_identity_here
from workcoord.client.worker import process_start_time
from workcoord.kit.errors import FieldViolation, InvalidArgument, LeaseLost, Unauthenticated

from .fakes import GOOD_TOKEN, STALE_LEASE, FakeCoordinator


async def test_token_is_sent_as_bearer_metadata(coordinator: FakeCoordinator) -> None:
    async with WorkcoordClient(coordinator.address, GOOD_TOKEN) as client:
        await client.admin.GetCurrentPrincipal(admin_pb2.GetCurrentPrincipalRequest())
        # A per-call credential is replaced by the client's, never sent twice.
        await client.admin.ListOrgs(
            admin_pb2.ListOrgsRequest(), metadata=(("authorization", "Bearer other"),)
        )
    assert coordinator.recorded.last("GetCurrentPrincipal")[1] == f"Bearer {GOOD_TOKEN}"
    assert coordinator.recorded.last("ListOrgs")[1] == f"Bearer {GOOD_TOKEN}"


async def test_no_token_sends_no_credential(coordinator: FakeCoordinator) -> None:
    async with WorkcoordClient(coordinator.address) as client:
        await client.admin.ListOrgs(admin_pb2.ListOrgsRequest())
    assert coordinator.recorded.last("ListOrgs")[1] == ""


async def test_errors_arrive_typed_with_field_violations(coordinator: FakeCoordinator) -> None:
    async with WorkcoordClient(coordinator.address, GOOD_TOKEN) as client:
        with pytest.raises(InvalidArgument) as caught:
            await client.admin.CreateOrg(admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug="ACME")))
    assert caught.value.field_violations == [FieldViolation("org.slug", "must be lowercase")]


async def test_stream_messages_and_errors(coordinator: FakeCoordinator) -> None:
    async with WorkcoordClient(coordinator.address, GOOD_TOKEN) as client:
        frames = [f async for f in client.feed.Watch(feed_pb2.WatchRequest(coordinator_id="c1"))]
        assert [f.hello.coordinator_id for f in frames] == ["c1"]
        assert coordinator.recorded.last("Watch")[1] == f"Bearer {GOOD_TOKEN}"

        received: list[feed_pb2.WatchResponse] = []
        with pytest.raises(InvalidArgument) as caught:
            async for frame in client.feed.Watch(feed_pb2.WatchRequest(coordinator_id="gone")):
                received.append(frame)
        assert len(received) == 1
        assert caught.value.field_violations[0].field == "since"


async def test_unreachable_server_is_a_typed_error() -> None:
    async with WorkcoordClient("127.0.0.1:1", GOOD_TOKEN) as client:
        with pytest.raises(Exception) as caught:
            await client.admin.ListOrgs(admin_pb2.ListOrgsRequest(), timeout=5)
    assert getattr(caught.value, "reason", None) in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
    assert not isinstance(caught.value, Unauthenticated)


async def test_recovery_stub_uses_its_own_address(coordinator: FakeCoordinator) -> None:
    client = WorkcoordClient("127.0.0.1:1", GOOD_TOKEN, recovery_address=coordinator.address)
    assert client.recovery is client.recovery  # one channel, opened on first use
    await client.close()


async def test_worker_calls_carry_lease_and_token(coordinator: FakeCoordinator) -> None:
    async with WorkcoordClient(coordinator.address, GOOD_TOKEN) as client:
        worker = Worker(client, "c1", "w1", "machine")
        leases = await worker.lease(max_items=5, lease_seconds=30)
        assert [lease.lease_id for lease in leases] == ["lease-1"]
        request, _ = coordinator.recorded.last("Lease")
        assert isinstance(request, worker_pb2.LeaseRequest)
        assert (request.worker_id, request.worker_class, request.max_items) == ("w1", "machine", 5)
        assert len(request.request_id) == 32  # a fresh random id on every call
        await worker.lease(request_id="retry-7")
        again, _ = coordinator.recorded.last("Lease")
        assert isinstance(again, worker_pb2.LeaseRequest) and again.request_id == "retry-7"
        assert again.request_id != request.request_id

        identity = run_identity_here("agent-7", "codex", "fleet-bot", "/srv/x", "fix/x")
        await worker.start(leases[0], identity)
        start, _ = coordinator.recorded.last("Start")
        assert isinstance(start, worker_pb2.StartRequest)
        assert (start.lease_id, start.lease_token) == ("lease-1", "wcl_token")
        assert start.run_identity == identity

        handle = LeaseHandle("lease-1", "wcl_token")
        beat = await worker.heartbeat(handle, "tests 1/2")
        assert beat.lease_expire_time.seconds > 0
        await worker.complete(handle, lane_pb2.Evidence(summary="done"))
        await worker.fail(handle, "boom", error_type="Timeout", retryable=False)
        await worker.checkpoint(handle, lane_pb2.Checkpoint(summary="half"))
        await worker.release(handle, "bye")
        fail, _ = coordinator.recorded.last("Fail")
        assert isinstance(fail, worker_pb2.FailRequest)
        assert (fail.error.message, fail.error.type, fail.error.retryable) == (
            "boom",
            "Timeout",
            False,
        )
        release, authorization = coordinator.recorded.last("Release")
        assert isinstance(release, worker_pb2.ReleaseRequest)
        assert release.reason == "bye" and authorization == f"Bearer {GOOD_TOKEN}"


async def test_stale_lease_raises_lease_lost(coordinator: FakeCoordinator) -> None:
    async with WorkcoordClient(coordinator.address, GOOD_TOKEN) as client:
        worker = Worker(client, "c1", "w1", "machine")
        with pytest.raises(LeaseLost) as caught:
            await worker.heartbeat(LeaseHandle(STALE_LEASE, "wcl_old"))
    assert caught.value.cause == "expired"


def test_lease_handle_never_prints_its_token() -> None:
    assert "secret" not in repr(LeaseHandle("l1", "wcl_secret"))


def test_run_identity_is_this_process() -> None:
    import os
    import socket

    identity = run_identity_here("a", "codex", "bot", "relative/dir", "main")
    assert identity.pid == os.getpid()
    assert identity.hostname == socket.gethostname()
    assert identity.worktree_path == os.path.abspath("relative/dir")
    started = identity.started_at.ToDatetime(tzinfo=UTC)
    now = datetime.now(UTC)
    assert now - timedelta(days=1) < started <= now


def test_process_start_time_of_another_process_is_not_later_than_ours() -> None:
    import os

    assert process_start_time(os.getppid()) <= process_start_time()
