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
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from tests.support.databases import admin_database_url, asyncpg_dsn, with_database
from tests.support.processes import (
    READY_TIMEOUT_SECONDS,
    ServiceProcess,
    grpc_serving,
    http_ready,
    run_in_thread,
    service_env,
    wait_ready,
    workcoord_command,
)

# The marks of a module whose tests share the session's system (one xdist worker runs them all).
ON_THE_SYSTEM = [
    pytest.mark.e2e,
    pytest.mark.pg,
    pytest.mark.redis,
    pytest.mark.xdist_group(name="e2e"),
]

__all__ = ["READY_TIMEOUT_SECONDS", "System"]


def _admin_sql(statement: str) -> None:
    async def run() -> None:
        connection = await asyncpg.connect(asyncpg_dsn(admin_database_url()))
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    run_in_thread(lambda: asyncio.run(run()))


def create_database(name: str) -> str:
    """Create database ``name``; its SQLAlchemy URL."""
    _admin_sql(f'CREATE DATABASE "{name}"')
    return with_database(admin_database_url(), name)


def drop_database(name: str) -> None:
    """Drop database ``name`` even if a killed process left connections behind."""
    _admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate_database(database_url: str, timeout: float = 2 * READY_TIMEOUT_SECONDS) -> None:
    """``workcoord db upgrade`` on ``database_url`` (fails with its output)."""
    migrate = subprocess.run(
        [*workcoord_command(), "db", "upgrade", "--database-url", database_url],
        env=service_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr


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

    def today(self) -> str:
        """The services' UTC day (``YYYY-MM-DD``) by their clock, which tests move forward: a
        command that defaults to the caller's own today would name another day near midnight."""
        now = datetime.now(UTC) + timedelta(seconds=self.clock_offset)
        return now.strftime("%Y-%m-%d")

    def advance_clock(self, seconds: float) -> None:
        """Move the services' clock forward by ``seconds`` (it never goes back: tests share it)."""
        with self._lock:
            self.clock_offset += seconds
            temporary = self.clock_file.with_suffix(".tmp")
            temporary.write_text(f"{self.clock_offset}\n")
            # The services' OffsetFileClock reads the file on every reading: the next one anywhere
            # sees the new offset, no settling time needed.
            os.replace(temporary, self.clock_file)

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
            if only is None or process in only:
                wait_ready(check, process, deadline, self.logs)

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
