"""Usage on worker writes over gRPC (on SQLite and PostgreSQL): running totals kept on the
attempt, a lower total refused naming the field, bounds checked by the field rules."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.harness import Stack, expect_error, task, violated_fields
from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.kit.errors import InvalidArgument

Usage = lane_pb2.Usage


def _fence(stack: Stack, lease: worker_pb2.Lease) -> dict[str, Any]:
    return {
        "coordinator_id": stack.cid,
        "lease_id": lease.lease_id,
        "lease_token": lease.lease_token,
    }


async def test_heartbeats_and_complete_keep_the_attempts_running_totals(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    workers = stack.worker.workers
    first = Usage(input_tokens=1200, output_tokens=300, cost_micros=400_000, model="sonnet-4")
    await workers.Heartbeat(worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=first))
    item = await stack.get_item(lease.item)
    assert item.attempts[0].usage == first
    # A lower total is refused, naming the field, and changes nothing.
    lower = Usage(input_tokens=1199, output_tokens=300, cost_micros=400_000)
    err = await expect_error(
        workers.Heartbeat(worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=lower)),
        InvalidArgument,
    )
    assert violated_fields(err) == {"usage.input_tokens"}
    assert (await stack.get_item(lease.item)).attempts[0].usage == first
    # Out of bounds: the field rules refuse it before the engine sees it.
    huge = Usage(cost_micros=10**13)
    err = await expect_error(
        workers.Heartbeat(worker_pb2.HeartbeatRequest(**_fence(stack, lease), usage=huge)),
        InvalidArgument,
    )
    assert violated_fields(err) == {"usage.cost_micros"}
    final = Usage(input_tokens=2000, output_tokens=500, cache_read_tokens=7, cost_micros=800_000)
    done = await workers.Complete(
        worker_pb2.CompleteRequest(
            **_fence(stack, lease), evidence=lane_pb2.Evidence(summary="ok"), usage=final
        )
    )
    expected = Usage(
        input_tokens=2000,
        output_tokens=500,
        cache_read_tokens=7,
        cost_micros=800_000,
        model="sonnet-4",
    )
    assert done.attempt.usage == expected
    assert (await stack.get_item(lease.item)).attempts[0].usage == expected


@pytest.mark.parametrize("write", ["fail", "checkpoint"])
async def test_fail_and_checkpoint_store_the_final_usage(stack: Stack, write: str) -> None:
    await stack.create_lane(task("a"))
    lease = await stack.lease_and_start()
    workers = stack.worker.workers
    final = Usage(output_tokens=90, cost_micros=1234, model="gpt-5")
    if write == "fail":
        error = lane_pb2.ErrorInfo(message="boom", type="Boom", retryable=True)
        failed = await workers.Fail(
            worker_pb2.FailRequest(**_fence(stack, lease), error=error, usage=final)
        )
        attempt = failed.attempt
    else:
        point = lane_pb2.Checkpoint(summary="half way")
        checkpointed = await workers.Checkpoint(
            worker_pb2.CheckpointRequest(**_fence(stack, lease), checkpoint=point, usage=final)
        )
        attempt = checkpointed.attempt
    assert attempt.usage == final
    assert (await stack.get_item(lease.item)).attempts[0].usage == final
