"""The soak's private deployment: its own PostgreSQL cluster and Redis, and two of each service.

Nothing here touches the machine's own PostgreSQL (5432) or Redis (6379). PostgreSQL is a fresh
``initdb`` cluster in a temporary folder, run with ``pg_ctl`` on a free loopback port (as the
``postgres`` user when this process is root, since ``initdb`` refuses root). Redis is a
``redis-server`` child without persistence on another free port. The services are the real
``workcoord serve …`` commands: coordinators A and B on the one database, gateway i and
recovery i in front of coordinator i.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.common import free_port, service_env, workcoord_command

__all__ = [
    "Deployment",
    "PrivatePostgres",
    "PrivateRedis",
    "Service",
    "free_port",
    "grpc_serving",
    "http_ready",
    "wait_until",
]

READY_TIMEOUT_SECONDS = 300.0
STOP_TIMEOUT_SECONDS = 15.0


def grpc_serving(address: str, timeout: float = 1.0) -> bool:
    """Whether ``grpc.health.v1`` at ``address`` answers SERVING."""
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


async def wait_until(
    check: Callable[[], bool], what: str, within: float = READY_TIMEOUT_SECONDS
) -> float:
    """Poll the blocking ``check`` (in a thread) until it holds; the seconds it took. Raises
    ``TimeoutError`` naming ``what`` after ``within`` seconds."""
    began = time.monotonic()
    while not await asyncio.to_thread(check):
        if time.monotonic() - began > within:
            raise TimeoutError(f"{what} not ready after {within:.0f} s")
        await asyncio.sleep(0.05)
    return time.monotonic() - began


def _postgres_bin() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb`` (or ``$PATH``)."""

    def version(path: str) -> int:
        name = Path(path).parent.parent.name
        return int(name) if name.isdigit() else 0

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path is None:
        raise SystemExit("chaos: no initdb found (install PostgreSQL's server binaries)")
    return Path(on_path).parent


@dataclass
class PrivatePostgres:
    """A throwaway PostgreSQL cluster in ``folder`` on ``port`` (trust auth, user postgres)."""

    folder: Path
    port: int = field(default_factory=free_port)
    bin_dir: Path = field(default_factory=_postgres_bin)

    @property
    def data(self) -> Path:
        return self.folder / "pgdata"

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, timeout: float = 300.0) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            # initdb and pg_ctl refuse root: run them as the postgres user.
            command = ["runuser", "-u", "postgres", "--", *command]
        # Output to a file, never a pipe: the server pg_ctl starts would inherit the pipe and
        # keep it open, and reading it to its end would never return.
        with tempfile.TemporaryFile() as output:
            done = subprocess.run(
                command, stdout=output, stderr=subprocess.STDOUT, timeout=timeout, check=False
            )
            output.seek(0)
            text = output.read().decode(errors="replace")
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{text}")

    def init(self) -> None:
        """``initdb`` and a first start."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            # The postgres user must reach its folder: the scratch folder above it is root's.
            owner = pwd.getpwnam("postgres")
            os.chmod(self.folder.parent, 0o711)
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        self.start()

    @property
    def options(self) -> str:
        # fsync=off: a crash of the server processes (what the soak does) loses nothing the
        # kernel already has; only a machine crash would, and the soak never causes one.
        return (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
            "-c fsync=off -c max_connections=200"
        )

    def start(self) -> None:
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            self.options,
            "-w",
            "-t",
            "180",
            "start",
        )

    def restart_immediate(self) -> None:
        """``pg_ctl restart -m immediate``: every backend dies at once, WAL replay on start."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            self.options,
            "-m",
            "immediate",
            "-w",
            "-t",
            "180",
            "restart",
        )

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    async def create_database(self, name: str) -> str:
        """Create ``name``; its URL."""
        connection = await asyncpg.connect(self.url())
        try:
            await connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            await connection.close()
        return self.url(name)

    def accepting(self) -> bool:
        ready = subprocess.run(
            [str(self.bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"],
            capture_output=True,
            check=False,
        )
        return ready.returncode == 0


@dataclass
class PrivateRedis:
    """A ``redis-server`` child on ``port``, no persistence (a restart loses every key)."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        server = shutil.which("redis-server")
        if server is None:
            raise SystemExit("chaos: redis-server not found")
        with (self.folder / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    server,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.folder),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.kill()

    def answering(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


@dataclass
class Service:
    """One ``workcoord serve <kind>`` child process, its output appended to ``log_path``."""

    name: str
    kind: str
    address: str
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            log.write(f"---- starting {self.name}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [*workcoord_command(), "serve", self.kind],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL and reap: a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait()

    def stop(self) -> int:
        """SIGTERM, then wait; the exit code (-9 after a forced kill)."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()
            return -signal.SIGKILL

    def ready(self) -> bool:
        if self.kind == "gateway":
            return http_ready(f"http://{self.address}/readyz")
        return grpc_serving(self.address)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


@dataclass
class Deployment:
    """PostgreSQL, Redis, and coordinators, gateways and recoveries (two of each)."""

    folder: Path
    postgres: PrivatePostgres
    redis: PrivateRedis
    database_url: str = ""
    admin_token: str = field(default_factory=lambda: "wcadm_" + secrets.token_urlsafe(32))
    service_key: str = field(default_factory=lambda: "wcsvc_" + secrets.token_urlsafe(32))
    services: dict[str, Service] = field(default_factory=dict)

    @classmethod
    def create(cls, folder: Path) -> Deployment:
        return cls(folder, PrivatePostgres(folder / "pg"), PrivateRedis(folder))

    def of_kind(self, kind: str) -> list[Service]:
        return [s for s in self.services.values() if s.kind == kind]

    @property
    def coordinator_addresses(self) -> list[str]:
        return [s.address for s in self.of_kind("coordinator")]

    @property
    def gateway_urls(self) -> list[str]:
        return [f"http://{s.address}" for s in self.of_kind("gateway")]

    async def up(self, replicas: int = 2) -> None:
        """Start PostgreSQL and Redis, migrate, then the services; wait until all are ready."""
        await asyncio.to_thread(self.postgres.init)
        self.redis.start()
        self.database_url = await self.postgres.create_database("workcoord")
        await wait_until(self.redis.answering, "redis")
        migrate = await asyncio.to_thread(
            subprocess.run,
            [*workcoord_command(), "db", "upgrade", "--database-url", self.database_url],
            env=service_env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if migrate.returncode != 0:
            raise RuntimeError(f"migration failed:\n{migrate.stdout}{migrate.stderr}")
        common = {
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis.url,
            "WORKCOORD_BOOTSTRAP_ADMIN_TOKEN": self.admin_token,
            "WORKCOORD_SERVICE_KEY": self.service_key,
            "WORKCOORD_LOG_LEVEL": "WARNING",
        }
        for index in range(replicas):
            letter = chr(ord("a") + index)
            coordinator = f"127.0.0.1:{free_port()}"
            recovery = f"127.0.0.1:{free_port()}"
            gateway = f"127.0.0.1:{free_port()}"
            upstream = {
                "WORKCOORD_COORDINATOR_ADDRESS": coordinator,
                "WORKCOORD_RECOVERY_ADDRESS": recovery,
            }
            self._add(
                f"coordinator-{letter}",
                "coordinator",
                coordinator,
                {**common, "WORKCOORD_LISTEN_COORDINATOR": coordinator},
            )
            self._add(
                f"recovery-{letter}",
                "recovery",
                recovery,
                {
                    **common,
                    **upstream,
                    "WORKCOORD_LISTEN_RECOVERY": recovery,
                    "WORKCOORD_RECOVERY_INTERVAL_SECONDS": "1",
                },
            )
            self._add(
                f"gateway-{letter}",
                "gateway",
                gateway,
                {**common, **upstream, "WORKCOORD_LISTEN_GATEWAY": gateway},
            )
        # Coordinators first (one at a time: the first bootstraps the admin token), then the
        # recoveries (they take leadership through a serving coordinator) and gateways.
        for service in self.of_kind("coordinator"):
            service.start()
            await self.wait_ready(service)
        for service in [*self.of_kind("recovery"), *self.of_kind("gateway")]:
            service.start()
        for service in self.services.values():
            await self.wait_ready(service)

    def _add(self, name: str, kind: str, address: str, env: dict[str, str]) -> None:
        self.services[name] = Service(
            name, kind, address, service_env(**env), self.folder / f"{name}.log"
        )

    async def wait_ready(self, service: Service, within: float = READY_TIMEOUT_SECONDS) -> float:
        """Until ``service`` answers ready; the seconds it took. Fails if it exits."""

        def check() -> bool:
            if not service.alive():
                raise RuntimeError(f"{service.name} exited:\n{service.log_text()[-4000:]}")
            return service.ready()

        return await wait_until(check, service.name, within)

    def stop(self) -> dict[str, int]:
        """SIGTERM gateways, recoveries, then coordinators; their exit codes. Then Redis and
        PostgreSQL."""
        order = [*self.of_kind("gateway"), *self.of_kind("recovery"), *self.of_kind("coordinator")]
        return {service.name: service.stop() for service in order}

    def teardown(self) -> None:
        for service in self.services.values():
            service.kill()
        self.redis.stop()
        self.postgres.stop()
