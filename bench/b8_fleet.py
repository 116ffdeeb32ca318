"""B8 a fleet: many agents over REST through the gateway, each holding a lease and heartbeating.

``uv run python -m bench.b8_fleet [--agents 2000] [--seconds 300] [--completes-per-second 20]
[--subscribers 100] [--heartbeat-seconds 10] [--lease-seconds 30]``

One coordinator process and one gateway process (``workcoord serve gateway``). A work
coordinator admits at most 256 workers (the worker pool cap), so the agents are spread over
``--agents-per-coordinator`` (250) per ORG work coordinator, each in its own org with its own
work key. Not timed: enough no-op items for the whole run are created over gRPC (per work
coordinator: its agents + its share of rate times seconds, plus a margin), then every agent
leases one item over REST (``POST …/leases``, its own worker id,
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
    gateway: str
    tenants: list[common.Tenant]
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

    def tenant(self, agent: int) -> common.Tenant:
        per: int = self.args.agents_per_coordinator
        return self.tenants[agent // per]

    async def post(self, agent: int, path: str, body: dict[str, Any]) -> httpx.Response:
        tenant = self.tenant(agent)
        url = f"{self.gateway}/v1/work-coordinators/{tenant.coordinator_id}{path}"
        headers = {"Authorization": f"Bearer {tenant.key_secret}"}
        return await self.http.post(url, json=body, headers=headers)

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
        response = await self.post(agent, "/leases", body)
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
        response = await self.post(agent, f"/leases/{lease.lease_id}/heartbeat", body)
        elapsed = (time.monotonic() - sent) * 1000
        if response.status_code == 200:
            if self.measuring:
                self.heartbeat_ms.append(elapsed)
            self.answered["heartbeat"] += 1
            lease.confirmed_at = sent
            return True
        return not self._lost_or_error("heartbeat", response, lease, sent)

    async def complete(self, agent: int, lease: Lease) -> None:
        body = {"leaseToken": lease.token, "evidence": {"summary": "b8 no-op"}}
        sent = time.monotonic()
        response = await self.post(agent, f"/leases/{lease.lease_id}/complete", body)
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


async def agent(
    fleet: Fleet,
    index: int,
    first: asyncio.Future[Lease | None],
    complete_now: asyncio.Event,
) -> None:
    """Heartbeat the lease every interval from the moment it is granted (the ramp lasts longer
    than a lease); on ``complete_now`` complete it and lease the next."""
    lease = await first
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
                    await fleet.complete(index, lease)
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
    limits = httpx.Limits(
        max_connections=args.connections, max_keepalive_connections=args.connections
    )
    async with (
        gateways(cluster, 1) as running,
        httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(30.0, pool=None)) as http,
    ):
        gateway = running[0]
        fleet = Fleet(http, gateway.url, tenants, args)
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

        ramp = time.perf_counter()
        ramp_slots = asyncio.Semaphore(args.connections)

        async def first_lease(index: int) -> Lease | None:
            async with ramp_slots:
                try:
                    return await fleet.lease(index)
                except httpx.HTTPError as error:
                    fleet.errors[f"ramp {type(error).__name__}"] += 1
                    return None

        firsts = [asyncio.ensure_future(first_lease(i)) for i in range(args.agents)]
        signals = [asyncio.Event() for _ in range(args.agents)]
        tasks = [
            asyncio.create_task(agent(fleet, i, firsts[i], signals[i])) for i in range(args.agents)
        ]
        leases = await asyncio.gather(*firsts)
        ramp = time.perf_counter() - ramp
        held = sum(1 for lease in leases if lease is not None)
        print(f"{held} of {args.agents} agents hold a lease ({ramp:.1f} s)", flush=True)

        services = [cluster.coordinators[0].process.pid, gateway.process.pid]
        cpu_before = [common.cpu_seconds(pid) for pid in services]
        load_before = common.machine()["loadavg_1m"]
        fleet.measuring = True
        lost_before = fleet.lost_in_time
        window = time.perf_counter()
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
        "leases_lost_in_time_during_ramp": lost_before,
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
            "agents_per_coordinator": args.agents_per_coordinator,
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
    p.add_argument("--connections", type=int, default=64, help="pooled HTTP connections")
    return common.add_common_flags(p, pgbench=False, profile=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
