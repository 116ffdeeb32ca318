"""Harness for two cells behind one gateway (docs/cells.md).

Each cell is its own PostgreSQL database (``workcoord_e2e_cell_<name>_<worker>_<random>``,
migrated with ``workcoord db upgrade``), its own coordinator and recovery process; the two
share the test Redis (coordinator ids are unique across cells, so their notification channels
never meet). One gateway process is started with ``WORKCOORD_CELLS`` naming both and
``WORKCOORD_CELL_DIRECTORY_URL`` a third database of its own. Every database is dropped at
the end; every process must exit 0 and log no traceback.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.databases import redis_url, xdist_worker
from tests.support.processes import (
    READY_TIMEOUT_SECONDS,
    ServiceProcess,
    free_port,
    grpc_serving,
    http_ready,
    service_env,
    wait_ready,
)

from .harness import create_database, drop_database, migrate_database

__all__ = ["Cell", "CellsSystem", "running_cells"]


@dataclass
class Cell:
    """One cell: its database and its two services."""

    name: str
    database_url: str
    coordinator_address: str
    recovery_address: str
    coordinator: ServiceProcess
    recovery: ServiceProcess


@dataclass
class CellsSystem:
    """Two (or more) cells and the gateway routing between them."""

    cells: list[Cell]
    directory_url: str
    gateway_url: str
    gateway: ServiceProcess
    admin_token: str

    @property
    def processes(self) -> list[ServiceProcess]:
        found = [self.gateway]
        for cell in self.cells:
            found += [cell.recovery, cell.coordinator]
        return found

    def logs(self) -> str:
        return "\n".join(process.log_tail() for process in self.processes)


@contextmanager
def running_cells(directory: Path, names: tuple[str, ...] = ("a", "b")) -> Iterator[CellsSystem]:
    """Start the cells named ``names`` and one gateway in front of them; stop and drop all."""
    run = f"{xdist_worker()}_{secrets.token_hex(4)}"
    admin_token = "wcadm_" + secrets.token_urlsafe(32)
    service_key = "wcsvc_" + secrets.token_urlsafe(32)
    databases: list[str] = []
    processes: list[ServiceProcess] = []
    try:
        directory_name = f"workcoord_e2e_cells_dir_{run}"
        directory_url = create_database(directory_name)
        databases.append(directory_name)
        cells: list[Cell] = []
        for name in names:
            database = f"workcoord_e2e_cell_{name}_{run}"
            database_url = create_database(database)
            databases.append(database)
            migrate_database(database_url)
            coordinator_address = f"127.0.0.1:{free_port()}"
            recovery_address = f"127.0.0.1:{free_port()}"
            env = service_env(
                DATABASE_URL=database_url,
                REDIS_URL=redis_url(),
                WORKCOORD_BOOTSTRAP_ADMIN_TOKEN=admin_token,
                WORKCOORD_SERVICE_KEY=service_key,
                WORKCOORD_LISTEN_COORDINATOR=coordinator_address,
                WORKCOORD_LISTEN_RECOVERY=recovery_address,
                WORKCOORD_COORDINATOR_ADDRESS=coordinator_address,
                WORKCOORD_RECOVERY_INTERVAL_SECONDS="3600",
            )
            cell = Cell(
                name=name,
                database_url=database_url,
                coordinator_address=coordinator_address,
                recovery_address=recovery_address,
                coordinator=ServiceProcess(
                    f"coordinator-{name}",
                    ["serve", "coordinator"],
                    env,
                    directory / f"coordinator-{name}.log",
                ),
                recovery=ServiceProcess(
                    f"recovery-{name}",
                    ["serve", "recovery"],
                    env,
                    directory / f"recovery-{name}.log",
                ),
            )
            cells.append(cell)
        gateway_address = f"127.0.0.1:{free_port()}"
        gateway = ServiceProcess(
            "gateway",
            ["serve", "gateway"],
            service_env(
                WORKCOORD_LISTEN_GATEWAY=gateway_address,
                WORKCOORD_CELLS=",".join(
                    f"{c.name}={c.coordinator_address}/{c.recovery_address}" for c in cells
                ),
                WORKCOORD_CELL_DIRECTORY_URL=directory_url,
            ),
            directory / "gateway.log",
        )
        system = CellsSystem(
            cells=cells,
            directory_url=directory_url,
            gateway_url=f"http://{gateway_address}",
            gateway=gateway,
            admin_token=admin_token,
        )
        processes.extend(system.processes)
        _start_all(system)
        yield system
        problems = [
            f"{process.name} logged a traceback"
            for process in system.processes
            if process.log_path.exists()
            and "Traceback" in process.log_path.read_text(errors="replace")
        ]
        exits = {process.name: process.stop() for process in system.processes}
        unclean = {name: code for name, code in exits.items() if code != 0}
        assert not unclean, f"unclean shutdown (exit codes {unclean})\n{system.logs()}"
        assert not problems, f"{problems}\n{system.logs()}"
    finally:
        for process in processes:
            if process.alive():
                process.stop()
        for database in databases:
            drop_database(database)


def _start_all(system: CellsSystem) -> None:
    # Recovery takes leadership on its first tick (one-hour interval): after its coordinator.
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    for cell in system.cells:
        cell.coordinator.start()
    for cell in system.cells:
        wait_ready(
            functools.partial(grpc_serving, cell.coordinator_address),
            cell.coordinator,
            deadline,
            system.logs,
        )
    for cell in system.cells:
        cell.recovery.start()
    system.gateway.start()
    for cell in system.cells:
        wait_ready(
            functools.partial(grpc_serving, cell.recovery_address),
            cell.recovery,
            deadline,
            system.logs,
        )
    wait_ready(
        lambda: http_ready(f"{system.gateway_url}/readyz"), system.gateway, deadline, system.logs
    )
