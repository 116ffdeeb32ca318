"""Services as separate OS processes (``workcoord serve …``), for contention and e2e tests."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

__all__ = ["ServiceProcess", "free_port", "start_service", "workcoord_command"]


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def workcoord_command() -> list[str]:
    """The ``workcoord`` CLI of this environment."""
    script = Path(sys.executable).with_name("workcoord")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "workcoord.cli.main"]


@dataclass
class ServiceProcess:
    """A started service; :meth:`stop` ends it (SIGTERM, then SIGKILL) by its own pid."""

    name: str
    address: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_serving(self, limit_seconds: float = 60.0) -> None:
        """Wait until gRPC health answers SERVING (or fail with the process log)."""
        deadline = time.monotonic() + limit_seconds
        async with grpc.aio.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"{self.name} exited with {self.process.returncode}:\n{self.log()}"
                    )
                try:
                    reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.aio.AioRpcError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{self.name} not SERVING after {limit_seconds}s:\n{self.log()}"
                    )
                await asyncio.sleep(0.1)

    async def stop(self, grace: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                await asyncio.to_thread(self.process.wait, grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                await asyncio.to_thread(self.process.wait, grace)


def start_service(
    name: str, args: list[str], env: Mapping[str, str], address: str, log_dir: Path
) -> ServiceProcess:
    """Start ``workcoord <args>`` with ``env`` added to this environment; output to a log file."""
    log_path = log_dir / f"{name}.log"
    full_env = {**os.environ, **env}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*workcoord_command(), *args],
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    return ServiceProcess(name=name, address=address, process=process, log_path=log_path)
