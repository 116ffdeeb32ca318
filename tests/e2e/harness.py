"""Harness for a running workcoord: coordinator, recovery and gateway as separate processes.

The system fixture is session scoped (one system per xdist worker) and provisions its own
PostgreSQL database (``workcoord_e2e_<worker>_<random>``, dropped at teardown), migrates it with
``workcoord db upgrade``, and starts each service with ``workcoord serve …`` on free loopback
ports. Coordinator and recovery run with ``WORKCOORD_TEST_CLOCK_FILE``, so a test expires
leases by moving that clock (:meth:`System.advance_clock`), never by sleeping. Recovery runs with
a one-hour interval: tests trigger passes explicitly with ``POST …/maintain``.

Teardown sends SIGTERM and requires every process to exit 0 within a few seconds; the logs of a
failed test (or a failed shutdown) are printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import asyncpg
import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

ADMIN_DATABASE_URL = os.environ.get(
    "WORKCOORD_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("WORKCOORD_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

READY_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 10.0
# OffsetFileClock re-reads its file at most every 50 ms; wait a little longer than that.
CLOCK_SETTLE_SECONDS = 0.15

WORKCOORD = [sys.executable, "-m", "workcoord.cli.main"]

_T = TypeVar("_T")


# --------------------------------------------------------------------------- helpers


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_in_thread(function: Callable[[], _T]) -> _T:
    """Run ``function`` in a fresh thread and return its result (keeps ``asyncio.run`` away from
    the thread that owns pytest-asyncio's session loop)."""
    result: list[_T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(function())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


def _asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


def _admin_sql(statement: str) -> None:
    async def run() -> None:
        connection = await asyncpg.connect(_asyncpg_dsn(ADMIN_DATABASE_URL))
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    run_in_thread(lambda: asyncio.run(run()))


def create_database(name: str) -> str:
    """Create database ``name``; its SQLAlchemy URL."""
    _admin_sql(f'CREATE DATABASE "{name}"')
    return _with_database(ADMIN_DATABASE_URL, name)


def drop_database(name: str) -> None:
    """Drop database ``name`` even if a killed process left connections behind."""
    _admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def grpc_serving(address: str, timeout: float = 1.0) -> bool:
    """Whether ``grpc.health.v1`` at ``address`` answers SERVING for the whole server."""
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        except grpc.RpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def http_ready(url: str) -> bool:
    """Whether ``GET url`` answers 200."""
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


# --------------------------------------------------------------------------- processes


@dataclass
class ServiceProcess:
    """One ``workcoord`` command as a child process, its output appended to ``log_path``."""

    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start (or start again) the command; the log file keeps earlier runs' output."""
        with self.log_path.open("ab") as log:
            log.write(f"---- starting {self.name}: {' '.join(self.args)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [*WORKCOORD, *self.args],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def require_alive(self) -> None:
        """Fail (with the log) if the process has exited."""
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(
                f"{self.name} exited with {self.process.returncode}\n{self.log_tail()}"
            )

    def signal(self, signum: int) -> None:
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signum)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int:
        """SIGTERM, then wait up to ``timeout``; the exit code (SIGKILL and -9 on a hang)."""
        if self.process is None:
            return 0
        self.signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -signal.SIGKILL

    def kill(self) -> None:
        """SIGKILL and reap: a crash, no chance to clean up."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def log_tail(self, limit: int = 20_000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return f"(no log for {self.name})"
        return f"==== {self.name} log ({self.log_path}) ====\n{text[-limit:]}"


@dataclass
class System:
    """The three services, their addresses, the bootstrap credentials and the test clock."""

    database_url: str
    gateway_url: str
    coordinator_address: str
    recovery_address: str
    admin_token: str
    service_key: str
    clock_file: Path
    coordinator: ServiceProcess
    recovery: ServiceProcess
    gateway: ServiceProcess
    clock_offset: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def processes(self) -> tuple[ServiceProcess, ...]:
        return (self.coordinator, self.recovery, self.gateway)

    def advance_clock(self, seconds: float) -> None:
        """Move the services' clock forward by ``seconds`` (it never goes back: tests share it)."""
        with self._lock:
            self.clock_offset += seconds
            temporary = self.clock_file.with_suffix(".tmp")
            temporary.write_text(f"{self.clock_offset}\n")
            os.replace(temporary, self.clock_file)
        time.sleep(CLOCK_SETTLE_SECONDS)

    def wait_ready(
        self,
        timeout: float = READY_TIMEOUT_SECONDS,
        only: tuple[ServiceProcess, ...] | None = None,
    ) -> None:
        """Until both gRPC servers answer SERVING and the gateway's ``/readyz`` answers 200
        (or just the ``only`` processes are ready)."""
        deadline = time.monotonic() + timeout
        checks: list[tuple[ServiceProcess, Callable[[], bool]]] = [
            (self.coordinator, lambda: grpc_serving(self.coordinator_address)),
            (self.recovery, lambda: grpc_serving(self.recovery_address)),
            (self.gateway, lambda: http_ready(f"{self.gateway_url}/readyz")),
        ]
        for process, check in checks:
            if only is not None and process not in only:
                continue
            while not check():
                process.require_alive()
                if time.monotonic() > deadline:
                    raise AssertionError(f"{process.name} not ready\n{self.logs()}")
                time.sleep(0.05)

    def logs(self) -> str:
        return "\n".join(process.log_tail() for process in self.processes)

    def log_problems(self) -> list[str]:
        """What no healthy run logs: an unhandled exception anywhere, or recovery reporting its
        leadership lost (nothing else ever competes for it here)."""
        problems = []
        for process in self.processes:
            try:
                text = process.log_path.read_text(errors="replace")
            except FileNotFoundError:
                continue
            if "Traceback" in text:
                problems.append(f"{process.name} logged a traceback")
        recovery_log = self.recovery.log_path.read_text(errors="replace")
        if "leadership lost" in recovery_log:
            problems.append("recovery logged its leadership lost")
        return problems

    def stop_all(self) -> dict[str, int]:
        """SIGTERM gateway → recovery → coordinator (recovery releases leadership through the
        coordinator on its way out); every exit code."""
        return {process.name: process.stop() for process in reversed(self.processes)}


def worker_name() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def service_env(**extra: str) -> dict[str, str]:
    """The test runner's environment without any workcoord setting, plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("WORKCOORD_") and key not in ("DATABASE_URL", "REDIS_URL")
    }
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@contextlib.contextmanager
def rest_client(base_url: str, token: str | None = None) -> Iterator[httpx.Client]:
    """An httpx client for the gateway, sending ``token`` as a bearer credential."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30.0) as client:
        yield client
