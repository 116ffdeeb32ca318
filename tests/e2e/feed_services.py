"""The live feed's system for end-to-end tests: PostgreSQL, a private Redis, coordinators and
gateways as separate processes (``workcoord serve …``), each gateway in front of its own
coordinator.

The Redis here is a ``redis-server`` of the requesting test module on a free port, so stopping
it never touches the shared one. ``feed_system`` is a module-scoped fixture: a test module
registers it (``feed_system = feed_services.feed_system``) and gets a system of its own.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.databases import xdist_worker
from tests.support.processes import (
    ServiceProcess,
    free_port,
    grpc_serving,
    http_ready,
    service_env,
    wait_ready,
)

from .harness import READY_TIMEOUT_SECONDS, create_database, drop_database, migrate_database

PING_SECONDS = 0.5
POLL_SECONDS = 0.5


@dataclass
class PrivateRedis:
    """A ``redis-server`` of one test module, without persistence."""

    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None, "redis-server is required for the feed's end-to-end tests"
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while not self.ping():
            assert time.monotonic() < deadline, "private redis-server did not start"
            time.sleep(0.05)

    def ping(self) -> bool:
        answer = subprocess.run(
            ["redis-cli", "-p", str(self.port), "ping"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return answer.stdout.strip() == "PONG"

    def shutdown(self) -> None:
        subprocess.run(
            ["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
            capture_output=True,
            timeout=5,
            check=False,
        )
        if self.process is not None:
            self.process.wait(10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.shutdown()


@dataclass
class FeedSystem:
    database_url: str
    admin_token: str
    redis: PrivateRedis
    coordinators: list[ServiceProcess]
    coordinator_addresses: list[str]
    gateways: list[ServiceProcess]
    gateway_urls: list[str]
    processes: list[ServiceProcess] = field(default_factory=list)

    def logs(self) -> str:
        return "\n".join(p.log_tail() for p in self.processes)


@pytest.fixture(scope="module")
def feed_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FeedSystem]:
    with run_feed_system(tmp_path_factory.mktemp("e2e-feed")) as system:
        yield system


@contextlib.contextmanager
def run_feed_system(
    directory: Path, *, replicas: int = 2, with_recovery: bool = False
) -> Iterator[FeedSystem]:
    """A fresh database and private Redis, ``replicas`` coordinators each with its gateway
    (and a recovery service if asked); everything stopped and dropped afterwards."""
    name = f"workcoord_feed_{xdist_worker()}_{secrets.token_hex(4)}"
    database_url = create_database(name)
    redis = PrivateRedis(free_port(), directory)
    redis.start()
    system: FeedSystem | None = None
    try:
        migrate_database(database_url)
        admin_token = "wcadm_" + secrets.token_urlsafe(32)
        service_key = "wcsvc_" + secrets.token_urlsafe(32)
        coordinator_addresses = [f"127.0.0.1:{free_port()}" for _ in range(replicas)]
        gateway_addresses = [f"127.0.0.1:{free_port()}" for _ in range(replicas)]
        recovery_address = f"127.0.0.1:{free_port()}"
        coordinators = [
            ServiceProcess(
                name=f"coordinator-{n}",
                args=["serve", "coordinator"],
                env=service_env(
                    DATABASE_URL=database_url,
                    REDIS_URL=redis.url,
                    WORKCOORD_LISTEN_COORDINATOR=address,
                    WORKCOORD_SERVICE_KEY=service_key,
                    WORKCOORD_FEED_PING_SECONDS=str(PING_SECONDS),
                    WORKCOORD_FEED_POLL_SECONDS=str(POLL_SECONDS),
                ),
                log_path=directory / f"coordinator-{n}.log",
            )
            for n, address in enumerate(coordinator_addresses)
        ]
        # Only coordinator 0 bootstraps the admin (two at once could race on it).
        coordinators[0].env["WORKCOORD_BOOTSTRAP_ADMIN_TOKEN"] = admin_token
        gateways = [
            ServiceProcess(
                name=f"gateway-{n}",
                args=["serve", "gateway"],
                env=service_env(
                    WORKCOORD_LISTEN_GATEWAY=gateway,
                    WORKCOORD_COORDINATOR_ADDRESS=upstream,
                    WORKCOORD_RECOVERY_ADDRESS=recovery_address if with_recovery else upstream,
                ),
                log_path=directory / f"gateway-{n}.log",
            )
            for n, (gateway, upstream) in enumerate(
                zip(gateway_addresses, coordinator_addresses, strict=True)
            )
        ]
        recovery = (
            [
                ServiceProcess(
                    name="recovery",
                    args=["serve", "recovery"],
                    env=service_env(
                        WORKCOORD_LISTEN_RECOVERY=recovery_address,
                        WORKCOORD_COORDINATOR_ADDRESS=coordinator_addresses[0],
                        WORKCOORD_SERVICE_KEY=service_key,
                        WORKCOORD_RECOVERY_INTERVAL_SECONDS="3600",
                    ),
                    log_path=directory / "recovery.log",
                )
            ]
            if with_recovery
            else []
        )
        system = FeedSystem(
            database_url=database_url,
            admin_token=admin_token,
            redis=redis,
            coordinators=coordinators,
            coordinator_addresses=coordinator_addresses,
            gateways=gateways,
            gateway_urls=[f"http://{a}" for a in gateway_addresses],
            processes=[*coordinators, *recovery, *gateways],
        )
        # All at once: imports dominate start-up.
        for process in system.processes:
            process.start()
        for process, address in zip(coordinators, coordinator_addresses, strict=True):
            _wait(functools.partial(grpc_serving, address), process, system)
        for process in recovery:
            _wait(functools.partial(grpc_serving, recovery_address), process, system)
        for process, url in zip(gateways, system.gateway_urls, strict=True):
            _wait(functools.partial(http_ready, f"{url}/readyz"), process, system)
        yield system
    finally:
        exits = {}
        if system is not None:
            exits = {p.name: p.stop() for p in reversed(system.processes)}
        redis.stop()
        drop_database(name)
        unclean = {n: c for n, c in exits.items() if c != 0}
        assert not unclean, f"unclean shutdown {unclean}\n{system.logs() if system else ''}"


def _wait(check: Callable[[], bool], process: ServiceProcess, system: FeedSystem) -> None:
    wait_ready(check, process, time.monotonic() + READY_TIMEOUT_SECONDS, system.logs)
