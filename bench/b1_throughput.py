"""B1 end-to-end throughput: N no-op items, W workers over gRPC.

``uv run python -m bench.b1_throughput [--items 20000] [--workers 8] [--batch 100] [--reps 3]
[--variant both|sdk|unbatched]``

Per repetition and variant: a fresh ORG work coordinator; N items created in CUSTOM lanes of
100 (not timed); then W workers (one gRPC channel each, one work key) drain them:

- ``sdk`` (the headline, as users run it): the SDK's worker loop (``Worker.run``) with
  ``LoopOptions(concurrency=--batch)`` and a no-op handler. It leases up to ``--batch`` items
  per Lease call with its run identity (they start at once), and its writes are batched:
  completes ready within a few milliseconds go out as one ``BatchComplete``.
- ``unbatched``: the same leases, then one ``Complete`` call per item (``--inflight`` in
  flight per worker), as before batching existed.

Measured: items/s from the first Lease call to the last completion, and the coordinator's
CPU ms per item (robust to a loaded machine). Reported: the median over repetitions and its
ratio to the pgbench commit rate measured in the same run. Target: ≥ 3,000 items/s on 2
cores, within 2x of the raw PostgreSQL commit rate.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench import common
from workcoord.api.v1 import worker_pb2
from workcoord.client import Completed, LoopEvent, LoopOptions, Worker
from workcoord.client.worker_loop import Assignment

TARGET_ITEMS_PER_SECOND = 3000.0
TARGET_RATIO = 0.5  # within 2x of pgbench


TARGET_RSS_MB = 200.0  # B7


@dataclass
class Repetition:
    items: int
    seconds: float
    lease_calls: int
    empty_leases: int
    cpu_seconds: float = 0.0  # the coordinator's, over the window
    client_cpu_seconds: float = 0.0  # the workers' (this process), over the window
    began: float = 0.0  # time.monotonic() at the first Lease (B11 lines up several processes)

    @property
    def client_cpu_ms_per_item(self) -> float:
        return 1000.0 * self.client_cpu_seconds / self.items

    @property
    def cpu_ms_per_item(self) -> float:
        return 1000.0 * self.cpu_seconds / self.items

    @property
    def items_per_second(self) -> float:
        return self.items / self.seconds


async def run_workers(
    addresses: list[str],
    tenant: common.Tenant,
    items: int,
    workers: int,
    batch: int,
    inflight: int,
) -> Repetition:
    """Lease and complete ``items`` items with ``workers`` concurrent workers (worker i on
    coordinator ``addresses[i % len(addresses)]``); the timing."""
    clients = [
        common.client(addresses[i % len(addresses)], tenant.key_secret) for i in range(workers)
    ]
    identity = common.run_identity()
    state = {"leased": 0, "completed": 0, "lease_calls": 0, "empty": 0}
    done = asyncio.Event()
    finished_at = [0.0]
    go = asyncio.Event()

    async def worker(index: int) -> None:
        stub = clients[index].workers
        worker_id = f"bench-w{index}"
        await go.wait()
        while state["leased"] < items:
            response = await stub.Lease(
                worker_pb2.LeaseRequest(
                    coordinator_id=tenant.coordinator_id,
                    worker_id=worker_id,
                    worker_class=common.WORKER_CLASS,
                    max_items=batch,
                    lease_seconds=300,
                    wait_seconds=1,
                    run_identity=identity,
                )
            )
            state["lease_calls"] += 1
            if not response.leases:
                state["empty"] += 1
                continue
            state["leased"] += len(response.leases)
            pending = list(response.leases)

            async def complete_some(share: list[Any]) -> None:
                for lease in share:
                    await stub.Complete(
                        worker_pb2.CompleteRequest(
                            coordinator_id=tenant.coordinator_id,
                            lease_id=lease.lease_id,
                            lease_token=lease.lease_token,
                        )
                    )
                    state["completed"] += 1
                    if state["completed"] >= items:
                        finished_at[0] = time.perf_counter()
                        done.set()

            shares = [pending[i::inflight] for i in range(inflight)]
            await asyncio.gather(*(complete_some(s) for s in shares if s))

    try:
        # Warm the channels (connection set-up is not part of the measurement).
        await asyncio.gather(*(c.channel.channel_ready() for c in clients))
        tasks = [asyncio.create_task(worker(i)) for i in range(workers)]
        began = time.perf_counter()
        go.set()
        await asyncio.gather(*tasks)
        await done.wait()
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return Repetition(items, finished_at[0] - began, state["lease_calls"], state["empty"])


async def run_sdk_workers(
    addresses: list[str],
    tenant: common.Tenant,
    items: int,
    workers: int,
    batch: int,
    ready: Callable[[], Awaitable[object]] | None = None,
) -> Repetition:
    """Drain ``items`` with ``workers`` SDK worker loops holding up to ``batch`` leases each
    (worker i on coordinator ``addresses[i % len(addresses)]``); ``ready``, if given, is awaited
    once every channel is connected, just before the loops start (B11 starts two cells' drains
    together with it)."""
    clients = [
        common.client(addresses[i % len(addresses)], tenant.key_secret) for i in range(workers)
    ]
    options = LoopOptions(
        concurrency=batch, lease_seconds=300, wait_seconds=1, run_identity=common.run_identity()
    )
    stop = asyncio.Event()
    state = {"completed": 0}
    finished_at = [0.0]

    def on_event(event: LoopEvent) -> None:
        if event.kind == "completed":
            state["completed"] += 1
            if state["completed"] >= items and not stop.is_set():
                finished_at[0] = time.monotonic()
                stop.set()

    async def no_op(assignment: Assignment) -> Completed:
        return Completed()

    try:
        await asyncio.gather(*(c.channel.channel_ready() for c in clients))
        if ready is not None:
            await ready()
        loops = [
            Worker(c, tenant.coordinator_id, f"bench-w{i}", common.WORKER_CLASS)
            for i, c in enumerate(clients)
        ]
        began = time.monotonic()
        reports = await asyncio.gather(
            *(w.run(no_op, options, stop=stop, on_event=on_event) for w in loops)
        )
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    assert sum(r.handled for r in reports) >= items
    return Repetition(items, finished_at[0] - began, lease_calls=0, empty_leases=0, began=began)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    variants = ["sdk", "unbatched"] if args.variant == "both" else [args.variant]
    figures: dict[str, Any] = {"variants": {}}
    for variant in variants:
        figures["variants"][variant] = await run_variant(args, variant)
    headline = figures["variants"][variants[0]]
    figures.update(headline)
    return common.finish("b1_throughput", args, figures)


async def run_variant(args: argparse.Namespace, variant: str) -> dict[str, Any]:
    pgbench = await common.run_pgbench(seconds=args.pgbench_seconds)
    common.print_pgbench(pgbench)
    reps: list[Repetition] = []
    async with common.cluster(replicas=args.coordinators) as cluster:
        addresses = [c.address for c in cluster.coordinators]
        pids = [c.process.pid for c in cluster.coordinators]
        for rep in range(args.reps):
            tenant = await common.create_tenant(
                cluster.address, cluster.admin_token, {common.WORKER_CLASS: 10000}
            )
            async with common.client(cluster.address, tenant.key_secret) as creator:
                await common.create_items(creator, tenant.coordinator_id, args.items)
            cpu_before = sum(common.cpu_seconds(pid) for pid in pids)
            client_before = time.process_time()
            profile = f"{args.profile}.{variant}" if args.profile else None
            with common.profiled(pids[0], profile):
                if variant == "sdk":
                    result = await run_sdk_workers(
                        addresses, tenant, args.items, args.workers, args.batch
                    )
                else:
                    result = await run_workers(
                        addresses,
                        tenant,
                        args.items,
                        args.workers,
                        args.batch,
                        args.inflight,
                    )
            result.cpu_seconds = sum(common.cpu_seconds(pid) for pid in pids) - cpu_before
            result.client_cpu_seconds = time.process_time() - client_before
            reps.append(result)
            # The SDK's loop makes its own Lease calls (not counted here).
            calls = ""
            if variant == "unbatched":
                calls = f" ({result.lease_calls} Lease calls, {result.empty_leases} empty)"
            print(
                f"{variant} rep {rep + 1}: {result.items:,} items in {result.seconds:.2f} s = "
                f"{result.items_per_second:,.0f} items/s{calls}; "
                f"coordinator CPU {result.cpu_ms_per_item:.2f} ms/item, "
                f"workers' CPU {result.client_cpu_ms_per_item:.2f} ms/item",
                flush=True,
            )
        peak_rss_mb = common.peak_rss_mb(cluster.coordinators[0].process.pid)
    rates = [r.items_per_second for r in reps]
    best = common.median(rates)
    ratio = best / pgbench.reference_tps
    cpu_ms = common.median([r.cpu_ms_per_item for r in reps])
    client_ms = common.median([r.client_cpu_ms_per_item for r in reps])
    common.print_table(
        f"B1 throughput ({variant}): {args.items:,} items, {args.workers} workers, "
        f"batch {args.batch}"
        + (f", {args.coordinators} coordinator processes" if args.coordinators > 1 else "")
        + (f", {args.inflight} complete(s) in flight per worker" if variant != "sdk" else ""),
        ["figure", "value", "target", "met"],
        [
            [
                "items/s (median)",
                best,
                f">= {TARGET_ITEMS_PER_SECOND:,.0f}",
                _yes(best >= TARGET_ITEMS_PER_SECOND),
            ],
            ["items/s (min .. max)", f"{min(rates):,.0f} .. {max(rates):,.0f}", "", ""],
            ["pgbench one-row-update tps", pgbench.one_row_update_tps, "", ""],
            [
                "ratio items/s : pgbench tps",
                ratio,
                f">= {TARGET_RATIO}",
                _yes(ratio >= TARGET_RATIO),
            ],
            ["ratio items/s : pgbench -N tps", best / pgbench.simple_update_tps, "", ""],
            ["coordinator CPU ms/item (median)", cpu_ms, "", ""],
            ["workers' CPU ms/item (median)", client_ms, "", ""],
            [
                "B7 coordinator peak RSS MB",
                peak_rss_mb,
                f"<= {TARGET_RSS_MB:.0f}",
                _yes(peak_rss_mb <= TARGET_RSS_MB),
            ],
        ],
    )
    return {
        "variant": variant,
        "params": {
            "items": args.items,
            "workers": args.workers,
            "batch": args.batch,
            "inflight": args.inflight,
            "reps": args.reps,
            "coordinators": args.coordinators,
        },
        "items_per_second": [round(r, 1) for r in rates],
        "median_items_per_second": round(best, 1),
        "pgbench": pgbench.as_dict(),
        "ratio_to_pgbench": round(ratio, 3),
        "coordinator_cpu_ms_per_item": [round(r.cpu_ms_per_item, 3) for r in reps],
        "median_coordinator_cpu_ms_per_item": round(cpu_ms, 3),
        "median_workers_cpu_ms_per_item": round(client_ms, 3),
        "coordinator_peak_rss_mb": round(peak_rss_mb, 1),
        "targets_met": {
            "items_per_second": best >= TARGET_ITEMS_PER_SECOND,
            "ratio": ratio >= TARGET_RATIO,
            "b7_rss": peak_rss_mb <= TARGET_RSS_MB,
        },
    }


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b1_throughput", description=__doc__)
    p.add_argument("--items", type=int, default=20000)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batch", type=int, default=100, help="max_items per Lease (1..100)")
    p.add_argument("--inflight", type=int, default=1, help="Complete calls in flight per worker")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument(
        "--coordinators",
        type=int,
        default=1,
        help="coordinator processes on the one database (replicas; worker i uses process "
        "i mod N); CPU per item is their sum, the profile and B7 the first's",
    )
    p.add_argument(
        "--variant",
        choices=["both", "sdk", "unbatched"],
        default="both",
        help="sdk: the SDK worker loop with batched writes (the headline); unbatched: one "
        "Complete call per item; both: sdk, then unbatched beside it",
    )
    return common.add_common_flags(p, profile=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
