"""REST heartbeats in flight together go upstream as one BatchHeartbeat (``heartbeats.py``).

A small grpc.aio server stands in for the coordinator: its BatchHeartbeat answers each entry from
the entry (a token starting ``lost`` is LEASE_LOST, as the coordinator answers it) and can hold
its calls until released, so the heartbeats that arrive meanwhile queue in the gateway. Its
single Heartbeat answers the same way, so each case compares with the single call's answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
import pytest_asyncio
from google.protobuf import timestamp_pb2
from google.rpc import status_pb2

from tests.unit.gateway.conftest import gateway_settings
from workcoord.api.v1 import worker_pb2, worker_pb2_grpc
from workcoord.gateway.app import build_app
from workcoord.gateway.heartbeats import MAX_IN_FLIGHT
from workcoord.gateway.upstream import Upstreams
from workcoord.kit import errors
from workcoord.kit.status import abort_with, to_rpc_status

Context = grpc.aio.ServicerContext[Any, Any]

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXPIRY = timestamp_pb2.Timestamp(seconds=1_800_000_000)


def _refusal(request: worker_pb2.HeartbeatRequest) -> errors.WorkcoordError | None:
    return errors.LeaseLost("expired") if request.lease_token.startswith("lost") else None


@dataclass
class Coordinator(worker_pb2_grpc.WorkerServiceServicer):
    """Heartbeat and (unless ``batches`` is False) BatchHeartbeat, recording each call's
    entries and credential; ``gate`` holds the calls while it is clear."""

    batches: bool = True
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    calls: list[tuple[str, list[str], str]] = field(default_factory=list)
    """(method, lease ids, authorization) of each call, in arrival order."""
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    def __post_init__(self) -> None:
        self.gate.set()

    async def _arrive(self, method: str, leases: list[str], context: Context) -> None:
        authorization = dict(context.invocation_metadata() or ()).get("authorization", "")
        async with self.arrived:
            self.calls.append((method, leases, str(authorization)))
            self.arrived.notify_all()
        await self.gate.wait()

    async def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: Context
    ) -> worker_pb2.HeartbeatResponse:
        await self._arrive("Heartbeat", [request.lease_id], context)
        refusal = _refusal(request)
        if refusal is not None:
            await abort_with(context, refusal)
        return worker_pb2.HeartbeatResponse(lease_expire_time=EXPIRY)

    async def BatchHeartbeat(
        self, request: worker_pb2.BatchHeartbeatRequest, context: Context
    ) -> worker_pb2.BatchHeartbeatResponse:
        if not self.batches:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        await self._arrive("BatchHeartbeat", [r.lease_id for r in request.requests], context)
        if request.requests[0].lease_token == "deny-all":
            await abort_with(context, errors.PermissionDenied())
        results = []
        for entry in request.requests:
            refusal = _refusal(entry)
            result = worker_pb2.BatchHeartbeatResult(lease_id=entry.lease_id)
            if refusal is None:
                result.status.CopyFrom(status_pb2.Status(code=0))
                result.lease_expire_time.CopyFrom(EXPIRY)
            else:
                result.status.CopyFrom(to_rpc_status(refusal))
            results.append(result)
        return worker_pb2.BatchHeartbeatResponse(results=results)

    async def calls_made(self, count: int) -> None:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.calls) >= count), 30)


@dataclass
class Served:
    coordinator: Coordinator
    upstreams: Upstreams
    http: httpx.AsyncClient

    async def hold(self) -> list[asyncio.Task[httpx.Response]]:
        """Clear the gate and send heartbeats one by one until every batch a queue may have
        upstream is held there; returns them."""
        self.coordinator.gate.clear()
        held = []
        for i in range(MAX_IN_FLIGHT):
            held.append(_heartbeat(self.http, f"ls-held-{i}"))
            await self.coordinator.calls_made(i + 1)
        return held

    async def queued(self, count: int) -> None:
        """Wait (30 s at most) until ``count`` heartbeats wait in the gateway's queues."""
        async with asyncio.timeout(30):
            while self.upstreams.coalesced().waiting() < count:  # noqa: ASYNC110 - no event for it
                await asyncio.sleep(0.005)


async def _serve(coordinator: Coordinator) -> AsyncIterator[Served]:
    server = grpc.aio.server()
    worker_pb2_grpc.add_WorkerServiceServicer_to_server(coordinator, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    upstreams = Upstreams(coordinator=channel, recovery=channel)
    app = build_app(gateway_settings(f"127.0.0.1:{port}"), upstreams)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
            yield Served(coordinator, upstreams, http)
    finally:
        await upstreams.close()
        await channel.close()
        await server.stop(grace=None)


@pytest_asyncio.fixture(loop_scope="module")
async def served() -> AsyncIterator[Served]:
    async for found in _serve(Coordinator()):  # type: ignore[abstract]
        yield found


@pytest_asyncio.fixture(loop_scope="module")
async def single_only() -> AsyncIterator[Served]:
    async for found in _serve(Coordinator(batches=False)):  # type: ignore[abstract]
        yield found


def _heartbeat(
    http: httpx.AsyncClient, lease: str, *, token: str = "tok", key: str = "wck_a"
) -> asyncio.Task[httpx.Response]:
    path = f"/v1/work-coordinators/wc1/leases/{lease}/heartbeat"
    call = http.post(path, json={"leaseToken": token}, headers={"Authorization": f"Bearer {key}"})
    return asyncio.ensure_future(call)


async def test_heartbeats_that_arrive_while_batches_are_upstream_go_as_one(
    served: Served,
) -> None:
    coordinator = served.coordinator
    first = await served.hold()  # each went alone, and is held upstream
    queued = [_heartbeat(served.http, f"ls-q{i}") for i in range(10)]
    await served.queued(10)
    coordinator.gate.set()
    answers = await asyncio.gather(*first, *queued)
    assert [r.status_code for r in answers] == [200] * (MAX_IN_FLIGHT + 10)
    assert all(r.json()["leaseExpireTime"] == "2027-01-15T08:00:00Z" for r in answers)
    sizes = [len(leases) for method, leases, _ in coordinator.calls]
    assert {method for method, _, _ in coordinator.calls} == {"BatchHeartbeat"}
    assert sizes[:MAX_IN_FLIGHT] == [1] * MAX_IN_FLIGHT
    assert sum(sizes) == MAX_IN_FLIGHT + 10
    assert sizes[MAX_IN_FLIGHT] == 10  # the queued ten went together
    coordinator.calls.clear()


async def test_each_entry_gets_the_answer_its_single_call_gets(
    served: Served, single_only: Served
) -> None:
    answers = {}
    for target in (served, single_only):
        tasks = [_heartbeat(target.http, "ls-ok"), _heartbeat(target.http, "ls-x", token="lost")]
        answers[target.coordinator.batches] = await asyncio.gather(*tasks)
    batched, single = answers[True], answers[False]
    assert [r.status_code for r in batched] == [r.status_code for r in single] == [200, 409]
    assert [r.json() for r in batched] == [r.json() for r in single]
    assert batched[1].json()["details"][0]["reason"] == "LEASE_LOST"
    # The coordinator without BatchHeartbeat got single calls (after one refused batch).
    assert {method for method, _, _ in single_only.coordinator.calls} == {"Heartbeat"}
    for target in (served, single_only):
        target.coordinator.calls.clear()


async def test_credentials_never_share_a_batch_and_a_lease_never_repeats_in_one(
    served: Served,
) -> None:
    coordinator = served.coordinator
    held = await served.hold()
    tasks = [
        _heartbeat(served.http, "ls-1", key="wck_a"),
        _heartbeat(served.http, "ls-1", key="wck_a"),  # the same lease again
        _heartbeat(served.http, "ls-3", key="wck_a"),
        _heartbeat(served.http, "ls-2", key="wck_b"),
    ]
    await coordinator.calls_made(MAX_IN_FLIGHT + 1)  # wck_b's queue is idle: it goes at once
    await served.queued(3)
    coordinator.gate.set()
    answers = await asyncio.gather(*held, *tasks)
    assert all(r.status_code == 200 for r in answers)
    for _, leases, authorization in coordinator.calls:
        assert len(leases) == len(set(leases))
        assert ("ls-2" in leases) == (authorization == "Bearer wck_b")
    assert sum(leases.count("ls-1") for _, leases, _ in coordinator.calls) == 2
    assert ["ls-1", "ls-3"] in [leases for _, leases, _ in coordinator.calls]
    coordinator.calls.clear()


async def test_a_refused_call_is_every_members_answer(served: Served) -> None:
    coordinator = served.coordinator
    held = await served.hold()
    refused = [_heartbeat(served.http, "ls-d", token="deny-all"), _heartbeat(served.http, "ls-e")]
    await served.queued(2)
    coordinator.gate.set()
    assert all(r.status_code == 200 for r in await asyncio.gather(*held))
    answers = await asyncio.gather(*refused)
    assert coordinator.calls[-1][1] == ["ls-d", "ls-e"]
    coordinator.calls.clear()
    for answer in answers:
        assert answer.status_code == 403
        assert answer.json()["details"][0]["reason"] == "PERMISSION_DENIED"
