"""Worker-run start latency: an item becoming ready -> its command starting under a long-polling
``workcoord worker run``.

``uv run python -m bench.worker_run_start [--samples 30] [--settle-ms 300]``

Starts ``workcoord dev`` (embedded: SQLite, in-process bus) in a scratch folder, one tenant, and
one supervisor (``workcoord worker run --class machine --wait-seconds 30 -- sh -c 'date
+%s.%N >> $STARTS'``) in a scratch git checkout. For each sample, once the supervisor is back in
its long poll (``--settle-ms`` after the previous item completed), the bench creates one TASK
item (``CreateLane``) and measures from the item's ``createTime`` (stamped by the coordinator in
the transaction that made it ready; same host, same clock) to the moment the command's first
instruction ran. That span holds the long poll's wake-up, the Lease reply, the supervisor's
worktree check and git read, the Start call (the run identity is recorded before the command
exists), the attempt files and the fork/exec of ``sh`` and ``date``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import common
from workcoord.api.v1 import lane_pb2

READY_LINE = "workcoord dev: ready"


def _lines(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line.rstrip("\n"))


def _wait_line(lines: queue.Queue[str], want: str, timeout: float = 120.0) -> list[str]:
    """Every line up to and including the first holding ``want``."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        seen.append(lines.get(timeout=max(0.01, deadline - time.monotonic())))
        if want in seen[-1]:
            return seen


def _stage_times(lines: list[str]) -> dict[str, float]:
    """event → its time (seconds since the epoch) among the supervisor's JSON lines."""
    times: dict[str, float] = {}
    for line in lines:
        event = json.loads(line)
        times.setdefault(event["event"], datetime.fromisoformat(event["time"]).timestamp())
    return times


def _start(command: list[str], env: dict[str, str], cwd: Path | None = None) -> Running:
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(process.stdout, lines), daemon=True).start()
    return Running(process, lines)


class Running:
    """A started process and its output lines."""

    def __init__(self, process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
        self.process = process
        self.lines = lines

    def stop(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()


def sample(args: argparse.Namespace, folder: Path) -> tuple[list[float], dict[str, list[float]]]:
    ports = [common.free_port() for _ in range(3)]
    token = "wcadm_bench_" + common.suffix() * 4
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKCOORD_")}
    dev = _start(
        [
            *common.workcoord_command(),
            "dev",
            *("--state-dir", str(folder / "state")),
            *("--coordinator-port", str(ports[0])),
            *("--recovery-port", str(ports[1])),
            *("--gateway-port", str(ports[2])),
            *("--log-level", "WARNING"),
        ],
        {**env, "WORKCOORD_BOOTSTRAP_ADMIN_TOKEN": token},
    )
    supervisor: Running | None = None
    try:
        _wait_line(dev.lines, READY_LINE)
        address = f"127.0.0.1:{ports[0]}"
        tenant = asyncio.run(common.create_tenant(address, token, {"machine": 2}))
        checkout = folder / "checkout"
        checkout.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "bench", str(checkout)], check=True)
        starts = folder / "starts"
        supervisor = _start(
            [
                *common.workcoord_command(),
                *("worker", "run", "--json"),
                *("--coordinator", tenant.coordinator_id, "--class", "machine"),
                *("--wait-seconds", "30"),
                *("--", "sh", "-c", 'date +%s.%N >> "$STARTS"'),
            ],
            {
                **env,
                "WORKCOORD_ADDRESS": address,
                "WORKCOORD_TOKEN": tenant.key_secret,
                "WORKCOORD_AGENT_ID": "bench",
                "WORKCOORD_AGENT_ENGINE": "sh",
                "WORKCOORD_AGENT_ACCOUNT": "bench-bot",
                "STARTS": str(starts),
            },
            cwd=checkout,
        )
        _wait_line(supervisor.lines, '"event":"waiting"')
        return asyncio.run(_samples(args, address, tenant, supervisor, starts))
    finally:
        if supervisor is not None:
            supervisor.stop(signal.SIGTERM)
        dev.stop(signal.SIGINT)


async def _samples(
    args: argparse.Namespace,
    address: str,
    tenant: common.Tenant,
    supervisor: Running,
    starts: Path,
) -> tuple[list[float], dict[str, list[float]]]:
    latencies: list[float] = []
    stages: dict[str, list[float]] = {"leased": [], "started": [], "running": []}
    async with common.client(address, tenant.key_secret) as creator:
        for index in range(args.samples):
            await asyncio.sleep(args.settle_ms / 1000.0)  # back in its long poll
            created = await creator.lanes.CreateLane(
                lane_pb2.CreateLaneRequest(
                    coordinator_id=tenant.coordinator_id,
                    lane=common.task_lane(f"start {index}", 1, "machine"),
                )
            )
            ready = created.lane.items[0].create_time.ToDatetime(tzinfo=UTC).timestamp()
            lines = await asyncio.to_thread(_wait_line, supervisor.lines, '"event":"completed"')
            started = float((await asyncio.to_thread(starts.read_text)).split()[index])
            latencies.append((started - ready) * 1000.0)
            times = _stage_times(lines)
            for stage, values in stages.items():
                values.append((times[stage] - ready) * 1000.0)
    return latencies, stages


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="workcoord-bench-") as folder:
        latencies, stages = sample(args, Path(folder))
    summary = {
        "p50_ms": round(common.percentile(latencies, 0.50), 1),
        "p90_ms": round(common.percentile(latencies, 0.90), 1),
        "max_ms": round(max(latencies), 1),
        "min_ms": round(min(latencies), 1),
        "samples": len(latencies),
    }
    # Where the time goes: the supervisor's own lines (leased: the Lease reply arrived;
    # started: Start answered; running: the command was spawned), from the same createTime.
    stage_p50 = {stage: round(common.median(values), 1) for stage, values in stages.items()}
    common.print_table(
        "worker run: item ready (createTime) -> command started (ms), workcoord dev",
        ["samples", "p50", "p90", "min", "max", "p50 leased", "p50 started", "p50 spawned"],
        [
            [
                summary["samples"],
                summary["p50_ms"],
                summary["p90_ms"],
                summary["min_ms"],
                summary["max_ms"],
                stage_p50["leased"],
                stage_p50["started"],
                stage_p50["running"],
            ]
        ],
    )
    figures: dict[str, Any] = {
        "params": {"samples": args.samples, "settle_ms": args.settle_ms, "backend": "dev"},
        "summary": summary,
        "stages_p50_ms": stage_p50,
        "latencies_ms": [round(v, 2) for v in latencies],
    }
    if not args.no_record:
        common.record("worker_run_start", figures)
    else:
        print(json.dumps(figures["summary"]))
    return figures


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.worker_run_start", description=__doc__)
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--settle-ms", type=float, default=300.0)
    p.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    return p


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    main()
