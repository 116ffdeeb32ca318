"""Worker reports through the whole coordinator, on SQLite and PostgreSQL: what a worker sends
(run identity, evidence with artifacts, checks and a receipt, a failure) is what readers are
shown; a stored report with a key this release does not know fails the read loudly (INTERNAL,
with the document and key in the log) instead of being shown without it."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.harness import Stack, expect_error, identity, task
from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.kit.errors import Internal


def _evidence(stack: Stack) -> lane_pb2.Evidence:
    evidence = lane_pb2.Evidence(
        summary="all green",
        links=["https://example.test/pr/1", "https://example.test/run/2"],
        artifacts=[
            lane_pb2.Artifact(name="wheel", uri="s3://b/w.whl", sha256="ab" * 32),
            lane_pb2.Artifact(name="log", uri="s3://b/log"),
        ],
        checks=[
            lane_pb2.Check(name="pytest", status=lane_pb2.Check.PASSED),
            lane_pb2.Check(name="e2e", status=lane_pb2.Check.SKIPPED),
        ],
        findings=["none"],
        receipt=lane_pb2.Receipt(environment="prod", version="1.4.2", url="https://x.test/r"),
    )
    evidence.receipt.time.FromDatetime(stack.clock.now())
    return evidence


async def _set_column(stack: Stack, table: str, column: str, key: str, value: str) -> None:
    """Write ``value`` (JSON) as if an older or newer release had stored it."""
    id_column = {"items": "item_id", "attempts": "lease_id"}[table]
    engine = create_async_engine(stack.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(f"UPDATE {table} SET {column} = :v WHERE {id_column} = :k"),
                {"v": value, "k": key},
            )
    finally:
        await engine.dispose()


async def test_reports_are_shown_as_the_worker_sent_them(stack: Stack) -> None:
    await stack.create_lane(task("done"), task("failed"))
    run_identity = identity(stack.clock)
    done = await stack.lease_and_start(run_identity=run_identity)
    evidence = _evidence(stack)
    await stack.worker.workers.Complete(
        worker_pb2.CompleteRequest(
            coordinator_id=stack.cid,
            lease_id=done.lease_id,
            lease_token=done.lease_token,
            evidence=evidence,
        )
    )
    failed = await stack.lease_and_start()
    await stack.fail(failed, retryable=False)

    shown = await stack.get_item(done.item)
    assert shown.evidence == evidence
    (attempt,) = shown.attempts
    assert attempt.run_identity == run_identity
    error = lane_pb2.ErrorInfo(message="boom", type="Boom", retryable=False)
    shown_failed = await stack.get_item(failed.item)
    assert shown_failed.last_error == error
    assert [a.error for a in shown_failed.attempts] == [error]


async def test_a_stored_report_with_an_unknown_key_fails_the_read_loudly(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    await stack.create_lane(task("done"))
    lease = await stack.lease_and_start()
    await stack.complete(lease, summary="all green")
    await _set_column(
        stack, "items", "evidence", lease.item.item_id, '{"summary": "ok", "coverage": "91%"}'
    )

    with caplog.at_level(logging.ERROR):
        await expect_error(stack.get_item(lease.item), Internal, "INTERNAL")
    assert "stored Evidence: coverage: unknown field" in caplog.text

    # Put back as the current release writes it, the item reads again.
    await _set_column(stack, "items", "evidence", lease.item.item_id, '{"summary": "ok"}')
    assert (await stack.get_item(lease.item)).evidence == lane_pb2.Evidence(summary="ok")
