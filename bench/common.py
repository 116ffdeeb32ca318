"""Shared plumbing of the benchmarks: a scratch PostgreSQL database, coordinator processes, an
org with an ORG work coordinator and a work key, the pgbench reference, tables and result files.

Every benchmark runs the coordinator as a separate process (``workcoord serve coordinator``
after ``workcoord db upgrade``) on a fresh database ``workcoord_bench_<random>`` that is dropped
afterwards, with Redis at ``redis://127.0.0.1:6379/14``. Results are appended as one JSON line
per run to ``bench/results/<bench>.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import secrets
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from tests.support.processes import service_env as service_env  # re-exported for the benches
from tests.support.processes import workcoord_command as workcoord_command
from workcoord.api.v1 import admin_pb2, lane_pb2, policy_pb2, work_coordinator_pb2
from workcoord.client.client import WorkcoordClient
from workcoord.kit.secrets import ADMIN_TOKEN_PREFIX, SERVICE_KEY_PREFIX, new_secret
from workcoord.kit.startup import free_port as free_port  # re-exported for the benches

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
ADMIN_URL = os.environ.get(
    "WORKCOORD_BENCH_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("WORKCOORD_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
WORKER_CLASS = "bench"


# ---------------------------------------------------------------------------- small helpers


def suffix() -> str:
    return secrets.token_hex(4)


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (``fraction`` in 0..1)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (Linux /proc): comparable across runs
    whatever else loads the machine, unlike wall-clock rates."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """The peak resident set size of ``pid`` (VmHWM, Linux /proc), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def git_commit() -> str:
    """The short commit of this checkout, ``+dirty`` when tracked files changed."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    line = "+".join("-" * (w + 2) for w in widths)
    print(f"\n{title}")
    print(line)
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print(line)
    for row in cells:
        first, *rest = zip(row, widths, strict=True)
        print(" | ".join([first[0].ljust(first[1]), *(v.rjust(w) for v, w in rest)]))
    print(line, flush=True)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def add_common_flags(
    parser: argparse.ArgumentParser, *, pgbench: bool = True, profile: bool = False
) -> argparse.ArgumentParser:
    """The flags the benchmarks share: ``--pgbench-seconds`` (the reference measured in the same
    run), ``--profile`` (py-spy the coordinator) and always ``--no-record``."""
    if pgbench:
        parser.add_argument("--pgbench-seconds", type=int, default=10)
    if profile:
        parser.add_argument(
            "--profile", default=None, metavar="PATH", help="py-spy the coordinator into PATH (raw)"
        )
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    return parser


def finish(bench: str, args: argparse.Namespace, figures: dict[str, Any]) -> dict[str, Any]:
    """``figures``, appended to ``bench/results/<bench>.jsonl`` first unless ``--no-record``."""
    if not args.no_record:
        record(bench, figures)
    return figures


def record(bench: str, figures: Mapping[str, Any], results_dir: Path | None = None) -> Path:
    """Append one JSON line for this run to ``bench/results/<bench>.jsonl``."""
    directory = results_dir or RESULTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{bench}.jsonl"
    line = {
        "bench": bench,
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        **figures,
    }
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, sort_keys=True) + "\n")
    print(f"\nappended to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path


# ---------------------------------------------------------------------------- PostgreSQL


@contextlib.asynccontextmanager
async def scratch_database(
    prefix: str = "workcoord_bench", admin_url: str = ADMIN_URL
) -> AsyncIterator[str]:
    """A fresh database ``<prefix>_<random>`` on the server of ``admin_url``; its URL; dropped
    (forcibly) afterwards."""
    name = f"{prefix}_{suffix()}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield f"{admin_url.rpartition('/')[0]}/{name}"
    finally:
        admin = await asyncpg.connect(admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


def migrate(database_url: str) -> None:
    subprocess.run(
        [*workcoord_command(), "db", "upgrade", "--database-url", database_url],
        check=True,
        stdout=subprocess.DEVNULL,
    )


# ---------------------------------------------------------------------------- pgbench


@dataclass
class PgbenchResult:
    """Transactions per second of two pgbench workloads, run in the same session."""

    simple_update_tps: float
    one_row_update_tps: float
    clients: int
    threads: int
    seconds: int

    @property
    def reference_tps(self) -> float:
        """The raw commit rate we compare against: a minimal one-row-update transaction."""
        return self.one_row_update_tps

    def as_dict(self) -> dict[str, Any]:
        return {
            "simple_update_tps": round(self.simple_update_tps, 1),
            "one_row_update_tps": round(self.one_row_update_tps, 1),
            "clients": self.clients,
            "threads": self.threads,
            "seconds": self.seconds,
        }


_TPS = re.compile(r"tps = ([0-9.]+)")
ONE_ROW_UPDATE = (
    "\\set aid random(1, 100000 * :scale)\n"
    "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n"
)


async def run_pgbench(seconds: int = 10, clients: int = 8, threads: int = 2) -> PgbenchResult:
    """``pgbench -N`` (simple update, no vacuum) and a one-row-update script on a scratch
    database initialised with ``pgbench -i``; the database is dropped afterwards."""
    async with scratch_database("workcoord_bench_pgbench") as url:
        await asyncio.to_thread(
            subprocess.run,
            ["pgbench", "-i", "-q", "-s", "1", url],
            check=True,
            capture_output=True,
        )
        common = ["pgbench", "-n", "-c", str(clients), "-j", str(threads), "-T", str(seconds)]
        simple = await asyncio.to_thread(_pgbench_tps, [*common, "-N", url])
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
            script.write(ONE_ROW_UPDATE)
        try:
            one_row = await asyncio.to_thread(_pgbench_tps, [*common, "-f", script.name, url])
        finally:
            os.unlink(script.name)
    return PgbenchResult(simple, one_row, clients, threads, seconds)


def _pgbench_tps(command: list[str]) -> float:
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    found = _TPS.findall(out.stdout)
    if not found:
        raise RuntimeError(f"pgbench printed no tps:\n{out.stdout}\n{out.stderr}")
    return float(found[-1])


def print_pgbench(result: PgbenchResult) -> None:
    print_table(
        f"pgbench reference (-c {result.clients} -j {result.threads} "
        f"-T {result.seconds}; same run)",
        ["workload", "tps"],
        [
            ["simple-update (-N)", result.simple_update_tps],
            ["one-row UPDATE per transaction", result.one_row_update_tps],
        ],
    )


# ---------------------------------------------------------------------------- coordinator processes


def stop_child(process: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if ``process`` has not exited within ``timeout`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class CoordinatorProcess:
    """A ``workcoord serve coordinator`` child process."""

    address: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def stop(self) -> None:
        stop_child(self.process)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Cluster:
    """A scratch database, one or more coordinator processes over it, and the credentials."""

    database_url: str
    admin_token: str
    service_key: str
    workdir: Path
    clock_file: Path | None  # only when asked for (B3): reading it costs every call CPU
    cpus: str | None = None  # coordinators pinned to these CPUs (``taskset --cpu-list``; B11)
    coordinators: list[CoordinatorProcess] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.coordinators[0].address

    def set_clock_offset(self, seconds: float) -> None:
        """Move the coordinators' clock ahead (WORKCOORD_TEST_CLOCK_FILE); never sleep."""
        if self.clock_file is None:
            raise RuntimeError("this cluster was started without a clock file (clock=True)")
        temporary = self.clock_file.with_suffix(".tmp")
        temporary.write_text(f"{seconds}\n")
        os.replace(temporary, self.clock_file)

    async def start_coordinator(
        self, *, extra_env: Mapping[str, str] | None = None
    ) -> CoordinatorProcess:
        port = free_port()
        address = f"127.0.0.1:{port}"
        env = service_env(
            DATABASE_URL=self.database_url,
            REDIS_URL=REDIS_URL,
            WORKCOORD_LISTEN_COORDINATOR=address,
            WORKCOORD_BOOTSTRAP_ADMIN_TOKEN=self.admin_token,
            WORKCOORD_SERVICE_KEY=self.service_key,
            WORKCOORD_LOG_LEVEL="WARNING",
        )
        if self.clock_file is not None:
            env["WORKCOORD_TEST_CLOCK_FILE"] = str(self.clock_file)
        if extra_env:
            env.update(extra_env)
        log_path = self.workdir / f"coordinator-{len(self.coordinators)}.log"
        pinned = ["taskset", "--cpu-list", self.cpus] if self.cpus is not None else []
        with log_path.open("wb") as log:
            process = subprocess.Popen(  # noqa: ASYNC220  # started once, not awaited
                [*pinned, *workcoord_command(), "serve", "coordinator"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )
        running = CoordinatorProcess(address, process, log_path)
        self.coordinators.append(running)
        await _wait_ready(running, self.admin_token)
        return running

    def stop(self) -> None:
        for coordinator in reversed(self.coordinators):
            coordinator.stop()


async def _wait_ready(coordinator: CoordinatorProcess, token: str, timeout: float = 120.0) -> None:  # noqa: ASYNC109
    deadline = time.monotonic() + timeout
    async with WorkcoordClient(coordinator.address, token) as probe:
        while True:
            if coordinator.process.poll() is not None:
                raise RuntimeError(
                    f"the coordinator exited ({coordinator.process.returncode}):\n"
                    + coordinator.log_tail()
                )
            try:
                await probe.admin.ListOrgs(admin_pb2.ListOrgsRequest(), timeout=1.0)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        "the coordinator did not become ready:\n" + coordinator.log_tail()
                    ) from None
                await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def cluster(
    replicas: int = 1,
    *,
    clock: bool = False,
    extra_env: Mapping[str, str] | None = None,
    admin_url: str = ADMIN_URL,
    cpus: str | None = None,
) -> AsyncIterator[Cluster]:
    """A migrated scratch database (on the server of ``admin_url``) with ``replicas``
    coordinator processes on it, pinned to ``cpus`` if given; with ``clock``, their clock reads
    an offset from a file (:meth:`Cluster.set_clock_offset`). Only a bench that moves the clock
    asks for it: the server then reads the file on every ``now()``, which is CPU the other
    benches should not measure."""
    async with scratch_database(admin_url=admin_url) as url:
        await asyncio.to_thread(migrate, url)
        with tempfile.TemporaryDirectory(prefix="workcoord-bench-") as tmp:
            workdir = Path(tmp)
            clock_file = workdir / "clock-offset" if clock else None
            if clock_file is not None:
                clock_file.write_text("0\n")
            running = Cluster(
                database_url=url,
                admin_token=new_secret(ADMIN_TOKEN_PREFIX),
                service_key=new_secret(SERVICE_KEY_PREFIX),
                workdir=workdir,
                clock_file=clock_file,
                cpus=cpus,
            )
            try:
                for _ in range(replicas):
                    await running.start_coordinator(extra_env=extra_env)
                yield running
            except BaseException:
                for index, coordinator in enumerate(running.coordinators):
                    print(f"--- coordinator {index} log (tail) ---\n{coordinator.log_tail()}")
                raise
            finally:
                running.stop()


def client(address: str, token: str) -> WorkcoordClient:
    """A client on loopback (plaintext: the bench never sets WORKCOORD_TLS_*)."""
    return WorkcoordClient(address, token)


@contextlib.contextmanager
def profiled(pid: int, output: str | None, rate: int = 200) -> Iterator[None]:
    """Sample ``pid`` with py-spy (``uvx py-spy record``, raw collapsed stacks) while inside;
    nothing when ``output`` is None."""
    if not output:
        yield
        return
    command = ["uvx", "py-spy", "record", "--pid", str(pid), "--rate", str(rate)]
    command += ["--format", "raw", "--output", output, "--nonblocking"]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # let py-spy attach before the measured window opens
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(timeout=30)
        except subprocess.TimeoutExpired:
            spy.kill()
        print(f"py-spy profile of pid {pid} written to {output}")


# ---------------------------------------------------------------------------- tenant setup


@dataclass
class Tenant:
    """An org, an ORG work coordinator and a work key (READ, LEASE, WRITE) scoped to it."""

    org_slug: str
    coordinator_id: str
    key_secret: str


async def create_tenant(
    address: str,
    admin_token: str,
    class_capacity: Mapping[str, int],
    org_slug: str | None = None,
    retry_policy: policy_pb2.RetryPolicy | None = None,
) -> Tenant:
    """Create (as the bootstrap admin) an org, an ORG coordinator with ``class_capacity`` (and
    ``retry_policy``, if given) set by UpdateWorkCoordinator, and a work key for it."""
    slug = org_slug or f"bench-{suffix()}"
    async with client(address, admin_token) as admin:
        await admin.admin.CreateOrg(
            admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=slug, display_name="bench"))
        )
        created = await admin.coordinators.CreateWorkCoordinator(
            work_coordinator_pb2.CreateWorkCoordinatorRequest(
                work_coordinator=work_coordinator_pb2.WorkCoordinator(
                    scope=work_coordinator_pb2.WorkCoordinator.ORG,
                    org_slug=slug,
                    display_name="bench",
                    digest_owner=f"ops@{slug}.test",
                )
            )
        )
        coordinator_id = created.work_coordinator.coordinator_id
        update = work_coordinator_pb2.UpdateWorkCoordinatorRequest(
            coordinator_id=coordinator_id,
            work_coordinator=work_coordinator_pb2.WorkCoordinator(
                scope=work_coordinator_pb2.WorkCoordinator.ORG,
                org_slug=slug,
                class_capacity=dict(class_capacity),
                retry_policy=retry_policy,
            ),
        )
        update.update_mask.paths.append("class_capacity")
        if retry_policy is not None:
            update.update_mask.paths.append("retry_policy")
        await admin.coordinators.UpdateWorkCoordinator(update)
        key = await admin.admin.CreateWorkKey(
            admin_pb2.CreateWorkKeyRequest(
                work_key=admin_pb2.WorkKey(
                    display_name="bench worker",
                    org_slug=slug,
                    coordinator_ids=[coordinator_id],
                    capabilities=[
                        admin_pb2.WorkKey.READ,
                        admin_pb2.WorkKey.LEASE,
                        admin_pb2.WorkKey.WRITE,
                    ],
                )
            )
        )
    return Tenant(slug, coordinator_id, key.secret)


def task_lane(
    title: str, count: int, worker_class: str = WORKER_CLASS, start: int = 0
) -> lane_pb2.Lane:
    """A CUSTOM lane of ``count`` independent no-op TASK items (at most 100)."""
    lane = lane_pb2.Lane(title=title, template=lane_pb2.Lane.CUSTOM)
    for index in range(start, start + count):
        lane.items.append(
            lane_pb2.Item(
                key=f"t{index}", kind=lane_pb2.Item.TASK, worker_class=worker_class, title="no-op"
            )
        )
    return lane


async def create_items(
    bench_client: WorkcoordClient,
    coordinator_id: str,
    total: int,
    *,
    worker_class: str = WORKER_CLASS,
    per_lane: int = 100,
    concurrency: int = 4,
) -> None:
    """``total`` no-op items in CUSTOM lanes of up to ``per_lane`` items."""
    sizes = [min(per_lane, total - start) for start in range(0, total, per_lane)]
    queue: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
    for index, size in enumerate(sizes):
        queue.put_nowait((index, size))

    async def creator() -> None:
        while not queue.empty():
            index, size = queue.get_nowait()
            await bench_client.lanes.CreateLane(
                lane_pb2.CreateLaneRequest(
                    coordinator_id=coordinator_id,
                    lane=task_lane(f"bench lane {index}", size, worker_class),
                )
            )

    await asyncio.gather(*(creator() for _ in range(concurrency)))


def run_identity(agent: str = "bench") -> lane_pb2.RunIdentity:
    identity = lane_pb2.RunIdentity(
        pid=os.getpid(),
        agent_id=agent,
        engine="bench",
        account="bench",
        hostname=socket.gethostname(),
        worktree_path=str(ROOT),
        branch="bench",
    )
    identity.started_at.FromDatetime(
        datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    )
    return identity


@contextlib.contextmanager
def timer() -> Iterator[list[float]]:
    """``with timer() as t: …`` then ``t[0]`` is the elapsed seconds."""
    out: list[float] = []
    began = time.perf_counter()
    try:
        yield out
    finally:
        out.append(time.perf_counter() - began)
