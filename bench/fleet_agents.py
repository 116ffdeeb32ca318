"""B8's agents, in processes of their own: a lean keep-alive HTTP/1.1 client and the agents'
loop (lease, heartbeat, complete), driven by :mod:`bench.b8_fleet` over a pipe.

Why not ``httpx``: profiled in B8 (py-spy, 500 agents), one ``httpx.AsyncClient`` kept the
bench's event loop 100 % busy at about 60 requests a second — its connection pool scans every
queued request against every connection on each assignment, and ``sniffio`` looks up the async
library through the import machinery on every call — so heartbeats waited seconds in the
client while the gateway and the coordinator were nearly idle. This client holds a fixed set of
connections, hands them out through a queue and parses only what the gateway sends (a status
line, ``Content-Length`` or chunked bodies), so a request costs the client a few tens of
microseconds. Several agent processes each drive a share of the agents, so one event loop's
scheduling is not part of every agent's latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from bench import common

WORKER_CLASS = "fleet"
REQUEST_TIMEOUT_SECONDS = 30.0


def usage_for(agent: int, beat: int) -> dict[str, Any] | None:
    """The usage an agent reports with its heartbeat (running totals of its attempt, which may
    only grow: they grow with the agent's heartbeat count). The one place a heartbeat body gets
    its usage; return None to send heartbeats without usage."""
    return {
        "inputTokens": str(1000 * (beat + 1)),
        "outputTokens": str(200 * (beat + 1)),
        "costMicros": str(50 * (beat + 1)),
        "model": f"b8-model-{agent % 3}",
    }


class HttpError(OSError):
    """The connection broke or the answer could not be read."""


class _Connection:
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.usable = True

    async def request(self, head: bytes, body: bytes) -> tuple[int, bytes]:
        self.writer.write(head + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        status = int(raw[9:12])
        length: int | None = None
        chunked = False
        for line in raw.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection" and b"close" in value.lower():
                self.usable = False
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await self.reader.readexactly(size + 2))
                if size == 0:
                    break
            return status, b"".join(p[:-2] for p in parts)
        if length is None:
            self.usable = False
            return status, await self.reader.read()
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.usable = False
        self.writer.close()


class HttpPool:
    """Up to ``size`` keep-alive connections to one server, handed out first come first served."""

    def __init__(self, host: str, port: int, size: int) -> None:
        self.host = host
        self.port = port
        self.size = size
        self.opened = 0
        self.idle: asyncio.Queue[_Connection] = asyncio.Queue()

    async def post(self, path: str, token: str, document: dict[str, Any]) -> tuple[int, bytes]:
        body = json.dumps(document, separators=(",", ":")).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        connection, reused = await self._acquire()
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
                try:
                    answer = await connection.request(head, body)
                except (ConnectionError, asyncio.IncompleteReadError) as error:
                    partial = getattr(error, "partial", b"")
                    if not reused or partial:
                        raise
                    # The server closed a keep-alive connection that sat idle (uvicorn after
                    # 5 s), before reading this request: send it again on a new connection,
                    # as HTTP clients do.
                    connection.close()
                    connection = await self._open()
                    answer = await connection.request(head, body)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError) as e:
            connection.close()
            self.opened -= 1
            raise HttpError(f"{type(e).__name__}: {e}") from e
        if connection.usable:
            self.idle.put_nowait(connection)
        else:
            connection.close()
            self.opened -= 1
        return answer

    async def _acquire(self) -> tuple[_Connection, bool]:
        """A connection, and whether it served a request before."""
        if not self.idle.empty():
            return self.idle.get_nowait(), True
        if self.opened < self.size:
            self.opened += 1
            try:
                return await self._open(), False
            except OSError as error:
                self.opened -= 1
                raise HttpError(str(error)) from error
        return await self.idle.get(), True

    async def _open(self) -> _Connection:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        return _Connection(reader, writer)

    async def close(self) -> None:
        while not self.idle.empty():
            self.idle.get_nowait().close()


@dataclass(frozen=True)
class Plan:
    """What one agent process drives (sent over the pipe; plain data)."""

    host: str
    port: int
    tenants: list[tuple[str, str]]  # (coordinator id, work key secret)
    agents: list[int]  # global agent numbers
    agents_per_coordinator: int
    connections: int
    lease_seconds: int
    heartbeat_seconds: float
    completes_per_second: float  # this process's share
    started_at: str
    seed: int
    usage: bool = True  # heartbeats carry usage (usage_for)


@dataclass
class Lease:
    lease_id: str
    token: str
    confirmed_at: float  # when the last answered Lease or heartbeat of it was sent


@dataclass
class Agents:
    """The agents of one process: the pool, the counters."""

    plan: Plan
    http: HttpPool
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    measuring: bool = False
    heartbeat_ms: list[float] = field(default_factory=list)
    answered: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    first_errors: dict[str, str] = field(default_factory=dict)
    lost_in_time: int = 0
    lost_late: int = 0
    no_work: int = 0

    def _route(self, agent: int, path: str) -> tuple[str, str]:
        coordinator_id, secret = self.plan.tenants[agent // self.plan.agents_per_coordinator]
        return f"/v1/work-coordinators/{coordinator_id}{path}", secret

    async def post(self, agent: int, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        url, secret = self._route(agent, path)
        return await self.http.post(url, secret, body)

    async def lease(self, agent: int) -> Lease | None:
        body = {
            "workerId": f"agent-{agent}",
            "workerClass": WORKER_CLASS,
            "maxItems": 1,
            "leaseSeconds": self.plan.lease_seconds,
            "waitSeconds": 0,
            # A run identity starts the lease at once (RUNNING), so it can be completed.
            "runIdentity": {
                "pid": 1000 + agent,
                "agentId": f"agent-{agent}",
                "engine": "bench",
                "account": "bench",
                "hostname": "b8",
                "worktreePath": f"/srv/b8/{agent}",
                "branch": "b8",
                "startedAt": self.plan.started_at,
            },
        }
        sent = time.monotonic()
        status, text = await self.post(agent, "/leases", body)
        if status != 200:
            self._error("lease", status, text)
            return None
        leases = json.loads(text).get("leases", [])
        if not leases:
            self.no_work += 1
            return None
        self.answered["lease"] += 1
        return Lease(leases[0]["leaseId"], leases[0]["leaseToken"], sent)

    async def heartbeat(self, agent: int, lease: Lease, beat: int) -> bool:
        """One heartbeat; False when the lease is gone."""
        body: dict[str, Any] = {"leaseToken": lease.token, "progress": f"beat {beat}"}
        usage = usage_for(agent, beat) if self.plan.usage else None
        if usage is not None:
            body["usage"] = usage
        sent = time.monotonic()
        status, text = await self.post(agent, f"/leases/{lease.lease_id}/heartbeat", body)
        elapsed = (time.monotonic() - sent) * 1000
        if status == 200:
            if self.measuring:
                self.heartbeat_ms.append(elapsed)
            self.answered["heartbeat"] += 1
            lease.confirmed_at = sent
            return True
        return not self._lost_or_error("heartbeat", status, text, lease, sent)

    async def complete(self, agent: int, lease: Lease) -> None:
        body = {"leaseToken": lease.token, "evidence": {"summary": "b8 no-op"}}
        sent = time.monotonic()
        status, text = await self.post(agent, f"/leases/{lease.lease_id}/complete", body)
        if status == 200:
            self.answered["complete"] += 1
        else:
            self._lost_or_error("complete", status, text, lease, sent)

    def _lost_or_error(
        self, call: str, status: int, text: bytes, lease: Lease, sent: float
    ) -> bool:
        """Count a refused write; True when it said the lease is lost."""
        if status == 409 and b"LEASE_LOST" in text:
            if sent - lease.confirmed_at < self.plan.lease_seconds:
                self.lost_in_time += 1
            else:
                self.lost_late += 1
            return True
        self._error(call, status, text)
        return False

    def _error(self, call: str, status: int, text: bytes) -> None:
        kind = f"{call} {status}"
        self.first_errors.setdefault(kind, text[:300].decode(errors="replace"))
        self.errors[kind] += 1


async def _agent(
    agents: Agents, index: int, first: asyncio.Future[Lease | None], complete_now: asyncio.Event
) -> None:
    """Heartbeat the lease every interval from the moment it is granted (the ramp lasts longer
    than a lease); on ``complete_now`` complete it and lease the next."""
    lease = await first
    interval = agents.plan.heartbeat_seconds
    loop = asyncio.get_running_loop()
    next_beat = loop.time() + random.uniform(0, interval)
    beat = 0
    while not agents.stop.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(next_beat):
                await complete_now.wait()
        if agents.stop.is_set():
            return
        try:
            if complete_now.is_set():
                complete_now.clear()
                if lease is not None:
                    await agents.complete(index, lease)
                lease = await agents.lease(index)
                next_beat = loop.time() + interval
                continue
            next_beat += interval
            beat += 1
            if lease is None:
                lease = await agents.lease(index)
            elif not await agents.heartbeat(index, lease, beat):
                lease = None
        except HttpError as error:
            agents.errors[f"{type(error).__name__} {error}"[:80]] += 1


async def _completer(agents: Agents, signals: list[asyncio.Event]) -> None:
    """Ask this process's share of ``completes_per_second`` agents a second, round robin."""
    rate = agents.plan.completes_per_second
    if rate <= 0:
        return
    loop = asyncio.get_running_loop()
    order = list(range(len(signals)))
    random.shuffle(order)
    at = loop.time()
    turn = 0
    while not agents.stop.is_set():
        at += 1.0 / rate
        await asyncio.sleep(max(0.0, at - loop.time()))
        signals[order[turn % len(order)]].set()
        turn += 1


async def _drive(plan: Plan, pipe: Connection) -> None:
    random.seed(plan.seed)
    http = HttpPool(plan.host, plan.port, plan.connections)
    agents = Agents(plan, http)
    loop = asyncio.get_running_loop()
    ramp_slots = asyncio.Semaphore(plan.connections)

    async def first_lease(index: int) -> Lease | None:
        async with ramp_slots:
            try:
                return await agents.lease(index)
            except HttpError as error:
                agents.errors[f"ramp {type(error).__name__}"] += 1
                return None

    ramp = time.perf_counter()
    firsts = {i: asyncio.ensure_future(first_lease(i)) for i in plan.agents}
    signals = {i: asyncio.Event() for i in plan.agents}
    tasks = [asyncio.create_task(_agent(agents, i, firsts[i], signals[i])) for i in plan.agents]
    held = sum(1 for lease in await asyncio.gather(*firsts.values()) if lease is not None)
    pipe.send({"held": held, "ramp_seconds": time.perf_counter() - ramp})

    await loop.run_in_executor(None, pipe.recv)  # "measure"
    cpu = common.cpu_seconds(os.getpid())
    agents.measuring = True
    lost_before = agents.lost_in_time
    tasks.append(asyncio.create_task(_completer(agents, list(signals.values()))))
    await loop.run_in_executor(None, pipe.recv)  # "stop"
    agents.measuring = False
    agents.stop.set()
    for signal in signals.values():
        signal.set()
    await asyncio.gather(*tasks)
    await http.close()
    pipe.send(
        {
            "heartbeat_ms": agents.heartbeat_ms,
            "answered": dict(agents.answered),
            "errors": dict(agents.errors),
            "first_errors": agents.first_errors,
            "lost_in_time": agents.lost_in_time - lost_before,
            "lost_in_time_during_ramp": lost_before,
            "lost_late": agents.lost_late,
            "no_work": agents.no_work,
            "cpu_seconds": common.cpu_seconds(os.getpid()) - cpu,
        }
    )


def run_agents(plan: Plan, pipe: Connection) -> None:
    """The body of one agent process: ramp, report the leases held, wait for "measure", run
    until "stop", send the counts."""
    asyncio.run(_drive(plan, pipe))
