"""B2 wake latency: commit of a new item -> return of a waiting long-poll ``Lease``.

``uv run python -m bench.b2_wake_latency [--samples 200] [--settle-ms 30]``

A worker long-polls ``Lease(wait_seconds=30)`` on an empty class; the bench then commits one
new item (``CreateLane`` with one TASK item of that class) and measures the time from the
moment ``CreateLane`` returned (the commit is visible) to the moment the waiting ``Lease``
returned with the item. Before each sample the bench waits ``--settle-ms`` after issuing the
Lease so the waiter is parked. The lease is then completed so the next sample starts empty.

Two modes, each with its own coordinator processes on one scratch database and Redis:
same-process (waiter and creator on coordinator A) and cross-replica (waiter on A, creator on
B: the wake travels through the Redis stream). Targets: p50 <= 5 ms in both modes, p99 <= 25 ms
same-process and <= 50 ms cross-replica. A negative sample means the Lease returned before the
CreateLane response reached the bench.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

from bench import common
from workcoord.api.v1 import lane_pb2, worker_pb2

TARGET_P50_MS = 5.0
# p99 by mode: a wake from another replica also crosses Redis.
TARGET_P99_MS = {"same-process": 25.0, "cross-replica": 50.0}
WAKE_CLASS = "wake"


async def sample_wakes(
    waiter_address: str,
    creator_address: str,
    tenant: common.Tenant,
    samples: int,
    settle: float,
) -> list[float]:
    """``samples`` wake latencies in milliseconds."""
    identity = common.run_identity()
    latencies: list[float] = []
    async with (
        common.client(waiter_address, tenant.key_secret) as waiter,
        common.client(creator_address, tenant.key_secret) as creator,
    ):
        await waiter.channel.channel_ready()
        await creator.channel.channel_ready()
        for index in range(samples):
            woke: list[float] = []

            async def wait_for_work(out: list[float] = woke) -> worker_pb2.LeaseResponse:
                response = await waiter.workers.Lease(
                    worker_pb2.LeaseRequest(
                        coordinator_id=tenant.coordinator_id,
                        worker_id="bench-waiter",
                        worker_class=WAKE_CLASS,
                        max_items=1,
                        lease_seconds=60,
                        wait_seconds=30,
                        run_identity=identity,
                    )
                )
                out.append(time.perf_counter())
                return response

            waiting = asyncio.create_task(wait_for_work())
            await asyncio.sleep(settle)  # let the waiter park in its long poll
            if waiting.done():
                raise RuntimeError(
                    f"the Lease returned before any item existed: {waiting.result()}"
                )
            lane = common.task_lane(f"wake {index}", 1, WAKE_CLASS)
            await creator.lanes.CreateLane(
                lane_pb2.CreateLaneRequest(coordinator_id=tenant.coordinator_id, lane=lane)
            )
            committed = time.perf_counter()
            response = await waiting
            if len(response.leases) != 1:
                raise RuntimeError(f"sample {index}: the long poll returned {response}")
            latencies.append((woke[0] - committed) * 1000.0)
            lease = response.leases[0]
            await waiter.workers.Complete(
                worker_pb2.CompleteRequest(
                    coordinator_id=tenant.coordinator_id,
                    lease_id=lease.lease_id,
                    lease_token=lease.lease_token,
                )
            )
    return latencies


def summarise(latencies: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(common.percentile(latencies, 0.50), 3),
        "p90_ms": round(common.percentile(latencies, 0.90), 3),
        "p99_ms": round(common.percentile(latencies, 0.99), 3),
        "max_ms": round(max(latencies), 3),
        "min_ms": round(min(latencies), 3),
        "samples": len(latencies),
    }


def met(mode: str, summary: dict[str, float]) -> bool:
    """Whether ``mode``'s figures meet its targets."""
    return summary["p50_ms"] <= TARGET_P50_MS and summary["p99_ms"] <= TARGET_P99_MS[mode]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    pgbench = await common.run_pgbench(seconds=args.pgbench_seconds)
    common.print_pgbench(pgbench)
    load_before = round(os.getloadavg()[0], 2)
    modes: dict[str, dict[str, float]] = {}
    async with common.cluster(replicas=2) as cluster:
        tenant = await common.create_tenant(cluster.address, cluster.admin_token, {WAKE_CLASS: 10})
        a, b = (c.address for c in cluster.coordinators)
        for mode, creator_address in (("same-process", a), ("cross-replica", b)):
            latencies = await sample_wakes(
                a, creator_address, tenant, args.samples, args.settle_ms / 1000.0
            )
            modes[mode] = summarise(latencies)
            print(f"{mode}: {modes[mode]}", flush=True)
    rows = []
    for mode, summary in modes.items():
        rows.append(
            [
                mode,
                int(summary["samples"]),
                summary["p50_ms"],
                summary["p90_ms"],
                summary["p99_ms"],
                summary["max_ms"],
                "yes" if met(mode, summary) else "NO",
            ]
        )
    targets = ", ".join(f"{mode} p99 <= {p99:g}" for mode, p99 in TARGET_P99_MS.items())
    common.print_table(
        f"B2 wake latency (ms, commit return -> Lease return; target p50 <= {TARGET_P50_MS:g}, "
        f"{targets}; 1-minute load average {load_before} before, "
        f"{round(os.getloadavg()[0], 2)} after)",
        ["mode", "samples", "p50", "p90", "p99", "max", "met"],
        rows,
    )
    figures: dict[str, Any] = {
        "params": {"samples": args.samples, "settle_ms": args.settle_ms},
        "modes": modes,
        "pgbench": pgbench.as_dict(),
        "loadavg_1m_before": load_before,
        "targets_met": {mode: met(mode, f) for mode, f in modes.items()},
    }
    return common.finish("b2_wake_latency", args, figures)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b2_wake_latency", description=__doc__)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--settle-ms", type=float, default=30.0)
    return common.add_common_flags(p)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
