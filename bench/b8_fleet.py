"""B8 a fleet: many agents over REST through the gateway, each holding a lease and heartbeating.

``uv run python -m bench.b8_fleet [--agents 2000] [--seconds 300] [--completes-per-second 20]
[--subscribers 100] [--heartbeat-seconds 10] [--lease-seconds 30]``

One coordinator process and one gateway process (``workcoord serve gateway``). Not timed:
enough no-op items for the whole run are created over gRPC (``--agents`` + rate times seconds, plus
a margin), then every agent leases one item over REST (``POST …/leases``, its own worker id,
``maxItems`` 1). Then, for ``--seconds``: every agent heartbeats its lease every
``--heartbeat-seconds`` (``POST …/leases/{l}/heartbeat``; the first at a random phase, so the
heartbeats spread evenly), ``--completes-per-second`` agents a second (round robin) complete
their lease and lease the next item, and ``--subscribers`` WebSocket clients follow the work
coordinator's feed (each checks its stream for gaps and duplicates, as in B4).

All HTTP goes through one ``httpx.AsyncClient`` with ``--connections`` (64) pooled keep-alive
connections: one host cannot open thousands of sockets sensibly, and a real fleet's agents
would be spread over many hosts anyway. Reported: heartbeat latency p50/p90/p99/max (ms, as the
bench client sees it, so it includes the client's own scheduling on the shared cores), the
heartbeats, completes and leases answered, errors by status, **leases lost that were
heartbeated in time** (a heartbeat or complete answered ``LEASE_LOST`` although the lease's last
confirmed heartbeat was sent less than ``--lease-seconds`` before; must be 0), and the CPU the
coordinator and the gateway used over the window (cores = CPU seconds / window seconds).
Targets: heartbeat p99 ≤ 50 ms, 0 leases lost in time, coordinator + gateway ≤ 1 core.

Heartbeats carry ``progress`` only. When heartbeats carry usage, put it in :func:`usage_for`
(the one place a heartbeat body is built) so B8 measures heartbeats with usage.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from websockets.asyncio.client import connect

from bench import common
from bench.b4_feed import Subscriber, gateways
from workcoord.api.v1 import work_coordinator_pb2

TARGET_P99_MS = 50.0
TARGET_CORES = 1.0
WORKER_CLASS = "fleet"


def usage_for(agent: int, beat: int) -> dict[str, Any] | None:
    """The usage an agent reports with its heartbeat: None while heartbeats carry none.

    The hook for heartbeats with usage: return the body's ``usage`` object here (for example
    tokens growing with ``beat``) and every heartbeat of the run carries it."""
    del agent, beat
    return None


@dataclass
class Lease:
    lease_id: str
    token: str
    confirmed_at: float  # when the last answered Lease or heartbeat of it was sent


@dataclass
class Fleet:
    """What the agents share: the client, the routes and the counters."""

    http: httpx.AsyncClient
    base: str
    args: argparse.Namespace
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    measuring: bool = False
    heartbeat_ms: list[float] = field(default_factory=list)
    answered: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    lost_in_time: int = 0
    lost_late: int = 0
    no_work: int = 0
    started_at: str = field(
        default_factory=lambda: (datetime.now(UTC) - timedelta(seconds=5)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    )

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(f"{self.base}{path}", json=body)

    async def lease(self, agent: int) -> Lease | None:
        body = {
            "workerId": f"agent-{agent}",
            "workerClass": WORKER_CLASS,
            "maxItems": 1,
            "leaseSeconds": self.args.lease_seconds,
            "waitSeconds": 0,
            # A run identity starts the lease at once (RUNNING), so it can be completed.
            "runIdentity": {
                "pid": 1000 + agent,
                "agentId": f"agent-{agent}",
                "engine": "bench",
                "account": "bench",
                "hostname": "b8",
                "worktreePath": f"/srv/b8/{agent}",
                "branch": "b8",
                "startedAt": self.started_at,
            },
        }
        sent = time.monotonic()
        response = await self.post("/leases", body)
        if response.status_code != 200:
            self._error("lease", response)
            return None
        leases = response.json().get("leases", [])
        if not leases:
            self.no_work += 1
            return None
        self.answered["lease"] += 1
        return Lease(leases[0]["leaseId"], leases[0]["leaseToken"], sent)

    async def heartbeat(self, agent: int, lease: Lease, beat: int) -> bool:
        """One heartbeat; False when the lease is gone."""
        body: dict[str, Any] = {"leaseToken": lease.token, "progress": f"beat {beat}"}
        usage = usage_for(agent, beat)
        if usage is not None:
            body["usage"] = usage
        sent = time.monotonic()
        response = await self.post(f"/leases/{lease.lease_id}/heartbeat", body)
        elapsed = (time.monotonic() - sent) * 1000
        if response.status_code == 200:
            if self.measuring:
                self.heartbeat_ms.append(elapsed)
            self.answered["heartbeat"] += 1
            lease.confirmed_at = sent
            return True
        return not self._lost_or_error("heartbeat", response, lease, sent)

    async def complete(self, lease: Lease) -> None:
        body = {"leaseToken": lease.token, "evidence": {"summary": "b8 no-op"}}
        sent = time.monotonic()
        response = await self.post(f"/leases/{lease.lease_id}/complete", body)
        if response.status_code == 200:
            self.answered["complete"] += 1
        else:
            self._lost_or_error("complete", response, lease, sent)

    def _lost_or_error(
        self, call: str, response: httpx.Response, lease: Lease, sent: float
    ) -> bool:
        """Count a refused write; True when it said the lease is lost."""
        if response.status_code == 409 and "LEASE_LOST" in response.text:
            if sent - lease.confirmed_at < self.args.lease_seconds:
                self.lost_in_time += 1
            else:
                self.lost_late += 1
            return True
        self._error(call, response)
        return False

    def _error(self, call: str, response: httpx.Response) -> None:
        kind = f"{call} {response.status_code}"
        if kind not in self.errors:
            print(f"first {kind}: {response.text[:300]}", flush=True)
        self.errors[kind] += 1


async def agent(fleet: Fleet, index: int, lease: Lease | None, complete_now: asyncio.Event) -> None:
    """Heartbeat the lease every interval; on ``complete_now`` complete it and lease the next."""
    interval = fleet.args.heartbeat_seconds
    loop = asyncio.get_running_loop()
    next_beat = loop.time() + random.uniform(0, interval)
    beat = 0
    while not fleet.stop.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(next_beat):
                await complete_now.wait()
        if fleet.stop.is_set():
            return
        try:
            if complete_now.is_set():
                complete_now.clear()
                if lease is not None:
                    await fleet.complete(lease)
                lease = await fleet.lease(index)
                next_beat = loop.time() + interval
                continue
            next_beat += interval
            beat += 1
            if lease is None:
                lease = await fleet.lease(index)
            elif not await fleet.heartbeat(index, lease, beat):
                lease = None
        except httpx.HTTPError as error:
            fleet.errors[type(error).__name__] += 1


async def completer(fleet: Fleet, signals: list[asyncio.Event]) -> None:
    """Ask ``--completes-per-second`` agents a second, round robin, to complete."""
    loop = asyncio.get_running_loop()
    period = 1.0 / fleet.args.completes_per_second
    order = list(range(len(signals)))
    random.shuffle(order)
    at = loop.time()
    turn = 0
    while not fleet.stop.is_set():
        at += period
        await asyncio.sleep(max(0.0, at - loop.time()))
        signals[order[turn % len(order)]].set()
        turn += 1


async def measure(args: argparse.Namespace, cluster: common.Cluster) -> dict[str, Any]:
    capacity = args.agents + 100
    tenant = await common.create_tenant(
        cluster.address, cluster.admin_token, {WORKER_CLASS: capacity}
    )
    cid = tenant.coordinator_id
    total = args.agents + int(args.completes_per_second * args.seconds * 1.2) + 100
    async with common.client(cluster.address, tenant.key_secret) as creator:
        await common.create_items(creator, cid, total, worker_class=WORKER_CLASS)
        since = (
            await creator.coordinators.ListEvents(
                work_coordinator_pb2.ListEventsRequest(coordinator_id=cid, page_size=1)
            )
        ).revision
    print(f"created {total} items", flush=True)
    limits = httpx.Limits(
        max_connections=args.connections, max_keepalive_connections=args.connections
    )
    headers = {"Authorization": f"Bearer {tenant.key_secret}"}
    async with (
        gateways(cluster, 1) as running,
        httpx.AsyncClient(limits=limits, headers=headers, timeout=30.0) as http,
    ):
        gateway = running[0]
        fleet = Fleet(http, f"{gateway.url}/v1/work-coordinators/{cid}", args)
        subscribers: list[Subscriber] = []
        for _ in range(args.subscribers):
            connection = await connect(
                f"{gateway.url.replace('http://', 'ws://')}/v1/work-coordinators/{cid}/ws"
                f"?since={since}",
                additional_headers=headers,
                max_size=None,
            )
            subscribers.append(Subscriber(connection))
        readers = [asyncio.create_task(s.read()) for s in subscribers]
        async with asyncio.timeout(60):
            await asyncio.gather(*(s.ready.wait() for s in subscribers))

        ramp = time.perf_counter()
        leases = await asyncio.gather(*(fleet.lease(i) for i in range(args.agents)))
        ramp = time.perf_counter() - ramp
        held = sum(1 for lease in leases if lease is not None)
        print(f"{held} of {args.agents} agents hold a lease ({ramp:.1f} s)", flush=True)

        services = [cluster.coordinators[0].process.pid, gateway.process.pid]
        cpu_before = [common.cpu_seconds(pid) for pid in services]
        load_before = common.machine()["loadavg_1m"]
        fleet.measuring = True
        window = time.perf_counter()
        signals = [asyncio.Event() for _ in range(args.agents)]
        tasks = [
            asyncio.create_task(agent(fleet, i, leases[i], signals[i])) for i in range(args.agents)
        ]
        tasks.append(asyncio.create_task(completer(fleet, signals)))
        profile = args.profile
        with (
            common.profiled(services[0], profile and f"{profile}.coordinator"),
            common.profiled(services[1], profile and f"{profile}.gateway"),
        ):
            await asyncio.sleep(args.seconds)
        fleet.measuring = False
        fleet.stop.set()
        for signal in signals:
            signal.set()
        await asyncio.gather(*tasks)
        window = time.perf_counter() - window
        cpu = [common.cpu_seconds(pid) - b for pid, b in zip(services, cpu_before, strict=True)]
        load_after = common.machine()["loadavg_1m"]
        for subscriber in subscribers:
            await subscriber.connection.close()
        await asyncio.gather(*readers)

    samples = fleet.heartbeat_ms
    return {
        "agents_leased": held,
        "ramp_seconds": ramp,
        "window_seconds": window,
        "heartbeats": len(samples),
        "heartbeat_p50_ms": common.percentile(samples, 0.50),
        "heartbeat_p90_ms": common.percentile(samples, 0.90),
        "heartbeat_p99_ms": common.percentile(samples, 0.99),
        "heartbeat_max_ms": max(samples, default=float("nan")),
        "answered": dict(fleet.answered),
        "completes_per_second": fleet.answered["complete"] / window,
        "errors": dict(fleet.errors),
        "no_work": fleet.no_work,
        "leases_lost_in_time": fleet.lost_in_time,
        "leases_lost_late": fleet.lost_late,
        "coordinator_cores": cpu[0] / window,
        "gateway_cores": cpu[1] / window,
        "cores": sum(cpu) / window,
        "feed_frames": sum(s.frames for s in subscribers),
        "feed_gaps": sum(s.gaps for s in subscribers),
        "feed_duplicates": sum(s.duplicates for s in subscribers),
        "loadavg_1m": [load_before, load_after],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    async with common.cluster(replicas=1) as running:
        result = await measure(args, running)
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
    if result["errors"]:
        print(f"errors: {result['errors']}")
    figures: dict[str, Any] = {
        "params": {
            "agents": args.agents,
            "seconds": args.seconds,
            "completes_per_second": args.completes_per_second,
            "subscribers": args.subscribers,
            "heartbeat_seconds": args.heartbeat_seconds,
            "lease_seconds": args.lease_seconds,
            "connections": args.connections,
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
    p.add_argument("--seconds", type=float, default=300.0)
    p.add_argument("--completes-per-second", type=float, default=20.0)
    p.add_argument("--subscribers", type=int, default=100)
    p.add_argument("--heartbeat-seconds", type=float, default=10.0)
    p.add_argument("--lease-seconds", type=int, default=30)
    p.add_argument("--connections", type=int, default=64, help="pooled HTTP connections")
    return common.add_common_flags(p, pgbench=False, profile=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
