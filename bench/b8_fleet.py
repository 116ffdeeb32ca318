"""B8 a fleet: many agents over REST through the gateway, each holding a lease and heartbeating.

``uv run python -m bench.b8_fleet [--agents 2000] [--seconds 300] [--completes-per-second 20]
[--subscribers 100] [--heartbeat-seconds 10] [--lease-seconds 30]``

One coordinator, one gateway (``workcoord serve gateway``) and one recovery process
(``--recovery-seconds``, 15; 0: none). A work coordinator admits at most 256 workers (the
worker pool cap), so the agents are spread over ``--agents-per-coordinator`` (250) per ORG work
coordinator, each in its own org with its own work key. Not timed: enough no-op items for the
whole run are created over gRPC (per work coordinator: its agents + its share of rate times
seconds, plus a margin), then every agent leases one item over REST (``POST …/leases``, its own
worker id, ``maxItems`` 1). Then, for ``--seconds``: every agent heartbeats its lease every
``--heartbeat-seconds`` (``POST …/leases/{l}/heartbeat``; the first at a random phase, so the
heartbeats spread evenly), ``--completes-per-second`` agents a second (round robin) complete
their lease and lease the next item, and ``--subscribers`` WebSocket clients follow the work
coordinator's feed (each checks its stream for gaps and duplicates, as in B4).

The agents run in ``--processes`` (4) spawned processes (:mod:`bench.fleet_agents`), each
driving every 4th agent over its own lean keep-alive HTTP/1.1 client, ``--connections`` (512)
connections in all: one event loop with ``httpx`` could not drive this (its pool kept the
loop busy at about 60 requests a second), and a slow Lease holds its connection, so with few
shared connections the other agents' heartbeats queued behind it in the client — something
agents on their own hosts never do. The main process holds the feed subscribers and tells the
agent processes when the window opens and closes. Reported: heartbeat latency p50/p90/p99/max
(ms, as the agents see it, so it includes their own scheduling on the shared cores), the
heartbeats, completes and leases answered, errors by status, **leases lost that were
heartbeated in time** (a heartbeat or complete answered ``LEASE_LOST`` although the lease's last
confirmed heartbeat was sent less than ``--lease-seconds`` before; must be 0), the CPU the
coordinator, the gateway and the agent processes used over the window (cores = CPU seconds /
window seconds), and where the time goes: the same window's latency histograms of the gateway
(per route) and the coordinator (per RPC), read from their ``/metrics`` (bucket upper bounds).
Targets: heartbeat p99 ≤ 50 ms, 0 leases lost in time, coordinator + gateway ≤ 1 core.

Heartbeats carry usage (running token and cost totals, ``usage_for`` in
:mod:`bench.fleet_agents`); ``--no-usage`` sends progress only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnProcess
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect

from bench import common
from bench.b4_feed import Subscriber, gateways
from bench.fleet_agents import WORKER_CLASS, Plan, run_agents
from workcoord.api.v1 import work_coordinator_pb2

TARGET_P99_MS = 50.0
TARGET_CORES = 1.0
HEARTBEAT_METHOD = "/workcoord.api.v1.WorkerService/Heartbeat"


async def scrape(http: httpx.AsyncClient, port: int) -> dict[tuple[str, tuple[str, ...]], float]:
    """The histogram buckets of a service's ``/metrics``: (sample name, sorted labels) → value."""
    text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    found: dict[tuple[str, tuple[str, ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_bucket") or sample.name.endswith("_count"):
                labels = tuple(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                found[(sample.name, labels)] = sample.value
    return found


def bucket_quantiles(
    before: dict[tuple[str, tuple[str, ...]], float],
    after: dict[tuple[str, tuple[str, ...]], float],
    name: str,
    match: str,
) -> dict[str, float]:
    """The count and the p50 / p99 upper bucket bounds (ms) of the histogram ``name``'s samples
    with the label ``match`` (``key=value``, or a suffix of one: ``/heartbeat``), over the
    window between two scrapes."""
    buckets: dict[float, float] = {}
    for (sample, labels), value in after.items():
        if sample != f"{name}_bucket" or not any(label.endswith(match) for label in labels):
            continue
        le = float(next(label for label in labels if label.startswith("le="))[3:])
        buckets[le] = buckets.get(le, 0.0) + value - before.get((sample, labels), 0.0)
    bounds = sorted(buckets)
    total = buckets.get(float("inf"), 0.0)
    result = {"count": total}
    for key, fraction in (("p50_le_ms", 0.50), ("p99_le_ms", 0.99)):
        bound = next((b for b in bounds if total and buckets[b] >= fraction * total), None)
        result[key] = float("nan") if bound is None else bound * 1000
    return result


async def measure(
    args: argparse.Namespace, cluster: common.Cluster, coordinator_metrics: int
) -> dict[str, Any]:
    per = args.agents_per_coordinator
    groups = [min(per, args.agents - start) for start in range(0, args.agents, per)]
    tenants: list[common.Tenant] = []
    since: list[int] = []
    total = 0
    for agents in groups:
        tenant = await common.create_tenant(
            cluster.address, cluster.admin_token, {WORKER_CLASS: agents + 10}
        )
        share = args.completes_per_second * args.seconds * agents / args.agents
        count = agents + int(share * 1.2) + 20
        async with common.client(cluster.address, tenant.key_secret) as creator:
            await common.create_items(
                creator, tenant.coordinator_id, count, worker_class=WORKER_CLASS
            )
            request = work_coordinator_pb2.ListEventsRequest(
                coordinator_id=tenant.coordinator_id, page_size=1
            )
            since.append((await creator.coordinators.ListEvents(request)).revision)
        tenants.append(tenant)
        total += count
    print(f"created {total} items in {len(tenants)} work coordinators", flush=True)
    with recovery(cluster, args.recovery_seconds):
        return await _fleet(args, cluster, coordinator_metrics, tenants, since)


async def _fleet(
    args: argparse.Namespace,
    cluster: common.Cluster,
    coordinator_metrics: int,
    tenants: list[common.Tenant],
    since: list[int],
) -> dict[str, Any]:
    per = args.agents_per_coordinator
    gateway_metrics = common.free_port()
    async with (
        gateways(cluster, 1, {"WORKCOORD_METRICS_PORT": str(gateway_metrics)}) as running,
        httpx.AsyncClient(timeout=30.0) as http,
    ):
        gateway = running[0]
        subscribers: list[Subscriber] = []
        for index in range(args.subscribers):
            tenant = tenants[index % len(tenants)]
            connection = await connect(
                f"{gateway.url.replace('http://', 'ws://')}/v1/work-coordinators/"
                f"{tenant.coordinator_id}/ws?since={since[index % len(tenants)]}",
                additional_headers={"Authorization": f"Bearer {tenant.key_secret}"},
                max_size=None,
            )
            subscribers.append(Subscriber(connection))
        readers = [asyncio.create_task(s.read()) for s in subscribers]
        async with asyncio.timeout(60):
            await asyncio.gather(*(s.ready.wait() for s in subscribers))

        host, _, port = gateway.url.removeprefix("http://").rpartition(":")
        started_at = (datetime.now(UTC) - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
        processes = max(1, min(args.processes, args.agents))
        context = multiprocessing.get_context("spawn")
        pipes: list[Connection] = []
        children: list[SpawnProcess] = []
        for n in range(processes):
            plan = Plan(
                host=host,
                port=int(port),
                tenants=[(t.coordinator_id, t.key_secret) for t in tenants],
                agents=list(range(n, args.agents, processes)),
                agents_per_coordinator=per,
                connections=max(1, args.connections // processes),
                lease_seconds=args.lease_seconds,
                heartbeat_seconds=args.heartbeat_seconds,
                completes_per_second=args.completes_per_second / processes,
                started_at=started_at,
                seed=n,
                usage=not args.no_usage,
            )
            ours, theirs = context.Pipe()
            child = context.Process(target=run_agents, args=(plan, theirs), daemon=True)
            child.start()
            pipes.append(ours)
            children.append(child)
        try:
            ramps = [await _receive(pipe, args.ramp_timeout) for pipe in pipes]
            held = sum(r["held"] for r in ramps)
            ramp = max(r["ramp_seconds"] for r in ramps)
            print(f"{held} of {args.agents} agents hold a lease ({ramp:.1f} s)", flush=True)

            services = [cluster.coordinators[0].process.pid, gateway.process.pid]
            cpu_before = [common.cpu_seconds(pid) for pid in services]
            load_before = common.machine()["loadavg_1m"]
            scraped = [await scrape(http, p) for p in (coordinator_metrics, gateway_metrics)]
            window = time.perf_counter()
            for pipe in pipes:
                pipe.send("measure")
            profile = args.profile
            with (
                common.profiled(services[0], profile and f"{profile}.coordinator"),
                common.profiled(services[1], profile and f"{profile}.gateway"),
            ):
                await asyncio.sleep(args.seconds)
            for pipe in pipes:
                pipe.send("stop")
            counts = [await _receive(pipe, 120.0) for pipe in pipes]
            window = time.perf_counter() - window
            cpu = [common.cpu_seconds(pid) - b for pid, b in zip(services, cpu_before, strict=True)]
            load_after = common.machine()["loadavg_1m"]
            coordinator_side = bucket_quantiles(
                scraped[0],
                await scrape(http, coordinator_metrics),
                "workcoord_rpc_duration_seconds",
                f"method={HEARTBEAT_METHOD}",
            )
            gateway_side = bucket_quantiles(
                scraped[1],
                await scrape(http, gateway_metrics),
                "workcoord_gateway_request_duration_seconds",
                "/heartbeat",
            )
            after = [await scrape(http, p) for p in (coordinator_metrics, gateway_metrics)]
            by_call = {
                f"{side} {method}": bucket_quantiles(scraped[i], after[i], metric, method)
                for i, side, metric, label in (
                    (0, "rpc", "workcoord_rpc_duration_seconds", "method="),
                    (1, "http", "workcoord_gateway_request_duration_seconds", "route="),
                )
                for method in sorted(
                    {
                        next(x for x in labels if x.startswith(label))
                        for (name, labels) in after[i]
                        if name == f"{metric}_bucket"
                    }
                )
            }
        finally:
            for child in children:
                child.join(timeout=30)
                if child.is_alive():
                    child.kill()
        for subscriber in subscribers:
            await subscriber.connection.close()
        await asyncio.gather(*readers)

    samples = [ms for c in counts for ms in c["heartbeat_ms"]]
    answered: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for c in counts:
        answered.update(c["answered"])
        errors.update(c["errors"])
        for kind, text in c["first_errors"].items():
            print(f"first {kind}: {text}", flush=True)
    return {
        "agents_leased": held,
        "ramp_seconds": ramp,
        "window_seconds": window,
        "heartbeats": len(samples),
        "heartbeat_p50_ms": common.percentile(samples, 0.50),
        "heartbeat_p90_ms": common.percentile(samples, 0.90),
        "heartbeat_p99_ms": common.percentile(samples, 0.99),
        "heartbeat_max_ms": max(samples, default=float("nan")),
        # Where a heartbeat's time goes: the same window's histograms of the gateway (HTTP
        # request to answer) and the coordinator (RPC), as bucket upper bounds.
        "heartbeat_gateway": gateway_side,
        "heartbeat_coordinator": coordinator_side,
        "by_call": {k: v for k, v in by_call.items() if v["count"]},
        "answered": dict(answered),
        "completes_per_second": answered["complete"] / window,
        "errors": dict(errors),
        "no_work": sum(c["no_work"] for c in counts),
        "leases_lost_in_time": sum(c["lost_in_time"] for c in counts),
        "leases_lost_in_time_during_ramp": sum(c["lost_in_time_during_ramp"] for c in counts),
        "leases_lost_late": sum(c["lost_late"] for c in counts),
        "coordinator_cores": cpu[0] / window,
        "gateway_cores": cpu[1] / window,
        "cores": sum(cpu) / window,
        "client_cores": sum(c["cpu_seconds"] for c in counts) / window,
        "client_processes": processes,
        "feed_frames": sum(s.frames for s in subscribers),
        "feed_gaps": sum(s.gaps for s in subscribers),
        "feed_duplicates": sum(s.duplicates for s in subscribers),
        "loadavg_1m": [load_before, load_after],
    }


@contextlib.contextmanager
def recovery(cluster: common.Cluster, interval: float) -> Iterator[None]:
    """A recovery service (``workcoord serve recovery``) in front of the cluster's coordinator,
    a pass every ``interval`` seconds (none when 0): it ends the leases that expired, as in
    every installation, so a lost lease does not hold its class's capacity for the rest of the
    run."""
    if interval <= 0:
        yield
        return
    env = common.service_env(
        WORKCOORD_COORDINATOR_ADDRESS=cluster.address,
        WORKCOORD_SERVICE_KEY=cluster.service_key,
        WORKCOORD_LISTEN_RECOVERY=f"127.0.0.1:{common.free_port()}",
        WORKCOORD_RECOVERY_INTERVAL_SECONDS=str(interval),
        WORKCOORD_LOG_LEVEL="WARNING",
    )
    with (cluster.workdir / "recovery.log").open("wb") as log:
        process = subprocess.Popen(
            [*common.workcoord_command(), "serve", "recovery"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cluster.workdir,
        )
    try:
        yield
    finally:
        common.stop_child(process)


async def _receive(pipe: Connection, timeout: float) -> Any:  # noqa: ASYNC109
    """The next message of an agent process (waited for in a thread, at most ``timeout``)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout):
        if not await loop.run_in_executor(None, pipe.poll, timeout):
            raise TimeoutError("an agent process did not answer")
        return pipe.recv()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    metrics_port = common.free_port()
    async with common.cluster(
        replicas=1, extra_env={"WORKCOORD_METRICS_PORT": str(metrics_port)}
    ) as running:
        result = await measure(args, running, metrics_port)
    common.print_table(
        f"B8 fleet: {args.agents} agents over REST, {args.completes_per_second} completes/s, "
        f"{args.subscribers} feed subscribers, {args.seconds:g} s",
        [
            "heartbeats",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "completes/s",
            "lost in time",
            "errors",
            "coord cores",
            "gw cores",
            "feed gaps+dups",
        ],
        [
            [
                result["heartbeats"],
                result["heartbeat_p50_ms"],
                result["heartbeat_p90_ms"],
                result["heartbeat_p99_ms"],
                result["heartbeat_max_ms"],
                result["completes_per_second"],
                result["leases_lost_in_time"],
                sum(result["errors"].values()),
                result["coordinator_cores"],
                result["gateway_cores"],
                result["feed_gaps"] + result["feed_duplicates"],
            ]
        ],
    )
    print(
        "heartbeat seen by the gateway (HTTP) and the coordinator (RPC), bucket bounds: "
        f"{result['heartbeat_gateway']} / {result['heartbeat_coordinator']}"
    )
    print(f"answered: {result['answered']}, no work: {result['no_work']}")
    for call, seen in result["by_call"].items():
        print(f"  {call}: {seen}")
    if result["errors"]:
        print(f"errors: {result['errors']}")
    figures: dict[str, Any] = {
        "params": {
            "agents": args.agents,
            "agents_per_coordinator": args.agents_per_coordinator,
            "seconds": args.seconds,
            "completes_per_second": args.completes_per_second,
            "subscribers": args.subscribers,
            "heartbeat_seconds": args.heartbeat_seconds,
            "lease_seconds": args.lease_seconds,
            "connections": args.connections,
            "processes": args.processes,
            "heartbeat_usage": not args.no_usage,
            "recovery_seconds": args.recovery_seconds,
        },
        "result": result,
        "targets_met": (
            result["heartbeat_p99_ms"] <= TARGET_P99_MS
            and result["leases_lost_in_time"] == 0
            and result["cores"] <= TARGET_CORES
            and result["agents_leased"] == args.agents
        ),
    }
    return common.finish("b8_fleet", args, figures)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b8_fleet", description=__doc__)
    p.add_argument("--agents", type=int, default=2000)
    p.add_argument(
        "--agents-per-coordinator",
        type=int,
        default=250,
        help="agents per work coordinator (its worker pool holds at most 256)",
    )
    p.add_argument("--seconds", type=float, default=300.0)
    p.add_argument("--completes-per-second", type=float, default=20.0)
    p.add_argument("--subscribers", type=int, default=100)
    p.add_argument("--heartbeat-seconds", type=float, default=10.0)
    p.add_argument("--lease-seconds", type=int, default=30)
    p.add_argument(
        "--connections",
        type=int,
        default=512,
        help="keep-alive HTTP connections of all agent processes together",
    )
    p.add_argument(
        "--recovery-seconds",
        type=float,
        default=15.0,
        help="a recovery service's pass interval (the product's default; 0: no recovery)",
    )
    p.add_argument(
        "--no-usage", action="store_true", help="heartbeats without usage (progress only)"
    )
    p.add_argument(
        "--processes", type=int, default=4, help="agent processes the agents are spread over"
    )
    p.add_argument(
        "--ramp-timeout", type=float, default=900.0, help="seconds for every agent's first lease"
    )
    return common.add_common_flags(p, pgbench=False, profile=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
