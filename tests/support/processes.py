"""Services as separate OS processes (``workcoord …``), for the contention and end-to-end tests:
free ports, a clean environment, readiness checks and a process handle that stops by its pid.

Waits here are event-driven and generous: a readiness wait returns the moment its check holds
(or fails the moment the process exits), a stop returns the moment the process exits. Their
limits only bound a hang, so they are set for a machine loaded far beyond normal (start-up is
mostly imports and a migration, which a busy 2-core machine can stretch to minutes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

from workcoord.kit.startup import free_port

__all__ = [
    "READY_TIMEOUT_SECONDS",
    "STOP_TIMEOUT_SECONDS",
    "WAIT_SECONDS",
    "ServiceProcess",
    "free_port",
    "grpc_serving",
    "http_ready",
    "run_in_thread",
    "service_env",
    "wait_ready",
    "workcoord_command",
]

READY_TIMEOUT_SECONDS = 300.0
"""Until a started service must be ready (a hang guard, not a performance bound)."""
STOP_TIMEOUT_SECONDS = 120.0
"""Until a signalled service must have exited cleanly, before SIGKILL counts it unclean."""
WAIT_SECONDS = 120.0
"""Until anything a test waits for must have happened (a hang guard)."""
_POLL_SECONDS = 0.05

_T = TypeVar("_T")


def workcoord_command() -> list[str]:
    """The ``workcoord`` CLI of this environment."""
    script = Path(sys.executable).with_name("workcoord")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "workcoord.cli.main"]


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
                [*workcoord_command(), *self.args],
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

    def wait_exit(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the process to exit; whether it has."""
        if self.process is None:
            return True
        try:
            self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

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


def wait_ready(
    check: Callable[[], bool],
    process: ServiceProcess,
    deadline: float,
    logs: Callable[[], str] | None = None,
) -> None:
    """Poll ``check`` until it holds; fail at once if ``process`` exits, or with ``logs()`` (by
    default the process's own log) once ``time.monotonic()`` passes ``deadline``."""
    while not check():
        process.require_alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"{process.name} not ready\n{(logs or process.log_tail)()}")
        process.wait_exit(_POLL_SECONDS)  # wakes at once if the process exits meanwhile
