"""B11 cells: does a second cell on the same host add B1 throughput? (docs/cells.md)

``uv run python -m bench.b11_cells [--items 10000] [--workers 8] [--batch 100] [--reps 3]``

Two cells, each its own scratch database (on the one PostgreSQL server of this host) and its
own coordinator process, as ``common.cluster()`` starts them for B1. Per repetition, not timed:
a fresh ORG work coordinator in each cell and ``--items`` no-op items in each. Then, timed:

1. **one cell**: B1's SDK drain (``Worker.run`` with ``LoopOptions(concurrency=--batch)``,
   ``--workers`` loops) of cell A's items, alone;
2. **two cells**: the same drain of cell A's *next* items and of cell B's, at the same time.

Each cell's workers run in a process of their own (spawned), so the bench client's one event
loop is not what limits two cells; the drains report their first Lease and last completion on
the host's monotonic clock, and two cells' throughput is both cells' items over the span from the
first start to the last finish. Reported: items/s of one cell and of two (medians over the
repetitions), their ratio, the median of the per-repetition ratios, how many of the host's cores
were busy during each window (``/proc/stat``: everything on the host, other work included), and
the load average before and after (the host is shared: a busy host lowers the ratio).
Target: two cells >= 1.7 times one.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from bench import common
from workcoord.client import Completed, LoopEvent, LoopOptions, Worker
from workcoord.client.worker_loop import Assignment

TARGET_RATIO = 1.7


def _host_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every core since boot (``/proc/stat``)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [float(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _busy_cores(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Cores the whole host kept busy between two :func:`_host_busy` readings."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return (os.cpu_count() or 1) * busy / total if total else 0.0


async def _drain(
    address: str, tenant: common.Tenant, items: int, workers: int, batch: int, barrier: Any
) -> tuple[float, float]:
    """B1's SDK drain of ``items`` items; (first Lease, last completion) on CLOCK_MONOTONIC.
    With a ``barrier`` (two cells), the drains start together once every one is connected."""
    clients = [common.client(address, tenant.key_secret) for _ in range(workers)]
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
        if barrier is not None:
            await asyncio.to_thread(barrier.wait)
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
    return began, finished_at[0]


def drain_in_process(
    address: str, tenant: common.Tenant, items: int, workers: int, batch: int, barrier: Any = None
) -> tuple[float, float]:
    """:func:`_drain` in a process of its own (the pool's entry point)."""
    return asyncio.run(_drain(address, tenant, items, workers, batch, barrier))


async def _prepare(cell: common.Cluster, items: int) -> common.Tenant:
    tenant = await common.create_tenant(
        cell.address, cell.admin_token, {common.WORKER_CLASS: 10000}
    )
    async with common.client(cell.address, tenant.key_secret) as creator:
        await common.create_items(creator, tenant.coordinator_id, items)
    return tenant


async def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    one: list[float] = []
    two: list[float] = []
    busy_one: list[float] = []
    busy_two: list[float] = []
    loop = asyncio.get_running_loop()
    spawn = multiprocessing.get_context("spawn")
    with spawn.Manager() as manager, ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        async with common.cluster() as cell_a, common.cluster() as cell_b:
            for rep in range(args.reps):
                alone = await _prepare(cell_a, args.items)
                beside_a = await _prepare(cell_a, args.items)
                beside_b = await _prepare(cell_b, args.items)
                params = (args.items, args.workers, args.batch)
                host = _host_busy()
                began, ended = await loop.run_in_executor(
                    pool, drain_in_process, cell_a.address, alone, *params
                )
                busy_one.append(_busy_cores(host, _host_busy()))
                one.append(args.items / (ended - began))
                host = _host_busy()
                together = manager.Barrier(2)
                spans = await asyncio.gather(
                    loop.run_in_executor(
                        pool, drain_in_process, cell_a.address, beside_a, *params, together
                    ),
                    loop.run_in_executor(
                        pool, drain_in_process, cell_b.address, beside_b, *params, together
                    ),
                )
                busy_two.append(_busy_cores(host, _host_busy()))
                span = max(end for _, end in spans) - min(start for start, _ in spans)
                two.append(2 * args.items / span)
                print(
                    f"rep {rep + 1}: one cell {one[-1]:,.0f} items/s, two cells "
                    f"{two[-1]:,.0f} items/s ({two[-1] / one[-1]:.2f}x); host busy "
                    f"{busy_one[-1]:.2f} / {busy_two[-1]:.2f} of {os.cpu_count()} cores; "
                    f"load average {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    load_after = os.getloadavg()
    one_median, two_median = common.median(one), common.median(two)
    ratio = two_median / one_median
    per_rep = common.median([b / a for a, b in zip(one, two, strict=True)])
    common.print_table(
        f"B11 cells: {args.items:,} items per cell, {args.workers} workers per cell, "
        f"batch {args.batch}, {args.reps} repetitions",
        ["figure", "value", "target", "met"],
        [
            ["one cell items/s (median)", one_median, "", ""],
            ["two cells items/s (median)", two_median, "", ""],
            ["ratio two : one (medians)", ratio, f">= {TARGET_RATIO}", _yes(ratio >= TARGET_RATIO)],
            ["ratio two : one (median of repetitions)", per_rep, "", ""],
            ["host cores busy, one cell (median)", common.median(busy_one), "", ""],
            ["host cores busy, two cells (median)", common.median(busy_two), "", ""],
            ["load average before (1/5/15 min)", _loads(load_before), "", ""],
            ["load average after (1/5/15 min)", _loads(load_after), "", ""],
        ],
    )
    figures = {
        "params": {
            "items": args.items,
            "workers": args.workers,
            "batch": args.batch,
            "reps": args.reps,
        },
        "one_cell_items_per_second": [round(r, 1) for r in one],
        "two_cells_items_per_second": [round(r, 1) for r in two],
        "median_one_cell": round(one_median, 1),
        "median_two_cells": round(two_median, 1),
        "ratio": round(ratio, 3),
        "median_ratio_per_repetition": round(per_rep, 3),
        "host_cores_busy_one_cell": [round(x, 2) for x in busy_one],
        "host_cores_busy_two_cells": [round(x, 2) for x in busy_two],
        "cores": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "targets_met": {"ratio": ratio >= TARGET_RATIO},
    }
    return common.finish("b11_cells", args, figures)


def _loads(loads: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.1f}" for x in loads)


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b11_cells", description=__doc__)
    p.add_argument("--items", type=int, default=10000, help="items per cell per drain")
    p.add_argument("--workers", type=int, default=8, help="SDK worker loops per cell")
    p.add_argument("--batch", type=int, default=100, help="leases each loop holds (1..100)")
    p.add_argument("--reps", type=int, default=3)
    return common.add_common_flags(p, pgbench=False)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
