"""``uv run python -m bench.chaos --seconds N``: the chaos soak.

1. A private PostgreSQL cluster and Redis on free ports, two coordinators, two gateways and two
   recoveries on them (:mod:`bench.chaos.cluster`); an org, an ORG work coordinator with small
   class capacities and a work key.
2. For ``--seconds``: the mixed load (:mod:`bench.chaos.load`) while faults are injected one at
   a time, evenly spread (:mod:`bench.chaos.faults`); every fault kind at least once, even if
   that runs past ``--seconds``.
3. The load stops; the soak waits until recovery has expired every abandoned lease (no live
   attempt is left), stops the services, and audits (:mod:`bench.chaos.audit`).

Prints progress on stderr and ONE JSON line on stdout; exits 1 on any violation (a broken
invariant, a lost acknowledged write, an abandoned lease never expired, a fault the system never
recovered from), 2 when the soak itself could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import common
from bench.chaos.audit import Verdict, audit, live_attempt_count, summary
from bench.chaos.cluster import Deployment
from bench.chaos.faults import FAULT_CYCLE, REQUIRED_KINDS, Faults
from bench.chaos.load import CLASSES, Endpoint, GrpcEndpoint, Load, RestEndpoint, retry_policy

DRAIN_TIMEOUT_SECONDS = 300.0
# The deployment being run, torn down by main() whatever happens (SIGTERM included).
_RUNNING: list[Deployment] = []


def say(message: str) -> None:
    print(f"chaos: {message}", file=sys.stderr, flush=True)


async def drain(database_url: str, coordinator_id: str) -> tuple[float, int]:
    """Wait until no attempt is live (recovery expired what the load abandoned); the seconds it
    took and the live attempts left (0 unless it timed out)."""
    began = time.monotonic()
    while True:
        live = await live_attempt_count(database_url, coordinator_id)
        if live == 0 or time.monotonic() - began > DRAIN_TIMEOUT_SECONDS:
            return time.monotonic() - began, live
        await asyncio.sleep(0.5)


async def soak(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    deployment = Deployment.create(folder)
    _RUNNING.append(deployment)
    try:
        say(f"starting PostgreSQL, Redis and 6 services in {folder}")
        began = time.monotonic()
        await deployment.up()
        say(f"deployment ready in {time.monotonic() - began:.1f} s")
        address = deployment.coordinator_addresses[0]
        tenant = await common.create_tenant(
            address,
            deployment.admin_token,
            {**CLASSES, "chaos-probe": 1},
            org_slug="chaos",
            retry_policy=retry_policy(),
        )
        grpc_endpoints: list[Endpoint] = [
            GrpcEndpoint(a, tenant.key_secret) for a in deployment.coordinator_addresses
        ]
        rest_endpoints: list[Endpoint] = [
            RestEndpoint(u, tenant.key_secret) for u in deployment.gateway_urls
        ]
        load = Load(tenant.coordinator_id, grpc_endpoints, rest_endpoints, seed=args.seed)
        faults = Faults(
            deployment, tenant.coordinator_id, tenant.key_secret, grpc_endpoints, load.ledger
        )
        supervising = asyncio.Event()
        supervisor = asyncio.create_task(faults.supervise(supervising))
        try:
            faults.begin()
            load.start()
            soak_began = time.monotonic()
            warmup = min(5.0, args.seconds * 0.1)
            spacing = max(2.0, (args.seconds - warmup) / len(FAULT_CYCLE))
            await asyncio.sleep(warmup)  # pacing of the soak, not a readiness wait
            injected = 0
            while True:
                elapsed = time.monotonic() - soak_began
                if injected >= REQUIRED_KINDS and elapsed >= args.seconds - 2.0:
                    break
                kind, target = FAULT_CYCLE[injected % len(FAULT_CYCLE)]
                record = await faults.inject(kind, target)
                injected += 1
                took = record.recovery_seconds
                hit = record.target + (" (the leader)" if record.leader else "")
                say(
                    f"t={record.at_seconds:5.1f}s {kind} {hit}: answering again after "
                    + ("NEVER" if took is None else f"{took:.2f} s")
                )
                next_slot = soak_began + warmup + injected * spacing
                await asyncio.sleep(max(0.0, next_slot - time.monotonic()))
            await asyncio.sleep(max(0.0, soak_began + args.seconds - time.monotonic()))
            say("stopping the load")
            await load.stop()
            soak_seconds = time.monotonic() - soak_began
            say("waiting for recovery to expire the abandoned leases")
            drained_in, live_left = await drain(deployment.database_url, tenant.coordinator_id)
            say(f"drained in {drained_in:.1f} s ({live_left} live attempts left)")
        finally:
            supervising.set()
            await supervisor
            await faults.close()
            for endpoint in [*grpc_endpoints, *rest_endpoints]:
                await endpoint.close()
        exits = deployment.stop()
        tracebacks = {s.name: s.log_text().count("Traceback") for s in deployment.services.values()}
        verdict = await audit(deployment.database_url, tenant.coordinator_id, load.ledger)
        return report(args, load, faults, verdict, soak_seconds, drained_in, exits, tracebacks)
    finally:
        deployment.teardown()


def report(
    args: argparse.Namespace,
    load: Load,
    faults: Faults,
    verdict: Verdict,
    soak_seconds: float,
    drained_in: float,
    exits: dict[str, int],
    tracebacks: dict[str, int],
) -> dict[str, Any]:
    ledger = load.ledger
    unrecovered = [r.target for r in faults.records if r.recovery_seconds is None]
    recovery = [r.recovery_seconds for r in faults.records if r.recovery_seconds is not None]
    categories = verdict.categories()
    violations = verdict.violations() + len(unrecovered)
    failures = {k: v for k, v in sorted(ledger.failures.items())}
    return {
        "bench": "chaos",
        "ok": violations == 0,
        "violations": violations,
        "seconds": round(soak_seconds, 1),
        "faults_injected": len(faults.records),
        "faults": [r.as_dict() for r in faults.records],
        "recovery_s_max": round(max(recovery), 2) if recovery else None,
        "recovery_s_median": round(common.median(recovery), 2) if recovery else None,
        "unrecovered_faults": unrecovered,
        "writes_acknowledged": sum(ledger.acknowledged.values()),
        "acknowledged_by_call": dict(sorted(ledger.acknowledged.items())),
        "acknowledged_by_transport": dict(sorted(ledger.by_transport.items())),
        "lanes_created": len(ledger.lanes),
        "leases_abandoned": len(ledger.abandoned),
        "lost": len(verdict.lost),
        "lost_examples": verdict.lost[:10],
        "unexpired_abandoned": len(verdict.unexpired_abandoned),
        "double_live_attempts": categories["double_live"],
        "capacity_overruns": categories["capacity_overruns"],
        "gaps": categories["gaps"],
        "other_invariant_violations": categories["other_invariants"],
        "checker_examples": verdict.checker[:10],
        "drain_s": round(drained_in, 1),
        "call_failures": failures,
        "unexpected_exits": faults.unexpected_exits,
        "shutdown_exit_codes": exits,
        "log_tracebacks": tracebacks,
        **summary(verdict),
        "seed": args.seed,
        "commit": common.git_commit(),
        "machine": common.machine(),
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--seconds", type=float, default=60.0, help="soak length (default 60)")
    p.add_argument("--seed", type=int, default=0, help="seed of the load's choices")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, data)")
    p.add_argument(
        "--record",
        action="store_true",
        help="also append the JSON line to bench/results/chaos.jsonl",
    )
    return p


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="workcoord-chaos-"))
    # SIGTERM (a test's timeout, a CI cancel) still stops every process the soak started.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        try:
            result = asyncio.run(soak(args, folder))
        except Exception as exc:
            say(f"the soak could not run: {exc!r} (logs in {folder})")
            args.keep = True
            print(json.dumps({"bench": "chaos", "ok": False, "error": repr(exc)}), flush=True)
            return 2
        if not result["ok"]:
            args.keep = True
            say(f"VIOLATIONS: logs and data kept in {folder}")
        if args.record:
            with contextlib.redirect_stdout(sys.stderr):
                common.record("chaos", result)
        print(json.dumps(result, sort_keys=True), flush=True)
        return 0 if result["ok"] else 1
    finally:
        for deployment in _RUNNING:
            deployment.teardown()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
