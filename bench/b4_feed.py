"""B4 feed latency: commit -> WebSocket delivery, with many subscribers.

``uv run python -m bench.b4_feed [--subscribers 200] [--commits 100] [--interval-ms 50]
[--gateways 1]``

One coordinator process (``workcoord serve coordinator``) and ``--gateways`` gateway processes
(``workcoord serve gateway``); ``--subscribers`` WebSocket clients spread over the gateways, all
watching one work coordinator from the current revision. The bench then commits ``--commits``
one-item lanes (``CreateLane``, 3 events each), one every ``--interval-ms``, and for every
subscriber measures the time from the moment ``CreateLane`` returned to the moment the delta
carrying that lane's ``LANE_CREATED`` event arrived on the socket. A negative sample means the
delta arrived before the CreateLane response.

Every subscriber also checks its stream: each delta must start right after the previous one
(a gap or a duplicate is counted), and at the end each stream must equal the event log.
Target: p99 <= 50 ms, zero gaps or duplicates. The bench client (200 sockets,
JSON parsing) runs on the same cores as the services it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench import common
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2

TARGET_P99_MS = 50.0


@dataclass
class Subscriber:
    """One WebSocket: when each lane's creation arrived, and the stream's continuity."""

    connection: ClientConnection
    at: int = -1
    arrivals: dict[str, float] = field(default_factory=dict)
    revisions: list[int] = field(default_factory=list)
    gaps: int = 0
    duplicates: int = 0
    frames: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self) -> None:
        with contextlib.suppress(Exception):
            async for text in self.connection:
                now = time.perf_counter()
                frame = json.loads(text)
                self.frames += 1
                kind = frame["type"]
                if kind == "hello":
                    self.at = int(frame.get("resumeFrom", 0))
                    self.ready.set()
                elif kind == "snapshot":
                    self.at = int(frame["revision"])
                elif kind == "delta":
                    start = int(frame["fromRevision"])
                    if start > self.at + 1:
                        self.gaps += 1
                    elif start <= self.at:
                        self.duplicates += 1
                    for event in frame["events"]:
                        self.revisions.append(int(event["revision"]))
                        if event["type"] == "LANE_CREATED":
                            self.arrivals[event["laneId"]] = now
                    self.at = int(frame["toRevision"])


@dataclass
class GatewayProcess:
    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        common.stop_child(self.process)


@contextlib.asynccontextmanager
async def gateways(
    cluster: common.Cluster, count: int, extra_env: Mapping[str, str] | None = None
) -> AsyncIterator[list[GatewayProcess]]:
    """``count`` gateway processes in front of the cluster's first coordinator (``extra_env``
    added to each one's environment)."""
    started: list[GatewayProcess] = []
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("WORKCOORD_") and key not in ("DATABASE_URL", "REDIS_URL")
    }
    try:
        for index in range(count):
            address = f"127.0.0.1:{common.free_port()}"
            log = (cluster.workdir / f"gateway-{index}.log").open("wb")
            process = subprocess.Popen(  # noqa: ASYNC220  # started once, not awaited
                [*common.workcoord_command(), "serve", "gateway"],
                env={
                    **env,
                    "WORKCOORD_LISTEN_GATEWAY": address,
                    "WORKCOORD_COORDINATOR_ADDRESS": cluster.address,
                    "WORKCOORD_RECOVERY_ADDRESS": cluster.address,
                    "WORKCOORD_LOG_LEVEL": "WARNING",
                    **(extra_env or {}),
                },
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cluster.workdir,
            )
            started.append(GatewayProcess(f"http://{address}", process))
        async with httpx.AsyncClient(timeout=2.0) as http:
            for gateway in started:
                deadline = time.monotonic() + 30
                while True:
                    with contextlib.suppress(httpx.HTTPError):
                        if (await http.get(f"{gateway.url}/readyz")).status_code == 200:
                            break
                    if time.monotonic() > deadline or gateway.process.poll() is not None:
                        raise RuntimeError(f"gateway {gateway.url} did not become ready")
                    await asyncio.sleep(0.1)
        yield started
    finally:
        for gateway in started:
            gateway.stop()


async def measure(args: argparse.Namespace, cluster: common.Cluster) -> dict[str, Any]:
    tenant = await common.create_tenant(cluster.address, cluster.admin_token, {"bench": 4})
    cid = tenant.coordinator_id
    async with (
        gateways(cluster, args.gateways) as running,
        common.client(cluster.address, tenant.key_secret) as creator,
    ):
        since = (
            await creator.coordinators.ListEvents(
                work_coordinator_pb2.ListEventsRequest(coordinator_id=cid, page_size=1)
            )
        ).revision
        subscribers: list[Subscriber] = []
        for index in range(args.subscribers):
            base = running[index % len(running)].url.replace("http://", "ws://")
            connection = await connect(
                f"{base}/v1/work-coordinators/{cid}/ws?since={since}",
                additional_headers={"Authorization": f"Bearer {tenant.key_secret}"},
                max_size=None,
            )
            subscribers.append(Subscriber(connection))
        readers = [asyncio.create_task(s.read()) for s in subscribers]
        async with asyncio.timeout(60):
            await asyncio.gather(*(s.ready.wait() for s in subscribers))

        services = [cluster.coordinators[0].process.pid, *(g.process.pid for g in running)]
        cpu_before = [_cpu_seconds(pid) for pid in services]
        window = time.perf_counter()
        committed: dict[str, float] = {}
        for index in range(args.commits):
            lane = lane_pb2.Lane(title=f"b4 {index}", template=lane_pb2.Lane.CUSTOM)
            lane.items.append(lane_pb2.Item(key="t", kind=lane_pb2.Item.TASK, worker_class="bench"))
            response = await creator.lanes.CreateLane(
                lane_pb2.CreateLaneRequest(coordinator_id=cid, lane=lane)
            )
            committed[response.lane.lane_id] = time.perf_counter()
            await asyncio.sleep(args.interval_ms / 1000)

        final = (
            await creator.coordinators.ListEvents(
                work_coordinator_pb2.ListEventsRequest(coordinator_id=cid, page_size=1)
            )
        ).revision
        deadline = time.monotonic() + 30
        while any(s.at < final for s in subscribers) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        window = time.perf_counter() - window
        cpu = [_cpu_seconds(pid) - before for pid, before in zip(services, cpu_before, strict=True)]
        for subscriber in subscribers:
            await subscriber.connection.close()
        await asyncio.gather(*readers)

    expected = list(range(since + 1, final + 1))
    latencies = [
        (s.arrivals[lane] - at) * 1000
        for s in subscribers
        for lane, at in committed.items()
        if lane in s.arrivals
    ]
    missing = sum(1 for s in subscribers for lane in committed if lane not in s.arrivals)
    mismatched = sum(1 for s in subscribers if s.revisions != expected)
    return {
        "samples": len(latencies),
        "p50_ms": common.percentile(latencies, 0.50),
        "p90_ms": common.percentile(latencies, 0.90),
        "p99_ms": common.percentile(latencies, 0.99),
        "max_ms": max(latencies, default=float("nan")),
        "min_ms": min(latencies, default=float("nan")),
        "gaps": sum(s.gaps for s in subscribers),
        "duplicates": sum(s.duplicates for s in subscribers),
        "missing": missing,
        "streams_not_equal_to_log": mismatched,
        "frames": sum(s.frames for s in subscribers),
        # CPU the services spent per commit (independent of what else loads the machine).
        "coordinator_cpu_ms_per_commit": cpu[0] * 1000 / max(1, len(committed)),
        "gateway_cpu_ms_per_commit": sum(cpu[1:]) * 1000 / max(1, len(committed)),
        "window_seconds": window,
        "events": final - since,
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    async with common.cluster(replicas=1) as running:
        result = await measure(args, running)
    common.print_table(
        f"B4 feed: commit -> WebSocket delivery ({args.subscribers} subscribers, "
        f"{args.gateways} gateway(s), {args.commits} commits)",
        [
            "samples",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "gaps",
            "dups",
            "missing",
            "≠ log",
            "coord cpu ms/commit",
            "gw cpu ms/commit",
        ],
        [
            [
                result["samples"],
                result["p50_ms"],
                result["p90_ms"],
                result["p99_ms"],
                result["max_ms"],
                result["gaps"],
                result["duplicates"],
                result["missing"],
                result["streams_not_equal_to_log"],
                result["coordinator_cpu_ms_per_commit"],
                result["gateway_cpu_ms_per_commit"],
            ]
        ],
    )
    clean = (
        result["gaps"] == result["duplicates"] == result["missing"] == 0
        and result["streams_not_equal_to_log"] == 0
    )
    figures: dict[str, Any] = {
        "params": {
            "subscribers": args.subscribers,
            "commits": args.commits,
            "interval_ms": args.interval_ms,
            "gateways": args.gateways,
        },
        "result": result,
        "targets_met": clean and result["p99_ms"] <= TARGET_P99_MS,
    }
    return common.finish("b4_feed", args, figures)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.b4_feed", description=__doc__)
    p.add_argument("--subscribers", type=int, default=200)
    p.add_argument("--commits", type=int, default=100)
    p.add_argument("--interval-ms", type=float, default=50.0)
    p.add_argument("--gateways", type=int, default=1)
    return common.add_common_flags(p, pgbench=False)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
