"""The soak's mixed worker load, and the ledger of every write the system acknowledged.

Creators add small CUSTOM lanes (parallel items, a dependent one, exclusive keys, a fast retry
policy); workers of two classes lease, start, heartbeat, complete or fail, and now and then
abandon a lease so that recovery must expire it. Half the traffic goes over gRPC to the two
coordinators, half over REST to the two gateways. A call that fails transiently (the server
gone, a deadline, a contention abort) is retried on the next endpoint, with the same request id
where the API has one; a call that fails for good is counted by reason. Only calls answered OK
enter the :class:`Ledger`, which the audit then holds against the final state.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import grpc
import httpx
from google.protobuf import json_format
from google.protobuf.message import Message

from workcoord.api.v1 import lane_pb2, policy_pb2, worker_pb2
from workcoord.client.client import WorkcoordClient
from workcoord.client.retries import is_transient
from workcoord.kit.errors import WorkcoordError

__all__ = [
    "CLASSES",
    "Endpoint",
    "GrpcEndpoint",
    "Ledger",
    "Load",
    "RestEndpoint",
]

# Worker classes and their capacities (set on the work coordinator).
CLASSES = {"chaos-a": 3, "chaos-b": 2}
LEASE_SECONDS = 8
CALL_TIMEOUT_SECONDS = 10.0
# How long one intended call keeps being retried across endpoints before it is given up.
CALL_DEADLINE_SECONDS = 30.0
# Creators pause while this many acknowledged items have never been leased.
MAX_BACKLOG = 30
EXCLUSIVE_KEYS = ("repo:alpha", "repo:beta", "repo:gamma")


def retry_policy() -> policy_pb2.RetryPolicy:
    """Quick retries (1 to 2 s apart, three attempts), so a soak sees retried work end: the work
    coordinator's own policy (set by the soak as its admin), since a work key may not create a
    lane with a policy weaker than its work coordinator's."""
    policy = policy_pb2.RetryPolicy(backoff_coefficient=1.0, maximum_attempts=3)
    policy.initial_interval.FromSeconds(1)
    policy.maximum_interval.FromSeconds(2)
    return policy


_TRANSIENT_GRPC = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.CANCELLED,
    }
)
# google.rpc codes: CANCELLED 1, DEADLINE_EXCEEDED 4, ABORTED 10, UNAVAILABLE 14.
_TRANSIENT_CODES = frozenset({1, 4, 10, 14})


class CallFailed(Exception):
    """A call that did not answer OK: ``transient`` (worth retrying elsewhere) or final,
    ``reason`` as the error's reason (``LEASE_LOST``, ``UNAVAILABLE``, …)."""

    def __init__(self, reason: str, transient: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


class Endpoint(Protocol):
    name: str

    async def call(self, rpc: str, request: Message) -> Any: ...

    async def close(self) -> None: ...


# rpc -> (stub attribute, response type, REST path, REST body field or "*", response_body)
_RPCS: dict[str, tuple[str, type[Message], str, str, str]] = {
    "CreateLane": (
        "lanes",
        lane_pb2.CreateLaneResponse,
        "/v1/work-coordinators/{coordinatorId}/lanes",
        "lane",
        "lane",
    ),
    "Lease": (
        "workers",
        worker_pb2.LeaseResponse,
        "/v1/work-coordinators/{coordinatorId}/leases",
        "*",
        "",
    ),
    "Start": (
        "workers",
        worker_pb2.StartResponse,
        "/v1/work-coordinators/{coordinatorId}/leases/{leaseId}/start",
        "*",
        "attempt",
    ),
    "Heartbeat": (
        "workers",
        worker_pb2.HeartbeatResponse,
        "/v1/work-coordinators/{coordinatorId}/leases/{leaseId}/heartbeat",
        "*",
        "",
    ),
    "Complete": (
        "workers",
        worker_pb2.CompleteResponse,
        "/v1/work-coordinators/{coordinatorId}/leases/{leaseId}/complete",
        "*",
        "attempt",
    ),
    "Fail": (
        "workers",
        worker_pb2.FailResponse,
        "/v1/work-coordinators/{coordinatorId}/leases/{leaseId}/fail",
        "*",
        "attempt",
    ),
}


class GrpcEndpoint:
    """A coordinator over gRPC through the client SDK."""

    def __init__(self, address: str, token: str) -> None:
        self.name = f"grpc:{address}"
        self.client = WorkcoordClient(address, token)

    async def call(self, rpc: str, request: Message) -> Any:
        stub = getattr(self.client, _RPCS[rpc][0])
        try:
            return await getattr(stub, rpc)(request, timeout=CALL_TIMEOUT_SECONDS)
        except WorkcoordError as err:
            raise CallFailed(err.reason, is_transient(err)) from None
        except grpc.aio.AioRpcError as err:
            raise CallFailed(err.code().name, err.code() in _TRANSIENT_GRPC) from None
        except (TimeoutError, ConnectionError, OSError) as err:
            raise CallFailed(type(err).__name__, True) from None

    async def close(self) -> None:
        await self.client.close()


class RestEndpoint:
    """A gateway over REST (the proto3 JSON mapping), with the work key's bearer header."""

    def __init__(self, base_url: str, token: str) -> None:
        self.name = f"rest:{base_url}"
        self.http = httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=CALL_TIMEOUT_SECONDS,
        )

    async def call(self, rpc: str, request: Message) -> Any:
        _stub, response_type, template, body_field, response_body = _RPCS[rpc]
        fields = json_format.MessageToDict(request)
        path = template.format(
            **{k: fields.pop(k) for k in ("coordinatorId", "leaseId") if "{" + k + "}" in template}
        )
        params: dict[str, str] = {}
        if body_field == "*":
            body = fields
        else:
            body = fields.pop(body_field, {})
            params = {k: str(v) for k, v in fields.items()}
        try:
            reply = await self.http.post(path, json=body, params=params)
        except httpx.HTTPError as err:
            raise CallFailed(type(err).__name__, True) from None
        if reply.status_code == 200:
            data = reply.json()
            if response_body:
                data = {response_body: data}
            return json_format.ParseDict(data, response_type(), ignore_unknown_fields=True)
        raise _rest_failure(reply)

    async def close(self) -> None:
        await self.http.aclose()


def _rest_failure(reply: httpx.Response) -> CallFailed:
    try:
        status = reply.json()
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    reason = f"HTTP_{reply.status_code}"
    for detail in status.get("details", []) or []:
        if isinstance(detail, dict) and detail.get("reason"):
            reason = str(detail["reason"])
    code = status.get("code")
    transient = reply.status_code in (502, 503, 504) or (
        code in _TRANSIENT_CODES and reason != "LEASE_LOST"
    )
    return CallFailed(reason, transient)


@dataclass
class Ledger:
    """Every write the system answered OK, and every call that failed, by reason."""

    lanes: dict[str, int] = field(default_factory=dict)  # lane id -> items it was created with
    leases: dict[str, str] = field(default_factory=dict)  # lease id -> item id
    started: set[str] = field(default_factory=set)
    heartbeats: dict[str, datetime] = field(default_factory=dict)  # lease -> latest expiry
    completed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    abandoned: set[str] = field(default_factory=set)
    tokens: set[str] = field(default_factory=set)
    acknowledged: Counter[str] = field(default_factory=Counter)  # rpc -> OK answers
    by_transport: Counter[str] = field(default_factory=Counter)  # "grpc" / "rest" -> OK answers
    failures: Counter[str] = field(default_factory=Counter)  # "rpc:reason" -> count
    items_created: int = 0

    def backlog(self) -> int:
        return self.items_created - len(set(self.leases.values()))


class Load:
    """Creators and workers against ``endpoints`` until :meth:`stop`."""

    def __init__(
        self,
        coordinator_id: str,
        grpc_endpoints: list[Endpoint],
        rest_endpoints: list[Endpoint],
        *,
        seed: int = 0,
    ) -> None:
        self.coordinator_id = coordinator_id
        self.grpc = grpc_endpoints
        self.rest = rest_endpoints
        self.ledger = Ledger()
        self.random = random.Random(seed)
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        tasks = [self._creator(0, self.grpc), self._creator(1, self.rest)]
        index = 0
        for cls in CLASSES:
            for transport in (self.grpc, self.grpc, self.rest):
                tasks.append(self._worker(f"chaos-w{index}", cls, transport, index))
                index += 1
        self._tasks = [asyncio.create_task(t) for t in tasks]

    async def stop(self) -> None:
        """Stop leasing; every worker finishes the lease in hand first."""
        self._stopping.set()
        await asyncio.gather(*self._tasks)

    # ------------------------------------------------------------------ calls with retries

    async def _call(self, rpc: str, request: Message, endpoints: list[Endpoint], first: int) -> Any:
        """``rpc`` on ``endpoints[first]``, moving to the next one on each transient failure
        until :data:`CALL_DEADLINE_SECONDS` pass; raises the final :class:`CallFailed`."""
        deadline = time.monotonic() + CALL_DEADLINE_SECONDS
        pause = 0.1
        turn = first
        while True:
            endpoint = endpoints[turn % len(endpoints)]
            try:
                reply = await endpoint.call(rpc, request)
            except CallFailed as failed:
                if not failed.transient or time.monotonic() > deadline:
                    self.ledger.failures[f"{rpc}:{failed.reason}"] += 1
                    raise
                self.ledger.failures[f"{rpc}:{failed.reason} (retried)"] += 1
                turn += 1
                await asyncio.sleep(pause)
                pause = min(1.0, pause * 2)
                continue
            self.ledger.acknowledged[rpc] += 1
            self.ledger.by_transport[endpoint.name.split(":", 1)[0]] += 1
            return reply

    # ------------------------------------------------------------------ creators

    def _lane(self, number: int) -> lane_pb2.Lane:
        pick = self.random
        lane = lane_pb2.Lane(title=f"chaos lane {number}", template=lane_pb2.Lane.CUSTOM)
        lane.retry_policy.CopyFrom(retry_policy())
        lane.items.append(lane_pb2.Item(key="a", kind=lane_pb2.Item.TASK, worker_class="chaos-a"))
        lane.items.append(lane_pb2.Item(key="b", kind=lane_pb2.Item.TASK, worker_class="chaos-b"))
        if pick.random() < 0.6:
            lane.items.append(
                lane_pb2.Item(
                    key="c",
                    kind=lane_pb2.Item.TASK,
                    worker_class=pick.choice(list(CLASSES)),
                    depends_on=["a", "b"],
                    exclusive_key=pick.choice(EXCLUSIVE_KEYS),
                )
            )
        if pick.random() < 0.4:
            lane.items.append(
                lane_pb2.Item(
                    key="d",
                    kind=lane_pb2.Item.TASK,
                    worker_class="chaos-b",
                    exclusive_key=pick.choice(EXCLUSIVE_KEYS),
                )
            )
        return lane

    async def _creator(self, number: int, endpoints: list[Endpoint]) -> None:
        made = 0
        while not self._stopping.is_set():
            if self.ledger.backlog() >= MAX_BACKLOG:
                await self._pause(0.2)
                continue
            lane = self._lane(number * 100_000 + made)
            request = lane_pb2.CreateLaneRequest(
                coordinator_id=self.coordinator_id, lane=lane, request_id=secrets.token_hex(16)
            )
            made += 1
            try:
                reply = await self._call("CreateLane", request, endpoints, made)
            except CallFailed:
                continue
            self.ledger.lanes[reply.lane.lane_id] = len(lane.items)
            self.ledger.items_created += len(lane.items)
            await self._pause(self.random.uniform(0.2, 0.6))

    # ------------------------------------------------------------------ workers

    async def _worker(
        self, worker_id: str, cls: str, endpoints: list[Endpoint], first: int
    ) -> None:
        while not self._stopping.is_set():
            request = worker_pb2.LeaseRequest(
                coordinator_id=self.coordinator_id,
                worker_id=worker_id,
                worker_class=cls,
                max_items=self.random.choice((1, 1, 2)),
                lease_seconds=LEASE_SECONDS,
                wait_seconds=2,
                request_id=secrets.token_hex(16),
            )
            started_at_lease = self.random.random() < 0.3
            if started_at_lease:
                request.run_identity.CopyFrom(_identity(worker_id))
            try:
                reply = await self._call("Lease", request, endpoints, first)
            except CallFailed:
                await self._pause(0.2)
                continue
            for lease in reply.leases:
                self.ledger.leases[lease.lease_id] = lease.item.item_id
                self.ledger.tokens.add(lease.lease_token)
                if started_at_lease:
                    self.ledger.started.add(lease.lease_id)
            for lease in reply.leases:
                await self._work(worker_id, lease, endpoints, first, started_at_lease)

    async def _work(
        self,
        worker_id: str,
        lease: worker_pb2.Lease,
        endpoints: list[Endpoint],
        first: int,
        started: bool,
    ) -> None:
        pick = self.random
        fate = pick.random()
        if fate < 0.1:
            self.ledger.abandoned.add(lease.lease_id)
            return
        ids: dict[str, Any] = {
            "coordinator_id": self.coordinator_id,
            "lease_id": lease.lease_id,
            "lease_token": lease.lease_token,
        }
        try:
            if not started:
                await self._call(
                    "Start",
                    worker_pb2.StartRequest(**ids, run_identity=_identity(worker_id)),
                    endpoints,
                    first,
                )
                self.ledger.started.add(lease.lease_id)
            for beat in range(pick.choice((0, 0, 1, 2))):
                await asyncio.sleep(pick.uniform(0.2, 0.8))
                reply = await self._call(
                    "Heartbeat",
                    worker_pb2.HeartbeatRequest(**ids, progress=f"step {beat}"),
                    endpoints,
                    first,
                )
                expiry = reply.lease_expire_time.ToDatetime().replace(tzinfo=None)
                previous = self.ledger.heartbeats.get(lease.lease_id)
                if previous is None or expiry > previous:
                    self.ledger.heartbeats[lease.lease_id] = expiry
            await asyncio.sleep(pick.uniform(0.05, 0.4))
            if fate < 0.3:
                failure = lane_pb2.ErrorInfo(message="chaos says no", type="chaos", retryable=True)
                await self._call(
                    "Fail", worker_pb2.FailRequest(**ids, error=failure), endpoints, first
                )
                self.ledger.failed.add(lease.lease_id)
            else:
                evidence = lane_pb2.Evidence(summary="done under chaos")
                await self._call(
                    "Complete",
                    worker_pb2.CompleteRequest(**ids, evidence=evidence),
                    endpoints,
                    first,
                )
                self.ledger.completed.add(lease.lease_id)
        except CallFailed:
            return

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds`` or until the load stops (load pacing, not a readiness wait)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)


def _identity(worker_id: str) -> lane_pb2.RunIdentity:
    identity = lane_pb2.RunIdentity(
        pid=4242,
        agent_id=worker_id,
        engine="chaos",
        account="chaos",
        hostname="chaos-host",
        worktree_path="/tmp/chaos",
        branch="chaos",
    )
    identity.started_at.FromDatetime(datetime.now(UTC) - timedelta(seconds=5))
    return identity
