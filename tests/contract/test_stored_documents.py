"""Stored documents through the stores: every worker report with every field set, a placement
and a worker fence, written through the port and read back equal, then shown as the messages
they came from; what release 0.1 stored, read back unchanged; and a document with a key that
names no field kept as it is by every store, so its reader refuses it by name (no store, and no
reader, drops it)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.support.reports import REPORTS, every_field_set, release_0_1_documents
from workcoord.api.v1 import policy_pb2
from workcoord.coordinator.domain.documents import UnreadableDocument
from workcoord.coordinator.domain.model import Attempt, Item, Lane
from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.domain.specs import (
    Checkpoint,
    Evidence,
    Failure,
    Receipt,
    RunIdentity,
)
from workcoord.coordinator.transport import mapping as m

from .records import attempt, item, lane, seed_coordinator, seed_lane, worker

PLACEMENT = policy_pb2.Placement(require_labels={"gpu": "t4"}, worker_id="w1", exclusive=["gpu:0"])
STORED = ("insert_lane", "insert_items", "insert_attempts", "get_lane", "get_item", "get_attempt")


async def _store_and_read(
    store: Store, lane_record: Lane, item_record: Item, attempt_record: Attempt
) -> tuple[Lane, Item, Attempt]:
    await seed_coordinator(store)
    await seed_lane(store, item_record, record=lane_record)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([attempt_record])
    async with store.read() as reader:
        got_lane = await reader.get_lane(lane_record.lane_id)
        got_item = await reader.get_item(item_record.item_id)
        got_attempt = await reader.get_attempt(attempt_record.lease_id)
    assert got_lane is not None and got_item is not None and got_attempt is not None
    return got_lane, got_item, got_attempt


@pytest.mark.port(*STORED)
async def test_every_field_of_every_report_round_trips_through_the_store(store: Store) -> None:
    pb = {kind: every_field_set(report.message) for kind, report in REPORTS.items()}
    value = {kind: REPORTS[kind].from_pb(pb[kind]) for kind in REPORTS}
    work = replace(
        item("it_a", "ln_a"),
        evidence=value["evidence"].to_json(),
        last_error=value["failure"].to_json(),
        placement=m.to_dict(PLACEMENT),
    )
    lease = replace(
        attempt("ls_a", work),
        run_identity=value["run_identity"].to_json(),
        error=value["failure"].to_json(),
        checkpoint=value["checkpoint"].to_json(),
    )
    record = replace(
        lane("ln_a"), receipt=value["receipt"].to_json(), placement=m.to_dict(PLACEMENT)
    )

    got_lane, got_item, got_attempt = await _store_and_read(store, record, work, lease)

    assert (got_lane, got_item, got_attempt) == (record, work, lease)
    assert got_attempt.run_identity is not None and got_attempt.checkpoint is not None
    assert RunIdentity.from_json(got_attempt.run_identity) == value["run_identity"]
    assert Checkpoint.from_json(got_attempt.checkpoint) == value["checkpoint"]
    assert got_item.evidence is not None and got_item.last_error is not None
    assert Evidence.from_json(got_item.evidence) == value["evidence"]
    assert Failure.from_json(got_item.last_error) == value["failure"]
    assert got_lane.receipt is not None
    assert Receipt.from_json(got_lane.receipt) == value["receipt"]
    # Readers are shown exactly the messages the worker sent.
    shown_attempt = m.attempt_to_pb(got_attempt)
    assert shown_attempt.run_identity == pb["run_identity"]
    assert shown_attempt.error == pb["failure"]
    shown_item = m.item_to_pb(got_item)
    assert shown_item.evidence == pb["evidence"]
    assert shown_item.last_error == pb["failure"]
    assert shown_item.placement == PLACEMENT
    assert m.receipt_to_pb(Receipt.from_json(got_lane.receipt)) == pb["receipt"]


def _first(column: str) -> dict[str, Any]:
    return release_0_1_documents()[column][0]


@pytest.mark.port(*STORED)
async def test_documents_stored_by_release_0_1_read_back_unchanged(store: Store) -> None:
    documents = release_0_1_documents()
    work = replace(
        item("it_a", "ln_a"),
        evidence=_first("items.evidence"),
        last_error=_first("items.last_error"),
        placement=_first("placement"),
    )
    lease = replace(
        attempt("ls_a", work),
        run_identity=_first("attempts.run_identity"),
        error=_first("attempts.error"),
        checkpoint=_first("attempts.checkpoint"),
    )
    record = replace(lane("ln_a"), receipt=_first("lanes.receipt"), placement=_first("placement"))

    got_lane, got_item, got_attempt = await _store_and_read(store, record, work, lease)

    assert (got_lane, got_item, got_attempt) == (record, work, lease)
    for column, stored in (
        ("attempts.run_identity", got_attempt.run_identity),
        ("attempts.error", got_attempt.error),
        ("attempts.checkpoint", got_attempt.checkpoint),
        ("items.evidence", got_item.evidence),
        ("items.last_error", got_item.last_error),
        ("lanes.receipt", got_lane.receipt),
    ):
        assert stored == documents[column][0]
    assert m.item_to_pb(got_item).placement == PLACEMENT
    assert m.attempt_to_pb(got_attempt).run_identity.pid == 4242


@pytest.mark.port(*STORED)
async def test_a_stored_key_that_names_no_field_is_kept_and_then_refused(store: Store) -> None:
    # A newer release (or a field renamed without keeping its stored name) wrote "worktree".
    identity = {**_first("attempts.run_identity"), "worktree": "/srv/work/tree"}
    evidence = {**_first("items.evidence"), "coverage": "91%"}
    work = replace(item("it_a", "ln_a"), evidence=evidence, placement=None)
    lease = replace(attempt("ls_a", work), run_identity=identity)

    _, got_item, got_attempt = await _store_and_read(store, lane("ln_a"), work, lease)

    assert got_attempt.run_identity == identity and got_item.evidence == evidence
    with pytest.raises(UnreadableDocument, match=r"stored RunIdentity: worktree: unknown field"):
        m.attempt_to_pb(got_attempt)
    with pytest.raises(UnreadableDocument, match=r"stored Evidence: coverage: unknown field"):
        m.item_to_pb(got_item)


@pytest.mark.port("upsert_worker", "set_worker_fence", "get_worker")
async def test_a_worker_fence_round_trips_through_the_store(store: Store) -> None:
    (fence,) = release_0_1_documents()["workers.fence"]
    await seed_coordinator(store)
    async with store.write("wc_a") as tx:
        await tx.upsert_worker(worker("w1"))
        await tx.set_worker_fence("wc_a", "w1", fence)
    async with store.read() as reader:
        got = await reader.get_worker("wc_a", "w1")
    assert got is not None and got.fence == fence
    shown = m.worker_fence_to_pb(got.fence)
    assert (shown.lease_id, list(shown.exclusive)) == ("ls_1", ["resource:gpu-0"])
