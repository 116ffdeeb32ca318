"""B11 cells: does a second cell add B1 throughput? (docs/cells.md)

``uv run python -m bench.b11_cells [--isolated] [--items N] [--workers 8] [--batch 100]
[--reps 3]``

Two cells, each with its own database and its own coordinator process (``common.cluster()``,
as B1 starts one), in one of two modes:

- **shared** (the default): both cells' databases on this host's one PostgreSQL server; no
  process is pinned, so the two cells share every core with each other (and with whatever else
  runs on the host).
- **isolated** (``--isolated``): each cell is a machine of its own, modelled on this host by a
  disjoint CPU set (``--cpus-a`` (0) and ``--cpus-b`` (1)): its own PostgreSQL server
  (``bench/pg_server.py``: initdb into a temporary directory, pg_ctl on a free loopback port,
  pinned with ``taskset`` so every backend inherits the affinity; stopped and removed
  afterwards), its coordinator (``taskset``) and its workers' process (``sched_setaffinity``),
  all on the cell's CPUs. Redis (a wake-up hint) stays shared and unpinned. The pinning of every
  process and thread (a PostgreSQL backend included) is read back from ``/proc`` and printed;
  the bench stops if any process runs outside its cell's CPUs.

Per repetition, not timed: a fresh ORG work coordinator in each cell (two in cell A) with
``--items`` no-op items each. Then, timed:

1. **one cell**: B1's SDK drain (``b1_throughput.run_sdk_workers``: ``--workers`` ``Worker.run``
   loops, ``LoopOptions(concurrency=--batch)``, a no-op handler) of cell A's items, alone;
2. **two cells**: the same drain of cell A's second coordinator and of cell B's, at once.

Each cell's workers run in a spawned process of their own; the two drains start together at a
barrier once connected and report their first Lease and last completion on the host's monotonic
clock: two cells' items/s is both cells' items over the span from the first start to the last
finish. Reported: items/s of one cell and of two (medians over the repetitions), their ratio,
the median of the per-repetition ratios, how many of the host's cores were busy in each window
(``/proc/stat``: everything on the host, other work included), in isolated mode the cores the
cells' own processes used, and the load average before and after. Target: two cells >= 1.7
times one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from bench import b1_throughput, common, pg_server

TARGET_RATIO = 1.7
DEFAULT_ITEMS = {"shared": 10000, "isolated": 5000}


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


def cpu_set(cpu_list: str) -> set[int]:
    """The CPUs of a list such as ``0``, ``0-1`` or ``0,2-3`` (taskset's and /proc's format)."""
    cpus: set[int] = set()
    for part in cpu_list.split(","):
        first, _dash, last = part.strip().partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def cpus_allowed(pid: int) -> set[str]:
    """The distinct ``Cpus_allowed_list`` of every thread of ``pid`` (Linux /proc)."""
    found: set[str] = set()
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found  # the process ended meanwhile (a backend that closed)
    for task in tasks:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    found.add(line.split(":", 1)[1].strip())
    return found


def _pin(cpus: str | None) -> None:
    """The workers' process initializer: pin it (and the threads it starts later) to ``cpus``."""
    if cpus is not None:
        os.sched_setaffinity(0, cpu_set(cpus))


def drain_in_process(
    address: str, tenant: common.Tenant, items: int, workers: int, batch: int, barrier: Any = None
) -> tuple[float, float]:
    """B1's SDK drain in this (the cell's workers') process: (first Lease, last completion) on
    CLOCK_MONOTONIC. With a ``barrier`` (two cells) it starts once every drain is connected."""

    async def together() -> None:
        await asyncio.to_thread(barrier.wait)

    rep = asyncio.run(
        b1_throughput.run_sdk_workers(
            [address], tenant, items, workers, batch, together if barrier is not None else None
        )
    )
    return rep.began, rep.began + rep.seconds


@dataclass
class Cell:
    """One cell: its coordinator (and database), its workers' process, its own server if any."""

    name: str
    cluster: common.Cluster
    pool: ProcessPoolExecutor
    workers_pid: int
    server: pg_server.PgServer | None
    cpus: str | None
    backends: list[int] = field(default_factory=list)  # of its database, as last looked up

    async def look_up_backends(self) -> list[int]:
        """The PostgreSQL backends connected to this cell's database (its coordinator's)."""
        url = self.cluster.database_url
        admin = await asyncpg.connect(self.server.admin_url if self.server else common.ADMIN_URL)
        try:
            rows = await admin.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1", url.rpartition("/")[2]
            )
        finally:
            await admin.close()
        self.backends = sorted(row["pid"] for row in rows)
        return self.backends

    def pids(self) -> list[int]:
        """Its coordinator, its workers' process and its PostgreSQL processes: all of its own
        server's if it has one, else the backends of its database on the shared server."""
        own = [self.cluster.coordinators[0].process.pid, self.workers_pid]
        return own + (self.server.pids() if self.server is not None else self.backends)


async def _start_cell(
    stack: contextlib.AsyncExitStack, name: str, cpus: str | None, isolated: bool
) -> Cell:
    server = stack.enter_context(pg_server.pg_server(cpus)) if isolated else None
    admin_url = server.admin_url if server is not None else common.ADMIN_URL
    cluster = await stack.enter_async_context(common.cluster(admin_url=admin_url, cpus=cpus))
    spawn = multiprocessing.get_context("spawn")
    pool = stack.enter_context(
        ProcessPoolExecutor(1, mp_context=spawn, initializer=_pin, initargs=(cpus,))
    )
    workers_pid = await asyncio.get_running_loop().run_in_executor(pool, os.getpid)
    return Cell(name, cluster, pool, workers_pid, server, cpus)


async def check_pinning(cells: list[Cell]) -> dict[str, Any]:
    """Every process (and thread) of each isolated cell, read back from /proc: printed,
    returned for the record; an error if any runs outside its cell's CPUs."""
    rows: list[list[Any]] = []
    report: dict[str, Any] = {}
    wrong = []
    for cell in cells:
        assert cell.server is not None and cell.cpus is not None
        postmaster = cell.server.postmaster_pid()
        serving = await cell.look_up_backends()
        others = [p for p in cell.server.pids()[1:] if p not in serving]
        groups = {
            "coordinator": [cell.cluster.coordinators[0].process.pid],
            "workers": [cell.workers_pid],
            "postgres postmaster": [postmaster],
            "postgres backends of the coordinator": serving,
            "postgres other processes": others,
        }
        report[cell.name] = {}
        for process, pids in groups.items():
            lists = sorted(set().union(*(cpus_allowed(p) for p in pids)))
            report[cell.name][process] = {"pids": pids, "cpus_allowed_list": lists}
            shown = ", ".join(map(str, pids[:4])) + (", …" if len(pids) > 4 else "")
            rows.append([cell.name, process, f"{len(pids)}: {shown}", " / ".join(lists)])
            if not pids or any(cpu_set(x) != cpu_set(cell.cpus) for x in lists):
                wrong.append(f"cell {cell.name} {process}")
    common.print_table(
        "B11 isolated: CPU affinity read back (/proc/<pid>/task/*/status Cpus_allowed_list)",
        ["cell", "process", "pids", "Cpus_allowed_list"],
        rows,
    )
    if wrong:
        raise RuntimeError("not pinned to the cell's CPUs: " + "; ".join(wrong))
    return report


async def _cpu_by_pid(cells: list[Cell]) -> dict[int, float]:
    """CPU seconds so far of every process of the cells (the backends looked up afresh)."""
    for cell in cells:
        await cell.look_up_backends()
    readings = {}
    for pid in (p for cell in cells for p in cell.pids()):
        with contextlib.suppress(OSError):
            readings[pid] = common.cpu_seconds(pid)
    return readings


def _cpu_used(before: dict[int, float]) -> float:
    """CPU seconds the cells' own processes used since ``before``: the processes of ``before``
    still running (PostgreSQL backends are pooled, so they last)."""
    after = {}
    for pid in before:
        with contextlib.suppress(OSError):
            after[pid] = common.cpu_seconds(pid)
    return sum(after[p] - before[p] for p in before if p in after)


async def _prepare(cell: Cell, items: int) -> common.Tenant:
    tenant = await common.create_tenant(
        cell.cluster.address, cell.cluster.admin_token, {common.WORKER_CLASS: 10000}
    )
    async with common.client(cell.cluster.address, tenant.key_secret) as creator:
        await common.create_items(creator, tenant.coordinator_id, items)
    return tenant


async def run(args: argparse.Namespace) -> dict[str, Any]:
    mode = "isolated" if args.isolated else "shared"
    items = args.items or DEFAULT_ITEMS[mode]
    params = (items, args.workers, args.batch)
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)  # clean up too
    load_before = os.getloadavg()
    one: list[float] = []
    two: list[float] = []
    busy: dict[str, list[float]] = {
        key: [] for key in ("one", "two", "cells one", "cells two", "ms one", "ms two")
    }
    pinning: dict[str, Any] = {}
    loop = asyncio.get_running_loop()
    spawn = multiprocessing.get_context("spawn")
    async with contextlib.AsyncExitStack() as stack:
        manager = stack.enter_context(spawn.Manager())
        cells = [
            await _start_cell(stack, "a", args.cpus_a if args.isolated else None, args.isolated),
            await _start_cell(stack, "b", args.cpus_b if args.isolated else None, args.isolated),
        ]
        cell_a, cell_b = cells
        for rep in range(args.reps):
            alone, beside_a, beside_b = await asyncio.gather(
                _prepare(cell_a, items), _prepare(cell_a, items), _prepare(cell_b, items)
            )
            if args.isolated and rep == 0:
                pinning = await check_pinning(cells)
            cpu = await _cpu_by_pid(cells)
            host, clock = _host_busy(), time.monotonic()
            began, ended = await loop.run_in_executor(
                cell_a.pool, drain_in_process, cell_a.cluster.address, alone, *params
            )
            busy["one"].append(_busy_cores(host, _host_busy()))
            used = _cpu_used(cpu)
            busy["cells one"].append(used / (time.monotonic() - clock))
            busy["ms one"].append(1000 * used / items)
            one.append(items / (ended - began))
            cpu = await _cpu_by_pid(cells)
            host, clock = _host_busy(), time.monotonic()
            barrier = manager.Barrier(2)
            spans = await asyncio.gather(
                *(
                    loop.run_in_executor(
                        cell.pool, drain_in_process, cell.cluster.address, tenant, *params, barrier
                    )
                    for cell, tenant in ((cell_a, beside_a), (cell_b, beside_b))
                )
            )
            busy["two"].append(_busy_cores(host, _host_busy()))
            used = _cpu_used(cpu)
            busy["cells two"].append(used / (time.monotonic() - clock))
            busy["ms two"].append(1000 * used / (2 * items))
            span = max(end for _, end in spans) - min(start for start, _ in spans)
            two.append(2 * items / span)
            print(
                f"{mode} rep {rep + 1}: one cell {one[-1]:,.0f} items/s, two cells "
                f"{two[-1]:,.0f} items/s ({two[-1] / one[-1]:.2f}x); host busy "
                f"{busy['one'][-1]:.2f} / {busy['two'][-1]:.2f} of {os.cpu_count()} cores "
                f"(the cells' own processes {busy['cells one'][-1]:.2f} / "
                f"{busy['cells two'][-1]:.2f}, {busy['ms one'][-1]:.2f} / "
                f"{busy['ms two'][-1]:.2f} CPU ms per item); load average "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )
    load_after = os.getloadavg()
    return _report(args, mode, items, one, two, busy, pinning, load_before, load_after)


def _report(
    args: argparse.Namespace,
    mode: str,
    items: int,
    one: list[float],
    two: list[float],
    busy: dict[str, list[float]],
    pinning: dict[str, Any],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> dict[str, Any]:
    one_median, two_median = common.median(one), common.median(two)
    ratio = two_median / one_median
    per_rep = common.median([b / a for a, b in zip(one, two, strict=True)])
    met = ratio >= TARGET_RATIO
    placement = (
        f"each cell its own PostgreSQL server, cell A on CPUs {args.cpus_a}, B on {args.cpus_b}"
        if mode == "isolated"
        else "both databases on one PostgreSQL server, nothing pinned"
    )
    common.print_table(
        f"B11 cells, {mode} mode ({placement}): {items:,} items per cell, {args.workers} "
        f"workers per cell, batch {args.batch}, {args.reps} repetitions",
        ["figure", "value", "target", "met"],
        [
            ["one cell items/s (median)", one_median, "", ""],
            ["two cells items/s (median)", two_median, "", ""],
            ["ratio two : one (medians)", f"{ratio:.3f}", f">= {TARGET_RATIO}", _yes(met)],
            ["ratio two : one (median of repetitions)", f"{per_rep:.3f}", "", ""],
            ["host cores busy, one cell (median)", common.median(busy["one"]), "", ""],
            ["host cores busy, two cells (median)", common.median(busy["two"]), "", ""],
            ["cells' own processes, cores, one cell", common.median(busy["cells one"]), "", ""],
            ["cells' own processes, cores, two cells", common.median(busy["cells two"]), "", ""],
            ["cells' CPU ms per item, one cell", common.median(busy["ms one"]), "", ""],
            ["cells' CPU ms per item, two cells", common.median(busy["ms two"]), "", ""],
            ["load average before (1/5/15 min)", _loads(load_before), "", ""],
            ["load average after (1/5/15 min)", _loads(load_after), "", ""],
        ],
    )
    figures: dict[str, Any] = {
        "mode": mode,
        "params": {"items": items, "workers": args.workers, "batch": args.batch, "reps": args.reps},
        "one_cell_items_per_second": [round(r, 1) for r in one],
        "two_cells_items_per_second": [round(r, 1) for r in two],
        "median_one_cell": round(one_median, 1),
        "median_two_cells": round(two_median, 1),
        "ratio": round(ratio, 3),
        "median_ratio_per_repetition": round(per_rep, 3),
        "host_cores_busy_one_cell": [round(x, 2) for x in busy["one"]],
        "host_cores_busy_two_cells": [round(x, 2) for x in busy["two"]],
        "cells_cores_used_one_cell": [round(x, 2) for x in busy["cells one"]],
        "cells_cores_used_two_cells": [round(x, 2) for x in busy["cells two"]],
        "cells_cpu_ms_per_item_one_cell": [round(x, 3) for x in busy["ms one"]],
        "cells_cpu_ms_per_item_two_cells": [round(x, 3) for x in busy["ms two"]],
        "cores": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "targets_met": {"ratio": met},
    }
    if mode == "isolated":
        figures["cpus"] = {"a": args.cpus_a, "b": args.cpus_b}
        figures["pg_settings"] = dict(pg_server.SETTINGS)
        figures["pinning"] = pinning
    return common.finish("b11_cells", args, figures)


def _loads(loads: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.1f}" for x in loads)


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b11_cells", description=__doc__)
    p.add_argument(
        "--isolated",
        action="store_true",
        help="each cell its own PostgreSQL server, and every process of a cell pinned to the "
        "cell's CPUs (one machine per cell, the machine being --cpus-a / --cpus-b)",
    )
    p.add_argument("--cpus-a", default="0", help="--isolated: cell A's CPUs (taskset list)")
    p.add_argument("--cpus-b", default="1", help="--isolated: cell B's CPUs (taskset list)")
    p.add_argument(
        "--items",
        type=int,
        default=None,
        help="items per cell per drain (default: 10,000 shared, 5,000 isolated)",
    )
    p.add_argument("--workers", type=int, default=8, help="SDK worker loops per cell")
    p.add_argument("--batch", type=int, default=100, help="leases each loop holds (1..100)")
    p.add_argument("--reps", type=int, default=3)
    return common.add_common_flags(p, pgbench=False)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    if args.isolated and cpu_set(args.cpus_a) & cpu_set(args.cpus_b):
        parser().error("--cpus-a and --cpus-b must be disjoint")
    return asyncio.run(run(args))


if __name__ == "__main__":
    main()
