"""Harness for ``workcoord worker run`` as a real process: where it connects (the services on
PostgreSQL, or ``workcoord dev``), its JSON lines read as they come, and the reports the
supervised command leaves behind."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tests.support.processes import (
    STOP_TIMEOUT_SECONDS,
    free_port,
    http_ready,
    service_env,
    workcoord_command,
)

from .harness import System

COMMAND = [sys.executable, str(Path(__file__).with_name("supervised_command.py"))]
WAIT_SECONDS = 120.0
_POLL_SECONDS = 0.05

JSON = dict[str, Any]
OUTCOME_EVENTS = {"completed", "failed", "checkpointed", "released", "refused", "lease_lost"}
_T = TypeVar("_T")


@dataclass
class Target:
    """A running workcoord: its gateway, the coordinator's gRPC address, the admin token, and
    how to move its clock forward."""

    name: str
    gateway_url: str
    coordinator_address: str
    admin_token: str
    advance_clock: Callable[[float], None]


def services_target(system: System) -> Target:
    """The services on PostgreSQL that the end-to-end session started, as a target."""
    return Target(
        "services",
        system.gateway_url,
        system.coordinator_address,
        system.admin_token,
        system.advance_clock,
    )


@dataclass
class DevTarget:
    """``workcoord dev`` started with a test clock file and a known admin token."""

    directory: Path
    process: subprocess.Popen[bytes] | None = None
    offset: float = 0.0
    token: str = "wcadm_supervisor-tests-" + os.urandom(16).hex()
    ports: tuple[int, int, int] = field(
        default_factory=lambda: (free_port(), free_port(), free_port())
    )

    @property
    def clock_file(self) -> Path:
        return self.directory / "clock-offset"

    @property
    def log_path(self) -> Path:
        return self.directory / "dev.log"

    def start(self) -> Target:
        self.clock_file.write_text("0\n")
        coordinator, recovery, gateway = self.ports
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    *workcoord_command(),
                    "dev",
                    "--state-dir",
                    str(self.directory / "state"),
                    "--coordinator-port",
                    str(coordinator),
                    "--recovery-port",
                    str(recovery),
                    "--gateway-port",
                    str(gateway),
                ],
                env=service_env(
                    WORKCOORD_TEST_CLOCK_FILE=str(self.clock_file),
                    WORKCOORD_BOOTSTRAP_ADMIN_TOKEN=self.token,
                ),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        gateway_url = f"http://127.0.0.1:{gateway}"
        deadline = time.monotonic() + WAIT_SECONDS
        while not http_ready(f"{gateway_url}/readyz"):
            assert self.process.poll() is None, self.log()
            assert time.monotonic() < deadline, f"workcoord dev not ready\n{self.log()}"
            time.sleep(_POLL_SECONDS)
        return Target("dev", gateway_url, f"127.0.0.1:{coordinator}", self.token, self.advance)

    def advance(self, seconds: float) -> None:
        self.offset += seconds
        temporary = self.clock_file.with_suffix(".tmp")
        temporary.write_text(f"{self.offset}\n")
        os.replace(temporary, self.clock_file)  # seen by the service's next clock reading

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -signal.SIGKILL

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-20_000:]


@dataclass
class SupervisorProcess:
    """A running ``workcoord worker run --json``; its lines parsed as they arrive."""

    process: subprocess.Popen[str]
    stderr_path: Path
    events: list[JSON] = field(default_factory=list)
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_for(self, event: str, timeout: float = WAIT_SECONDS, **fields: object) -> JSON:
        """The first line (seen before or arriving now) of ``event`` with these ``fields``."""

        def found() -> JSON | None:
            for seen in self.events:
                if seen["event"] == event and all(seen.get(k) == v for k, v in fields.items()):
                    return seen
            return None

        return self.wait_until(found, f"{event} {fields}", timeout)

    def outcomes(self) -> list[JSON]:
        """The lines that ended an item, so far."""
        return [e for e in self.events if e["event"] in OUTCOME_EVENTS]

    def wait_for_outcomes(self, count: int, timeout: float = WAIT_SECONDS) -> list[JSON]:
        """Until ``count`` items have ended; their lines."""
        return self.wait_until(
            lambda: self.outcomes() if len(self.outcomes()) >= count else None,
            f"{count} outcomes",
            timeout,
        )

    def wait_until(self, check: Callable[[], _T | None], what: str, timeout: float) -> _T:
        """Read lines until ``check()`` answers something."""
        deadline = time.monotonic() + timeout
        while (answer := check()) is None:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {what} in time\n{self.output()}"
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            assert line is not None, f"the supervisor ended before {what}\n{self.output()}"
            self.events.append(json.loads(line))
        return answer

    def wait_exit(self, timeout: float = WAIT_SECONDS) -> int:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the supervisor did not exit\n{self.output()}") from None
        while (line := self._lines.get(timeout=timeout)) is not None:
            self.events.append(json.loads(line))
        return code

    def kinds(self) -> list[str]:
        return [event["event"] for event in self.events]

    def output(self) -> str:
        lines = "\n".join(json.dumps(event) for event in self.events)
        return f"{lines}\n---- stderr\n{self.stderr_path.read_text(errors='replace')[-10_000:]}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start_supervisor(
    target: Target,
    key: str,
    coordinator_id: str,
    worker_class: str,
    cwd: Path,
    report_dir: Path,
    *args: str,
    roots: list[str] | None = None,
    lease_seconds: int = 15,
    command: list[str] | None = None,
) -> SupervisorProcess:
    """``workcoord worker run --json`` for ``worker_class`` in ``cwd``, running the command of
    :mod:`.supervised_command` (which reports into ``report_dir``)."""
    env = service_env(
        WORKCOORD_ADDRESS=target.coordinator_address,
        WORKCOORD_TOKEN=key,
        WORKCOORD_AGENT_ID="agent-7",
        WORKCOORD_AGENT_ENGINE="shell",
        WORKCOORD_AGENT_ACCOUNT="fleet-bot",
        REPORT_DIR=str(report_dir),
    )
    if roots is not None:
        env["WORKCOORD_WORKER_REPOSITORY_ROOTS"] = json.dumps(roots)
    stderr_path = report_dir / f"supervisor-{worker_class}-{time.monotonic_ns()}.stderr"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [
                *workcoord_command(),
                "worker",
                "run",
                "--json",
                "--coordinator",
                coordinator_id,
                "--class",
                worker_class,
                "--lease-seconds",
                str(lease_seconds),
                "--wait-seconds",
                "10",
                "--kill-grace",
                "2",
                *args,
                "--",
                *(command or COMMAND),
            ],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
    return SupervisorProcess(process, stderr_path)


def git_checkout(path: Path, branch: str) -> Path:
    """A git repository at ``path`` (created) on ``branch``, with one commit; canonical."""
    path.mkdir(parents=True, exist_ok=True)
    for args in (
        ["init", "-q", "-b", branch],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    return Path(os.path.realpath(path))


def wait_for_report(report_dir: Path, item_id: str, attempt: int = 1) -> JSON:
    """What the command reported for ``item_id`` (waits for it to be written)."""
    path = report_dir / f"{item_id}-{attempt}.json"
    deadline = time.monotonic() + WAIT_SECONDS
    while not path.exists():
        assert time.monotonic() < deadline, f"no report {path.name}"
        time.sleep(_POLL_SECONDS)
    document: JSON = json.loads(path.read_text())
    return document


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def reports(report_dir: Path) -> Iterator[Path]:
    return (path for path in report_dir.glob("*.json") if not path.name.startswith("."))
