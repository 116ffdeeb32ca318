"""B5 deep queue: the lease + complete rate with a very deep queue against a shallow one.

``uv run python -m bench.b5_deep_queue [--items 1000000] [--shallow 1000] [--measure 1000]
[--workers 8] [--batch 10] [--reps 3]``

Two ORG work coordinators on one scratch database and one coordinator process: a **deep** one
holding ``--items`` queued no-op items and a **shallow** one holding ``--shallow``. Creating a
million items through ``CreateLane`` would take hours on a small machine, so each queue starts
from one template lane of 100 items created through the real service and is filled by bulk
``INSERT … SELECT`` statements (built from the coordinator's table definitions) that copy the
template lane and its items under new ids and sequence numbers; then ``VACUUM (ANALYZE)``, so
that the autovacuum the bulk insert triggers does not run inside a measured window.

Per repetition (alternating, shallow first): the B1 workers (``--workers`` gRPC channels, one
work key, ``Lease(max_items=--batch)`` with a run identity, then ``Complete`` of each item) lease
and complete ``--measure`` items; items/s from the first Lease to the last Complete. The shallow
queue is refilled (a fresh work coordinator) for every repetition; the deep one stays at
about ``--items``. Target: deep items/s >= 0.8 x shallow (medians).

It also prints the plan (``EXPLAIN (ANALYZE, BUFFERS)``, inside a rolled-back transaction) of
the statement the coordinator's storage builds to find lease candidates, on the deep queue, so
one can see whether the ready queue's index (``ix_ready_items_claim``) is used.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, cast, event, func, insert, literal, select, text, true, update
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from bench import common
from bench.b1_throughput import run_workers
from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.domain.engine.leasing import claim_page_size
from workcoord.coordinator.domain.ports import ClaimScan
from workcoord.coordinator.storage import schema as t
from workcoord.coordinator.storage.sql.engine import normalize_url
from workcoord.coordinator.storage.sql.lanes_items import LanesItemsSql

TARGET_RATIO = 0.8
LANE_SIZE = 100
LANES_PER_STATEMENT = 500  # 50,000 items per INSERT … SELECT


async def _template_lane(address: str, tenant: common.Tenant) -> str:
    async with common.client(address, tenant.key_secret) as creator:
        created = await creator.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=tenant.coordinator_id,
                lane=common.task_lane("bench template lane", LANE_SIZE),
            )
        )
    return str(created.lane.lane_id)


async def _copy_lanes(conn: AsyncConnection, template: str, first: int, last: int) -> None:
    """Copies ``first..last`` of the ``template`` lane and its items (ids ``<id>-<copy>``)."""
    series = func.generate_series(first, last).table_valued("copy").render_derived(name="series")
    copy = series.c.copy
    suffix = literal("-") + cast(copy, String)
    lane_over = {"lane_id": t.lanes.c.lane_id + suffix, "request_id": literal("")}
    lane_cols = [lane_over.get(c.name, c).label(c.name) for c in t.lanes.c]
    await conn.execute(
        insert(t.lanes).from_select(
            [c.name for c in t.lanes.c],
            select(*lane_cols)
            .select_from(t.lanes.join(series, true()))
            .where(t.lanes.c.lane_id == template),
        )
    )
    item_over = {
        "item_id": t.items.c.item_id + suffix,
        "lane_id": t.items.c.lane_id + suffix,
        "seq": t.items.c.seq + copy * LANE_SIZE,
    }
    item_cols = [item_over.get(c.name, c).label(c.name) for c in t.items.c]
    await conn.execute(
        insert(t.items).from_select(
            [c.name for c in t.items.c],
            select(*item_cols)
            .select_from(t.items.join(series, true()))
            .where(t.items.c.lane_id == template),
        )
    )


async def fill_queue(
    database_url: str, address: str, tenant: common.Tenant, total: int, label: str
) -> float:
    """``total`` queued items (rounded up to whole lanes of 100) in ``tenant``'s coordinator:
    one lane through CreateLane, the rest bulk-copied, then vacuumed and analysed. The seconds
    the copy, vacuum and analyse took."""
    template = await _template_lane(address, tenant)
    copies = max(0, -(-total // LANE_SIZE) - 1)
    engine = create_async_engine(normalize_url(database_url))
    began = time.perf_counter()
    try:
        for first in range(1, copies + 1, LANES_PER_STATEMENT):
            last = min(copies, first + LANES_PER_STATEMENT - 1)
            async with engine.begin() as conn:
                await _copy_lanes(conn, template, first, last)
            if copies > LANES_PER_STATEMENT:
                done = last * LANE_SIZE
                rate = done / (time.perf_counter() - began)
                print(f"  {label}: {done + LANE_SIZE:,} items loaded ({rate:,.0f}/s)", flush=True)
        async with engine.begin() as conn:
            wc = t.work_coordinators
            await conn.execute(
                update(wc)
                .where(wc.c.coordinator_id == tenant.coordinator_id)
                .values(
                    item_seq=select(func.max(t.items.c.seq))
                    .where(t.items.c.coordinator_id == tenant.coordinator_id)
                    .scalar_subquery()
                )
            )
        async with engine.connect() as conn:
            autocommit = await conn.execution_options(isolation_level="AUTOCOMMIT")
            # As autovacuum would, but now: not inside a measured window.
            await autocommit.execute(text("VACUUM (ANALYZE) lanes, items, ready_items"))
    finally:
        await engine.dispose()
    return time.perf_counter() - began


async def explain_claim(database_url: str, coordinator_id: str, batch: int) -> str:
    """The plan of the lease-candidate statement exactly as the storage layer builds it (first
    page, ``claim_page_size(batch)`` rows), run with EXPLAIN ANALYZE and rolled back."""
    engine = create_async_engine(normalize_url(database_url))
    captured: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if "FOR UPDATE" in statement:
            captured.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        async with engine.connect() as conn:
            tx = await conn.begin()
            storage = LanesItemsSql(conn, "postgresql", datetime.now(UTC), None)
            scan = claim_page_size(batch)
            await storage.claim_candidates(
                ClaimScan(coordinator_id, (common.WORKER_CLASS,), storage.now, None, scan)
            )
            statement, parameters = captured[-1]
            result = await conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters
            )
            plan = "\n".join(str(row[0]) for row in result)
            await tx.rollback()
    finally:
        await engine.dispose()
    return f"{statement}\n{parameters}\n\n{plan}"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    capacity = {common.WORKER_CLASS: 10000}
    shallow_rates: list[float] = []
    deep_rates: list[float] = []
    async with common.cluster() as cluster:
        address = cluster.address
        deep = await common.create_tenant(address, cluster.admin_token, capacity)
        print(f"loading the deep queue ({args.items:,} items) …", flush=True)
        load_seconds = await fill_queue(cluster.database_url, address, deep, args.items, "deep")
        print(f"deep queue loaded in {load_seconds:.1f} s", flush=True)
        plan = await explain_claim(cluster.database_url, deep.coordinator_id, args.batch)
        print("\nlease candidate statement and its plan on the deep queue:\n" + plan, flush=True)
        uses_queue_index = "ix_ready_items_claim" in plan
        for rep in range(args.reps):
            shallow = await common.create_tenant(address, cluster.admin_token, capacity)
            await fill_queue(cluster.database_url, address, shallow, args.shallow, "shallow")
            for label, tenant, rates in (
                ("shallow", shallow, shallow_rates),
                ("deep", deep, deep_rates),
            ):
                count = min(args.measure, args.shallow) if label == "shallow" else args.measure
                result = await run_workers(
                    [address], tenant, count, args.workers, args.batch, args.inflight
                )
                rates.append(result.items_per_second)
                print(
                    f"rep {rep + 1} {label}: {result.items:,} items in {result.seconds:.2f} s = "
                    f"{result.items_per_second:,.1f} items/s ({result.lease_calls} Lease calls)",
                    flush=True,
                )
    shallow_median = common.median(shallow_rates)
    deep_median = common.median(deep_rates)
    ratio = deep_median / shallow_median
    common.print_table(
        f"B5 deep queue: {args.items:,} vs {args.shallow:,} queued, {args.measure:,} measured, "
        f"{args.workers} workers, batch {args.batch}",
        ["figure", "value", "target", "met"],
        [
            ["shallow items/s (median)", shallow_median, "", ""],
            ["deep items/s (median)", deep_median, "", ""],
            ["ratio deep : shallow", ratio, f">= {TARGET_RATIO}", _yes(ratio >= TARGET_RATIO)],
            ["deep load seconds (copy + vacuum)", load_seconds, "", ""],
            ["candidate plan uses ix_ready_items_claim", _yes(uses_queue_index), "", ""],
        ],
    )
    figures = {
        "params": {
            "items": args.items,
            "shallow": args.shallow,
            "measure": args.measure,
            "workers": args.workers,
            "batch": args.batch,
            "inflight": args.inflight,
            "reps": args.reps,
        },
        "shallow_items_per_second": [round(r, 1) for r in shallow_rates],
        "deep_items_per_second": [round(r, 1) for r in deep_rates],
        "median_shallow_items_per_second": round(shallow_median, 1),
        "median_deep_items_per_second": round(deep_median, 1),
        "ratio_deep_to_shallow": round(ratio, 3),
        "deep_load_seconds": round(load_seconds, 1),
        "candidate_plan_uses_ix_ready_items_claim": uses_queue_index,
        "candidate_plan": plan.splitlines()[-60:],
        "targets_met": {"ratio": ratio >= TARGET_RATIO},
    }
    return common.finish("b5_deep_queue", args, figures)


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b5_deep_queue", description=__doc__)
    p.add_argument("--items", type=int, default=1_000_000, help="items in the deep queue")
    p.add_argument("--shallow", type=int, default=1000, help="items in the shallow queue")
    p.add_argument("--measure", type=int, default=1000, help="items leased+completed per rep")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batch", type=int, default=10, help="max_items per Lease (1..100)")
    p.add_argument("--inflight", type=int, default=1, help="Complete calls in flight per worker")
    p.add_argument("--reps", type=int, default=3)
    return common.add_common_flags(p, pgbench=False)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
