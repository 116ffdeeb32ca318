"""Tracker connections: stored, listed by id per work coordinator, updated and deleted."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.domain.tickets import TrackerConnection, TrackerKind

from .records import T0, at


def connection(tracker_id: str, cid: str = "wc_a", **changes: object) -> TrackerConnection:
    record = TrackerConnection(
        tracker_id=tracker_id,
        coordinator_id=cid,
        tracker=TrackerKind.GITLAB,
        base_url="https://gitlab.example",
        projects=("acme/parser", "acme/web"),
        credential_ciphertext="v1:c2VhbGVk",
        credential_fingerprint="fp:0123456789ab",
        create_time=T0,
        update_time=T0,
        created_by="user:u_1",
    )
    return replace(record, **changes)  # type: ignore[arg-type]


@pytest.mark.port(
    "insert_tracker_connection",
    "get_tracker_connection",
    "list_tracker_connections",
    "update_tracker_connection",
    "delete_tracker_connection",
)
async def test_tracker_connections_round_trip(store: Store) -> None:
    jira = connection("trk_b", tracker=TrackerKind.JIRA, projects=("OPS",), done_status="Done")
    async with store.write() as tx:
        await tx.insert_tracker_connection(connection("trk_c"))
        await tx.insert_tracker_connection(jira)
        await tx.insert_tracker_connection(connection("trk_a"))
        await tx.insert_tracker_connection(connection("trk_other", cid="wc_b"))
    healthy = replace(
        jira,
        last_success_time=at(5),
        last_error="Jira answered 401",
        last_error_time=at(6),
        update_time=at(6),
    )
    async with store.write() as tx:
        await tx.update_tracker_connection(healthy)
        await tx.update_tracker_connection(connection("trk_missing"))  # no-op
        assert await tx.delete_tracker_connection("trk_c")
        assert not await tx.delete_tracker_connection("trk_c")
    async with store.read() as reader:
        assert await reader.get_tracker_connection("trk_b") == healthy
        assert await reader.get_tracker_connection("trk_missing") is None
        assert await reader.get_tracker_connection("trk_c") is None
        listed = await reader.list_tracker_connections("wc_a", "", 10)
        assert [c.tracker_id for c in listed] == ["trk_a", "trk_b"]
        assert listed[0] == connection("trk_a")
        assert listed[0].projects == ("acme/parser", "acme/web")
        after = await reader.list_tracker_connections("wc_a", "trk_a", 1)
        assert [c.tracker_id for c in after] == ["trk_b"]
        assert await reader.list_tracker_connections("wc_none", "", 10) == []
