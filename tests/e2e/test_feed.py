"""The live feed end to end: PostgreSQL, a private Redis, two coordinators and two gateways as
separate processes (``workcoord serve …``), WebSocket clients on the gateways.

Gateway 1 talks to coordinator A, gateway 2 to coordinator B; every write goes through gateway
1, so gateway 2's subscribers hear of it only through Redis (or the backstop poll when Redis is
down). The Redis here is a ``redis-server`` of this module on a free port, so stopping it never
touches the shared one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.support.databases import asyncpg_dsn, xdist_worker
from tests.support.processes import (
    ServiceProcess,
    free_port,
    grpc_serving,
    http_ready,
    run_in_thread,
    service_env,
    wait_ready,
)
from tests.support.rest import JSON, bearer, ok

from .harness import READY_TIMEOUT_SECONDS, create_database, drop_database, migrate_database

pytestmark = [pytest.mark.xdist_group(name="e2e-feed"), pytest.mark.pg, pytest.mark.redis]

_T = TypeVar("_T")
PING_SECONDS = 0.5
POLL_SECONDS = 0.5
WAIT_SECONDS = 120.0  # a hang guard: every wait below returns as soon as its condition holds


# --------------------------------------------------------------------------- the system


@dataclass
class PrivateRedis:
    """A ``redis-server`` of this test module, without persistence."""

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


# --------------------------------------------------------------------------- a tenant


@dataclass
class Tenant:
    system: FeedSystem
    cid: str
    key_id: str
    key: str
    rest: httpx.Client

    def call(
        self, method: str, path: str, body: JSON | None = None, token: str | None = None
    ) -> JSON:
        headers = bearer(token or self.key)
        return ok(self.rest.request(method, path, json=body, headers=headers))

    def lane(self, *keys: str, **extra: Any) -> JSON:
        items = [{"key": k, "kind": "TASK", "workerClass": "machine", **extra} for k in keys]
        return self.call(
            "POST",
            f"/v1/work-coordinators/{self.cid}/lanes",
            {"title": "feed", "template": "CUSTOM", "items": items},
        )

    def revision(self) -> int:
        body = self.call("GET", f"/v1/work-coordinators/{self.cid}/events?pageSize=1")
        return int(body["revision"])

    def events_after(self, revision: int) -> list[JSON]:
        out: list[JSON] = []
        token = ""
        while True:
            body = self.call(
                "GET",
                f"/v1/work-coordinators/{self.cid}/events"
                f"?sinceRevision={revision}&pageSize=500&pageToken={token}",
            )
            out.extend(body.get("events", []))
            token = body.get("nextPageToken", "")
            if not token:
                return out


@pytest.fixture
def tenant(feed_system: FeedSystem) -> Iterator[Tenant]:
    with httpx.Client(base_url=feed_system.gateway_urls[0], timeout=30) as rest:
        admin = feed_system.admin_token
        slug = f"feed-{secrets.token_hex(4)}"
        headers = bearer(admin)
        ok(rest.post("/v1/orgs", json={"slug": slug, "displayName": "Feed"}, headers=headers))
        wc = ok(
            rest.post(
                "/v1/work-coordinators",
                json={
                    "scope": "ORG",
                    "digestOwner": "ops@acme.test",
                    "orgSlug": slug,
                    "displayName": "feed",
                },
                headers=headers,
            )
        )
        cid = wc["coordinatorId"]
        key = ok(
            rest.post(
                "/v1/work-keys",
                json={
                    "displayName": "feed",
                    "orgSlug": slug,
                    "coordinatorIds": [cid],
                    "capabilities": ["READ", "LEASE", "WRITE"],
                },
                headers=headers,
            )
        )
        yield Tenant(feed_system, cid, key["keyId"], key["secret"], rest)


# --------------------------------------------------------------------------- a WebSocket


class Socket:
    """One WebSocket subscriber: frames as parsed JSON (and raw text), the close code."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.frames: list[JSON] = []
        self.texts: list[str] = []
        self.close_code: int | None = None
        self.close_reason = ""
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def open(
        cls,
        base_url: str,
        cid: str,
        token: str | None,
        since: int | None = None,
        cookie: str | None = None,
    ) -> Socket:
        url = base_url.replace("http://", "ws://") + f"/v1/work-coordinators/{cid}/ws"
        if since is not None:
            url += f"?since={since}"
        headers = {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if cookie is not None:
            # As a browser on the gateway's own page sends it (cookie feeds must match it).
            headers["Cookie"] = f"workcoord_session={cookie}"
            headers["Origin"] = base_url.rstrip("/")
        connection = await connect(url, additional_headers=headers, open_timeout=10)
        return cls(connection)

    async def _read(self) -> None:
        try:
            async for text in self.connection:
                assert isinstance(text, str)
                self.texts.append(text)
                self.frames.append(json.loads(text))
                self._changed.set()
        except ConnectionClosed:
            pass
        finally:
            self.close_code = self.connection.close_code or 1006
            self.close_reason = self.connection.close_reason or ""
            self._changed.set()

    async def until(
        self, condition: Callable[[Socket], bool], within: float = WAIT_SECONDS
    ) -> None:
        async with asyncio.timeout(within):
            while not condition(self):
                if self.close_code is not None:
                    raise AssertionError(
                        f"closed {self.close_code} {self.close_reason!r} before the condition"
                    )
                self._changed.clear()
                await self._changed.wait()

    async def until_closed(self, within: float = WAIT_SECONDS) -> int:
        async with asyncio.timeout(within):
            while self.close_code is None:
                self._changed.clear()
                await self._changed.wait()
        return self.close_code

    def kinds(self) -> list[str]:
        return [f["type"] for f in self.frames]

    def delivered(self) -> int:
        revision = -1
        for f in self.frames:
            if f["type"] == "snapshot":
                revision = int(f["revision"])
            elif f["type"] == "delta":
                revision = int(f["toRevision"])
            elif f["type"] == "hello" and revision < 0:
                revision = int(f.get("resumeFrom", 0))
        return revision

    async def until_revision(self, revision: int, within: float = WAIT_SECONDS) -> None:
        await self.until(lambda s: s.delivered() >= revision, within)

    def events(self) -> list[JSON]:
        """Every delta's events, checking each continues exactly where the last left off."""
        out: list[JSON] = []
        at: int | None = None
        for f in self.frames:
            if f["type"] == "hello" and at is None:
                at = int(f.get("resumeFrom", 0))
            elif f["type"] == "snapshot":
                at = int(f["revision"])
            elif f["type"] == "delta":
                assert at is not None and int(f["fromRevision"]) == at + 1, (f, at)
                revisions = [int(e["revision"]) for e in f["events"]]
                assert revisions == list(range(at + 1, int(f["toRevision"]) + 1)), f
                out.extend(f["events"])
                at = int(f["toRevision"])
        return out

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.connection.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def in_thread(function: Callable[[], _T]) -> _T:
    """Blocking REST calls off the event loop (the sockets keep reading meanwhile)."""
    return await asyncio.to_thread(function)


# --------------------------------------------------------------------------- tests


async def test_hello_then_snapshot_as_json_frames(tenant: Tenant) -> None:
    await in_thread(lambda: tenant.lane("a", "b"))
    revision = await in_thread(tenant.revision)
    view = await in_thread(
        lambda: tenant.call("GET", f"/v1/work-coordinators/{tenant.cid}/view?pageSize=500")
    )
    socket = await Socket.open(tenant.system.gateway_urls[0], tenant.cid, tenant.key)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        hello, snapshot = socket.frames[0], socket.frames[1]
        assert hello == {
            "type": "hello",
            "coordinatorId": tenant.cid,
            "revision": str(revision),
            "pingSeconds": 1,
            "resumeFrom": str(revision),
        }
        assert snapshot["type"] == "snapshot" and snapshot["revision"] == str(revision)
        assert snapshot["view"] == view
        await socket.until(lambda s: "ping" in s.kinds())
        assert {"type": "ping", "revision": str(revision)} in socket.frames
    finally:
        await socket.close()


async def test_resuming_with_since_gets_exactly_the_missed_events(tenant: Tenant) -> None:
    gateway = tenant.system.gateway_urls[0]
    socket = await Socket.open(gateway, tenant.cid, tenant.key)
    await in_thread(lambda: tenant.lane("a"))
    await socket.until_revision(await in_thread(tenant.revision))
    last = socket.delivered()
    await socket.close()
    # Missed while disconnected:
    await in_thread(lambda: tenant.lane("b", "c"))
    await in_thread(lambda: tenant.lane("d"))
    missed = await in_thread(lambda: tenant.events_after(last))
    assert missed
    resumed = await Socket.open(gateway, tenant.cid, tenant.key, since=last)
    try:
        current = await in_thread(tenant.revision)
        await resumed.until_revision(current)
        assert resumed.frames[0]["resumeFrom"] == str(last)
        assert "snapshot" not in resumed.kinds()
        assert resumed.events() == missed
    finally:
        await resumed.close()


async def test_two_gateway_replicas_deliver_identical_streams(tenant: Tenant) -> None:
    since = await in_thread(tenant.revision)
    sockets = [
        await Socket.open(url, tenant.cid, tenant.key, since=since)
        for url in tenant.system.gateway_urls
    ]
    try:
        for n in range(5):
            await in_thread(functools.partial(tenant.lane, f"r{n}", f"s{n}"))
        current = await in_thread(tenant.revision)
        for socket in sockets:
            await socket.until_revision(current)
        expected = await in_thread(lambda: tenant.events_after(since))
        assert sockets[0].events() == sockets[1].events() == expected
    finally:
        for socket in sockets:
            await socket.close()


async def test_a_subscriber_across_a_redis_restart_sees_no_gap(tenant: Tenant) -> None:
    redis = tenant.system.redis
    since = await in_thread(tenant.revision)
    # Gateway 2 → coordinator B, which hears of gateway 1's writes only via Redis or the poll.
    socket = await Socket.open(tenant.system.gateway_urls[1], tenant.cid, tenant.key, since=since)
    try:
        await in_thread(lambda: tenant.lane("before"))
        await socket.until_revision(await in_thread(tenant.revision))
        await in_thread(redis.shutdown)
        try:
            for n in range(3):
                await in_thread(functools.partial(tenant.lane, f"down{n}"))
            current = await in_thread(tenant.revision)
            # Only the backstop poll can deliver these.
            await socket.until_revision(current, within=POLL_SECONDS * 4 + 10)
        finally:
            await in_thread(redis.start)
        for n in range(3):
            await in_thread(functools.partial(tenant.lane, f"up{n}"))
        current = await in_thread(tenant.revision)
        await socket.until_revision(current, within=POLL_SECONDS * 4 + 10)
        assert socket.events() == await in_thread(lambda: tenant.events_after(since))
        assert socket.close_code is None
    finally:
        await socket.close()


async def test_a_since_older_than_the_retained_events_gets_a_snapshot(tenant: Tenant) -> None:
    for n in range(3):
        await in_thread(functools.partial(tenant.lane, f"old{n}"))
    revision = await in_thread(tenant.revision)
    # Retention: the oldest events are gone from the log.
    await _prune_events(tenant.system.database_url, tenant.cid, below=revision - 2)
    socket = await Socket.open(tenant.system.gateway_urls[0], tenant.cid, tenant.key, since=1)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        assert socket.kinds()[:3] == ["hello", "resync", "snapshot"]
        assert socket.frames[1] == {"type": "resync", "reason": "GAP", "revision": str(revision)}
        assert socket.frames[2]["revision"] == str(revision)
        # …and live from the snapshot on.
        await in_thread(lambda: tenant.lane("new"))
        current = await in_thread(tenant.revision)
        await socket.until_revision(current)
        assert socket.events() == await in_thread(lambda: tenant.events_after(revision))
    finally:
        await socket.close()


async def _prune_events(database_url: str, cid: str, below: int) -> None:
    dsn = asyncpg_dsn(database_url)

    async def prune() -> None:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(
                "DELETE FROM events WHERE coordinator_id = $1 AND revision < $2", cid, below
            )
        finally:
            await connection.close()

    await asyncio.to_thread(run_in_thread, lambda: asyncio.run(prune()))


async def test_revoking_the_credential_closes_the_socket_with_1008(tenant: Tenant) -> None:
    socket = await Socket.open(tenant.system.gateway_urls[1], tenant.cid, tenant.key)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        await in_thread(
            lambda: tenant.call(
                "POST", f"/v1/work-keys/{tenant.key_id}/revoke", {}, token=tenant.system.admin_token
            )
        )
        assert await socket.until_closed() == 1008
        assert "UNAUTHENTICATED" in socket.close_reason
    finally:
        await socket.close()


@pytest.mark.parametrize(
    ("token", "cid_of"),
    [(None, "own"), ("wck_unknown", "own"), ("key", "missing")],
    ids=["no-credential", "unknown-credential", "unknown-coordinator"],
)
async def test_who_may_not_read_is_closed_with_1008(
    tenant: Tenant, token: str | None, cid_of: str
) -> None:
    cid = tenant.cid if cid_of == "own" else "wc_doesnotexist"
    socket = await Socket.open(
        tenant.system.gateway_urls[0], cid, tenant.key if token == "key" else token
    )
    try:
        assert await socket.until_closed() == 1008
        assert socket.frames == []
    finally:
        await socket.close()


async def test_a_session_cookie_is_forwarded_as_the_credential(tenant: Tenant) -> None:
    """The cookie reaches the coordinator as ``x-workcoord-session``; an unknown session is
    refused like any unknown credential (1008), and nothing is sent before that."""
    socket = await Socket.open(
        tenant.system.gateway_urls[0], tenant.cid, None, cookie=secrets.token_urlsafe(24)
    )
    try:
        assert await socket.until_closed() == 1008
        assert socket.frames == []
    finally:
        await socket.close()


async def test_a_browser_session_cookie_watches_until_the_session_ends(tenant: Tenant) -> None:
    admin = tenant.system.admin_token
    code = await in_thread(lambda: tenant.call("POST", "/v1/sessions/login-codes", {}, token=admin))
    exchanged = await in_thread(
        lambda: ok(tenant.rest.post("/v1/sessions", json={"code": code["code"]}))
    )
    session, csrf = exchanged["sessionSecret"], exchanged["csrfToken"]
    socket = await Socket.open(tenant.system.gateway_urls[1], tenant.cid, None, cookie=session)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        ended = await in_thread(
            lambda: tenant.rest.post(
                "/v1/sessions/current/end",
                json={},
                cookies={"workcoord_session": session},
                headers={"X-CSRF-Token": csrf},
            )
        )
        assert ended.status_code == 200, ended.text
        assert await socket.until_closed() == 1008
        assert "UNAUTHENTICATED" in socket.close_reason
    finally:
        await socket.close()


async def test_nothing_private_ever_appears_in_a_frame(tenant: Tenant) -> None:
    marker = f"private-{secrets.token_hex(8)}"
    since = await in_thread(tenant.revision)
    socket = await Socket.open(tenant.system.gateway_urls[1], tenant.cid, tenant.key, since=since)
    try:
        await in_thread(
            lambda: tenant.call(
                "POST",
                f"/v1/work-coordinators/{tenant.cid}/lanes",
                {
                    "title": "t",
                    "template": "CUSTOM",
                    "inputs": {"lane": f"{marker}-lane-input"},
                    "items": [
                        {
                            "key": "a",
                            "kind": "TASK",
                            "workerClass": "machine",
                            "inputs": {"prompt": f"{marker}-item-input"},
                        }
                    ],
                },
            )
        )
        leased = await in_thread(
            lambda: tenant.call(
                "POST",
                f"/v1/work-coordinators/{tenant.cid}/leases",
                {
                    "workerId": "w1",
                    "workerClass": "machine",
                    "maxItems": 1,
                    "leaseSeconds": 30,
                    "runIdentity": {
                        "pid": 1,
                        "agentId": "a",
                        "engine": "e",
                        "account": "x",
                        "hostname": "h",
                        "worktreePath": "/srv/w",
                        "branch": "b",
                        "startedAt": "2026-11-29T10:00:00Z",
                    },
                },
            )
        )
        lease = leased["leases"][0]
        token = lease["leaseToken"]
        assert f"{marker}-item-input" in json.dumps(lease)  # planted where workers see it
        await in_thread(
            lambda: tenant.call(
                "POST",
                f"/v1/work-coordinators/{tenant.cid}/leases/{lease['leaseId']}/checkpoint",
                {
                    "leaseToken": token,
                    "checkpoint": {
                        "summary": f"{marker}-summary",
                        "filesChanged": [f"{marker}.py"],
                        "nextAction": f"{marker}-next",
                    },
                },
            )
        )
        current = await in_thread(tenant.revision)
        await socket.until_revision(current)
        fresh = await Socket.open(tenant.system.gateway_urls[0], tenant.cid, tenant.key)
        await fresh.until(lambda s: "snapshot" in s.kinds())
        await fresh.close()
        texts = socket.texts + fresh.texts
        assert len(socket.events()) >= 4
        for text in texts:
            assert marker not in text, text
            assert token not in text, text
    finally:
        await socket.close()


async def test_a_client_that_disconnects_costs_nothing_after(tenant: Tenant) -> None:
    gateway = tenant.system.gateway_urls[0]
    sockets = [await Socket.open(gateway, tenant.cid, tenant.key) for _ in range(5)]
    for socket in sockets:
        await socket.until(lambda s: "snapshot" in s.kinds())
    assert await in_thread(lambda: _subscribers(gateway)) >= 5
    for socket in sockets:
        await socket.close()
    deadline = time.monotonic() + WAIT_SECONDS
    while await in_thread(lambda: _subscribers(gateway)) != 0:
        assert time.monotonic() < deadline, "the gateway kept feeds of gone clients"
        await asyncio.sleep(0.05)


def _subscribers(gateway: str) -> float:
    text = httpx.get(f"{gateway}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith("workcoord_gateway_feed_subscribers "):
            return float(line.split()[1])
    raise AssertionError("no feed subscribers gauge")


async def test_an_oversized_client_message_closes_the_socket_with_1009(tenant: Tenant) -> None:
    """Clients have nothing to send; a huge message is refused (message too big), and the
    feed behind it is released."""
    gateway = tenant.system.gateway_urls[0]
    socket = await Socket.open(gateway, tenant.cid, tenant.key)
    try:
        await socket.until(lambda s: "snapshot" in s.kinds())
        await socket.connection.send("x" * (256 * 1024))
        assert await socket.until_closed() == 1009
    finally:
        await socket.close()
    deadline = time.monotonic() + WAIT_SECONDS
    while await in_thread(lambda: _subscribers(gateway)) != 0:
        assert time.monotonic() < deadline, "the gateway kept the feed of a refused client"
        await asyncio.sleep(0.05)
