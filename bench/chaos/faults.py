"""Faults, and how long the system takes to answer again after each.

A fault is one of: ``kill -9`` of a coordinator, gateway or recovery process and its restart
(as a process supervisor would), ``kill -9`` of Redis and its restart (no persistence: every
stream is gone), or ``pg_ctl restart -m immediate`` of PostgreSQL (every backend dies, WAL replay
on start). A recovery fault always hits the replica that holds the recovery leadership at that
moment (as each replica reports it, ``GetRecoveryStatus``): killing the follower would test
nothing. After each, the system counts as answering again when every process is up and healthy,
a recovery replica leads, a write (a one-item probe lane) succeeds through each coordinator, and
a read (the coordinator's view) succeeds through each gateway; the time from the fault to that
moment is the fault's recovery time.

A supervisor task restarts any service that exits without being told to, and counts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass
from typing import Any

import grpc.aio
import httpx

from bench.chaos.cluster import Deployment, Service, grpc_serving, http_ready
from bench.chaos.load import CallFailed, Endpoint, Ledger
from workcoord.api.v1 import lane_pb2, recovery_pb2
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import WorkcoordError

__all__ = ["FAULT_CYCLE", "RECOVERY_LEADER", "REQUIRED_KINDS", "FaultRecord", "Faults"]

# The recovery target: whichever replica leads when the fault comes.
RECOVERY_LEADER = "recovery-leader"
# The order faults are injected in; the first five cover every kind.
FAULT_CYCLE = (
    ("coordinator", "coordinator-a"),
    ("gateway", "gateway-b"),
    ("recovery", RECOVERY_LEADER),
    ("redis", "redis"),
    ("postgres", "postgres"),
    ("coordinator", "coordinator-b"),
    ("gateway", "gateway-a"),
    ("recovery", RECOVERY_LEADER),
)
REQUIRED_KINDS = len({kind for kind, _ in FAULT_CYCLE})
RECOVERY_TIMEOUT_SECONDS = 420.0
PROBE_CLASS = "chaos-probe"


@dataclass
class FaultRecord:
    kind: str
    target: str
    at_seconds: float  # since the soak began
    recovery_seconds: float | None  # None: it never answered again in time
    leader: bool = False  # the target held the recovery leadership when it was killed

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            **({"leader": True} if self.leader else {}),
            "at_s": round(self.at_seconds, 2),
            "recovery_s": (
                None if self.recovery_seconds is None else round(self.recovery_seconds, 2)
            ),
        }


class Faults:
    """Injects faults into ``deployment`` and probes it; probe writes enter ``ledger``."""

    def __init__(
        self,
        deployment: Deployment,
        coordinator_id: str,
        work_key: str,
        grpc_endpoints: list[Endpoint],
        ledger: Ledger,
    ) -> None:
        self.deployment = deployment
        self.coordinator_id = coordinator_id
        self.grpc = grpc_endpoints
        self.ledger = ledger
        self.http = httpx.AsyncClient(headers={"Authorization": f"Bearer {work_key}"}, timeout=5.0)
        self.records: list[FaultRecord] = []
        self.unexpected_exits: list[str] = []
        self._restarting: set[str] = set()
        self._recovery_clients: dict[str, WorkcoordClient] = {}
        self._began = time.monotonic()

    def begin(self) -> None:
        self._began = time.monotonic()

    async def inject(self, kind: str, target: str) -> FaultRecord:
        """Inject one fault, then wait until the system answers again."""
        at = time.monotonic() - self._began
        began = time.monotonic()
        leader = False
        if target == RECOVERY_LEADER:
            target = await self._recovery_leader()
            leader = True
        self._restarting.add(target)
        try:
            if kind == "redis":
                self.deployment.redis.kill()
                self.deployment.redis.start()
            elif kind == "postgres":
                await asyncio.to_thread(self.deployment.postgres.restart_immediate)
            else:
                service = self.deployment.services[target]
                service.kill()
                service.start()
        finally:
            self._restarting.discard(target)
        recovered: float | None = None
        while time.monotonic() - began < RECOVERY_TIMEOUT_SECONDS:
            if await self.answering():
                recovered = time.monotonic() - began
                break
            await asyncio.sleep(0.1)
        record = FaultRecord(kind, target, at, recovered, leader)
        self.records.append(record)
        return record

    async def supervise(self, stop: asyncio.Event) -> None:
        """Restart any service that exited on its own (as Kubernetes would), until ``stop``."""
        while not stop.is_set():
            for service in self.deployment.services.values():
                if service.name not in self._restarting and not service.alive():
                    code = service.process.returncode if service.process else None
                    self.unexpected_exits.append(f"{service.name} (exit {code})")
                    service.start()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)

    async def answering(self) -> bool:
        """Every process healthy, a write through each coordinator, a read through each
        gateway."""
        services = list(self.deployment.services.values())
        if not all(s.alive() for s in services) or not self.deployment.redis.answering():
            return False
        if not all(await asyncio.gather(*(asyncio.to_thread(_healthy, s) for s in services))):
            return False
        if await self._leading_recovery() is None:
            return False
        for index, endpoint in enumerate(self.grpc):
            if not await self._probe_write(endpoint, index):
                return False
        view = f"/v1/work-coordinators/{self.coordinator_id}/view"
        for url in self.deployment.gateway_urls:
            try:
                reply = await self.http.get(url + view)
            except httpx.HTTPError:
                return False
            if reply.status_code != 200:
                return False
        return True

    async def _recovery_leader(self) -> str:
        """The recovery replica that leads now, waiting (generously) until one does: after an
        earlier fault the leadership may still be passing between them."""
        began = time.monotonic()
        while time.monotonic() - began < RECOVERY_TIMEOUT_SECONDS:
            name = await self._leading_recovery()
            if name is not None:
                return name
            await asyncio.sleep(0.2)
        raise RuntimeError("no recovery replica took the leadership")

    async def _leading_recovery(self) -> str | None:
        """The name of the recovery replica reporting that it leads, if one does."""
        for service in self.deployment.of_kind("recovery"):
            status = await self._recovery_status(service)
            if status is not None and status.leader:
                return service.name
        return None

    async def _recovery_status(self, service: Service) -> recovery_pb2.RecoveryStatus | None:
        client = self._recovery_clients.get(service.name)
        if client is None:
            # The platform admin may read a replica's status (the work key may not).
            client = WorkcoordClient(
                self.deployment.coordinator_addresses[0],
                self.deployment.admin_token,
                recovery_address=service.address,
            )
            self._recovery_clients[service.name] = client
        try:
            reply = await client.recovery.GetRecoveryStatus(
                recovery_pb2.GetRecoveryStatusRequest(), timeout=5.0
            )
        except (WorkcoordError, grpc.aio.AioRpcError, TimeoutError, OSError):
            return None  # down, restarting, or its coordinator is
        status: recovery_pb2.RecoveryStatus = reply.status
        return status

    async def _probe_write(self, endpoint: Endpoint, index: int) -> bool:
        lane = lane_pb2.Lane(title=f"probe via {index}", template=lane_pb2.Lane.CUSTOM)
        lane.items.append(lane_pb2.Item(key="p", kind=lane_pb2.Item.TASK, worker_class=PROBE_CLASS))
        request = lane_pb2.CreateLaneRequest(
            coordinator_id=self.coordinator_id, lane=lane, request_id=secrets.token_hex(16)
        )
        try:
            reply = await endpoint.call("CreateLane", request)
        except CallFailed as failed:
            self.ledger.failures[f"probe:{failed.reason}"] += 1
            return False
        self.ledger.acknowledged["CreateLane"] += 1
        self.ledger.by_transport["grpc"] += 1
        self.ledger.lanes[reply.lane.lane_id] = 1
        return True

    async def close(self) -> None:
        await self.http.aclose()
        for client in self._recovery_clients.values():
            await client.close()


def _healthy(service: Service) -> bool:
    if service.kind == "gateway":
        return http_ready(f"http://{service.address}/readyz")
    return grpc_serving(service.address)
