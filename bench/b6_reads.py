"""B6 read paths: ``GetView`` and ``Explain`` (why) latency over gRPC on a busy coordinator.

``uv run python -m bench.b6_reads [--lanes 500] [--items-per-lane 20] [--workers 50]
[--samples 200]``

One coordinator process; an ORG work coordinator with ``--lanes`` CUSTOM lanes of
``--items-per-lane`` no-op items (10,000 by default) created through ``CreateLane``, and
``--workers`` workers (own worker ids, one work key) that each lease 2 items with a run identity
and complete one of them, so the view carries live workers, running, completed and queued
items. Then, one call at a time (after 10 unmeasured warm-up calls each), ``--samples`` calls
of each read, over one gRPC channel with the work key:

- ``GetView(page_size=500)``: the whole view of up to 500 lanes in one page;
- ``Explain(item_id=…)``: why a random item is where it is;
- ``Explain(lane_id=…)``: why a random lane is where it is.

Reports p50/p90/p99/max per read, the coordinator's CPU time per call (comparable across runs
whatever else loads the machine), the load average after each read and the coordinator's peak
RSS. Targets: view p99 ≤ 100 ms, why p99 ≤ 20 ms (both kinds).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench import common
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2

TARGET_VIEW_P99_MS = 100.0
TARGET_WHY_P99_MS = 20.0
WARM_UP = 10


async def populate(
    address: str, tenant: common.Tenant, lanes: int, per_lane: int, concurrency: int = 4
) -> tuple[list[str], list[str]]:
    """``lanes`` lanes of ``per_lane`` items; their lane ids and item ids."""
    lane_ids: list[str] = []
    item_ids: list[str] = []
    todo = list(range(lanes))
    async with common.client(address, tenant.key_secret) as creator:

        async def create() -> None:
            while todo:
                index = todo.pop()
                created = await creator.lanes.CreateLane(
                    lane_pb2.CreateLaneRequest(
                        coordinator_id=tenant.coordinator_id,
                        lane=common.task_lane(f"bench lane {index}", per_lane),
                    )
                )
                lane_ids.append(created.lane.lane_id)
                item_ids.extend(item.item_id for item in created.lane.items)

        await asyncio.gather(*(create() for _ in range(concurrency)))
    return lane_ids, item_ids


async def occupy(address: str, tenant: common.Tenant, workers: int) -> None:
    """Each of ``workers`` workers leases 2 items and completes one."""
    identity = common.run_identity()
    async with common.client(address, tenant.key_secret) as bench_client:

        async def worker(index: int) -> None:
            response = await bench_client.workers.Lease(
                worker_pb2.LeaseRequest(
                    coordinator_id=tenant.coordinator_id,
                    worker_id=f"bench-w{index}",
                    worker_class=common.WORKER_CLASS,
                    max_items=2,
                    lease_seconds=300,
                    run_identity=identity,
                )
            )
            if response.leases:
                lease = response.leases[0]
                await bench_client.workers.Complete(
                    worker_pb2.CompleteRequest(
                        coordinator_id=tenant.coordinator_id,
                        lease_id=lease.lease_id,
                        lease_token=lease.lease_token,
                    )
                )

        for start in range(0, workers, 10):
            await asyncio.gather(*(worker(i) for i in range(start, min(workers, start + 10))))


async def sample(call: Callable[[], Awaitable[Any]], count: int) -> list[float]:
    """Milliseconds of ``count`` sequential calls, after WARM_UP unmeasured ones."""
    for _ in range(WARM_UP):
        await call()
    out: list[float] = []
    for _ in range(count):
        began = time.perf_counter()
        await call()
        out.append(1000.0 * (time.perf_counter() - began))
    return out


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "p50": round(common.percentile(samples, 0.50), 2),
        "p90": round(common.percentile(samples, 0.90), 2),
        "p99": round(common.percentile(samples, 0.99), 2),
        "max": round(max(samples), 2),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    async with common.cluster() as cluster:
        address = cluster.address
        tenant = await common.create_tenant(
            address, cluster.admin_token, {common.WORKER_CLASS: 2 * args.workers}
        )
        cid = tenant.coordinator_id
        began = time.perf_counter()
        lane_ids, item_ids = await populate(address, tenant, args.lanes, args.items_per_lane)
        await occupy(address, tenant, args.workers)
        print(
            f"{len(item_ids):,} items in {len(lane_ids)} lanes, {args.workers} workers "
            f"set up in {time.perf_counter() - began:.1f} s",
            flush=True,
        )
        async with common.client(address, tenant.key_secret) as reader:
            await reader.channel.channel_ready()
            events = (
                await reader.coordinators.ListEvents(
                    work_coordinator_pb2.ListEventsRequest(coordinator_id=cid, page_size=1)
                )
            ).revision
            first = await reader.coordinators.GetView(
                work_coordinator_pb2.GetViewRequest(coordinator_id=cid, page_size=500)
            )
            view_lanes = len(first.view.lanes)
            view_workers = len(first.view.workers)

            async def view() -> None:
                await reader.coordinators.GetView(
                    work_coordinator_pb2.GetViewRequest(coordinator_id=cid, page_size=500)
                )

            async def why_item() -> None:
                await reader.coordinators.Explain(
                    work_coordinator_pb2.ExplainRequest(
                        coordinator_id=cid, item_id=rng.choice(item_ids)
                    )
                )

            async def why_lane() -> None:
                await reader.coordinators.Explain(
                    work_coordinator_pb2.ExplainRequest(
                        coordinator_id=cid, lane_id=rng.choice(lane_ids)
                    )
                )

            pid = cluster.coordinators[0].process.pid
            results: dict[str, dict[str, float]] = {}
            load: dict[str, float] = {}
            for name, call in (("view", view), ("why_item", why_item), ("why_lane", why_lane)):
                cpu_before = common.cpu_seconds(pid)
                output = f"{args.profile}.{name}" if args.profile else None
                with common.profiled(pid, output):
                    results[name] = summary(await sample(call, args.samples))
                # CPU of the coordinator per call: what a read costs it, whatever else loads
                # the machine (the warm-up calls included).
                cpu = common.cpu_seconds(pid) - cpu_before
                results[name]["cpu_ms_per_call"] = round(1000.0 * cpu / (args.samples + WARM_UP), 2)
                load[name] = round(os.getloadavg()[0], 2)
                print(f"{name}: {results[name]} (1-minute load average {load[name]})", flush=True)
            rss = round(common.peak_rss_mb(pid), 1)
    targets = {
        "view_p99": results["view"]["p99"] <= TARGET_VIEW_P99_MS,
        "why_item_p99": results["why_item"]["p99"] <= TARGET_WHY_P99_MS,
        "why_lane_p99": results["why_lane"]["p99"] <= TARGET_WHY_P99_MS,
    }
    target_of = {
        "view": (TARGET_VIEW_P99_MS, targets["view_p99"]),
        "why_item": (TARGET_WHY_P99_MS, targets["why_item_p99"]),
        "why_lane": (TARGET_WHY_P99_MS, targets["why_lane_p99"]),
    }
    common.print_table(
        f"B6 reads: {len(item_ids):,} items in {len(lane_ids)} lanes, {args.workers} workers, "
        f"{events:,} events; view returned {view_lanes} lanes and {view_workers} workers; "
        f"{args.samples} sequential calls each (ms; cpu/call: coordinator CPU ms per call; "
        f"load: 1-minute load average after the read; coordinator peak RSS {rss} MiB)",
        ["read", "p50", "p90", "p99", "max", "cpu/call", "load", "target p99", "met"],
        [
            [
                name,
                figures["p50"],
                figures["p90"],
                figures["p99"],
                figures["max"],
                figures["cpu_ms_per_call"],
                load[name],
                f"<= {target_of[name][0]:.0f}",
                "yes" if target_of[name][1] else "NO",
            ]
            for name, figures in results.items()
        ],
    )
    return common.finish(
        "b6_reads",
        args,
        {
            "params": {
                "lanes": args.lanes,
                "items_per_lane": args.items_per_lane,
                "workers": args.workers,
                "samples": args.samples,
                "seed": args.seed,
            },
            "events": events,
            "view_lanes": view_lanes,
            "view_workers": view_workers,
            "coordinator_peak_rss_mb": rss,
            "loadavg_1m_after": load,
            **{f"{name}_ms": figures for name, figures in results.items()},
            "targets_met": targets,
        },
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b6_reads", description=__doc__)
    p.add_argument("--lanes", type=int, default=500)
    p.add_argument("--items-per-lane", type=int, default=20)
    p.add_argument("--workers", type=int, default=50)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    return common.add_common_flags(p, pgbench=False, profile=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
