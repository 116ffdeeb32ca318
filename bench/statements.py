"""Statements and transactions per worker call, counted on the coordinator's engine.

``uv run python -m bench.statements [--items 200] [--batch 100] [--backend postgres|sqlite]``

An in-process coordinator (real PostgreSQL + Redis, or SQLite) with an SQLAlchemy
``before_cursor_execute`` listener; one worker leases ``--batch`` items at a time with a run
identity and completes each, one call at a time (no group-commit sharing). Reported: statements
and transactions (``BEGIN``s) per Lease call and per Complete, and the whole window's totals.
Not a timing benchmark; nothing is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import event

from bench.common import (
    REDIS_URL,
    WORKER_CLASS,
    create_items,
    create_tenant,
    migrate,
    print_table,
    run_identity,
    scratch_database,
)
from workcoord.api.v1 import worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.coordinator.server import start_coordinator
from workcoord.kit.clock import SystemClock
from workcoord.kit.settings import CoordinatorSettings


class _Counts:
    def __init__(self) -> None:
        self.statements = 0
        self.begins = 0
        self.verbs: Counter[str] = Counter()
        self.texts: list[str] = []

    def reset(self) -> tuple[int, int, Counter[str]]:
        out = (self.statements, self.begins, self.verbs)
        self.statements, self.begins, self.verbs, self.texts = 0, 0, Counter(), []
        return out


async def _run(args: argparse.Namespace, database_url: str, redis_url: str | None) -> None:
    admin_token = f"wcadm_bench_{secrets.token_hex(16)}"
    settings = CoordinatorSettings.model_validate(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "listen_coordinator": "127.0.0.1:0",
            "bootstrap_admin_token": admin_token,
            "log_level": "WARNING",
        }
    )
    running = await start_coordinator(settings, clock=SystemClock())
    counts = _Counts()
    sync_engine = running.store.engine.sync_engine

    @event.listens_for(sync_engine, "before_cursor_execute")
    def _count(*a: Any) -> None:
        statement: str = a[2]
        counts.statements += 1
        counts.verbs[statement.lstrip().split(None, 1)[0].upper()] += 1
        counts.texts.append(" ".join(statement.split())[:160])

    @event.listens_for(sync_engine, "begin")
    def _begin(_conn: Any) -> None:
        counts.begins += 1

    try:
        tenant = await create_tenant(running.address, admin_token, {WORKER_CLASS: args.batch})
        async with WorkcoordClient(running.address, tenant.key_secret) as worker:
            await create_items(worker, tenant.coordinator_id, args.items)
            counts.reset()
            lease_rows: list[tuple[int, int]] = []
            complete_rows: list[tuple[int, int]] = []
            verbs: Counter[str] = Counter()
            done = 0
            while done < args.items:
                reply = await worker.workers.Lease(
                    worker_pb2.LeaseRequest(
                        coordinator_id=tenant.coordinator_id,
                        worker_id="counter",
                        worker_class=WORKER_CLASS,
                        max_items=args.batch,
                        lease_seconds=300,
                        run_identity=run_identity(),
                    )
                )
                if args.show and not lease_rows:
                    print("\n".join(["-- a Lease:", *counts.texts]))
                statements, begins, v = counts.reset()
                verbs.update(v)
                lease_rows.append((statements, begins))
                if not reply.leases:
                    break
                for lease in reply.leases:
                    await worker.workers.Complete(
                        worker_pb2.CompleteRequest(
                            coordinator_id=tenant.coordinator_id,
                            lease_id=lease.lease_id,
                            lease_token=lease.lease_token,
                        )
                    )
                    if args.show and len(complete_rows) == 1:
                        print("\n".join(["-- a Complete:", *counts.texts]))
                    statements, begins, v = counts.reset()
                    verbs.update(v)
                    complete_rows.append((statements, begins))
                    done += 1
    finally:
        await running.stop(0)

    def avg(rows: list[tuple[int, int]], index: int) -> float:
        return sum(r[index] for r in rows) / max(len(rows), 1)

    print_table(
        f"statements per call ({args.backend}, lease batch {args.batch})",
        ["call", "calls", "statements/call", "transactions/call"],
        [
            ["Lease", len(lease_rows), f"{avg(lease_rows, 0):.1f}", f"{avg(lease_rows, 1):.1f}"],
            [
                "Complete",
                len(complete_rows),
                f"{avg(complete_rows, 0):.1f}",
                f"{avg(complete_rows, 1):.1f}",
            ],
        ],
    )
    print_table("statements by verb", ["verb", "count"], sorted(verbs.items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--show", action="store_true", help="print one call's statements")
    args = parser.parse_args(argv)

    async def go() -> None:
        if args.backend == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                url = f"sqlite:///{Path(folder) / 'bench.db'}"
                migrate(url)
                await _run(args, url, None)
            return
        async with scratch_database() as url:
            migrate(url)
            await _run(args, url, REDIS_URL)

    asyncio.run(go())


if __name__ == "__main__":
    main()
