"""A whole workcoord in-process for the lane scenarios, driven over REST like a real client.

:class:`LaneSystem` is a coordinator (PostgreSQL + Redis, a :class:`TestClock`, GitHub Issues
configured against :class:`FakeGitHub`), a recovery service (its loop parked: passes run only
when a test asks, via ``POST …/maintain``) and the gateway, all on port 0. Scripted workers
lease, start and complete through the gateway with the proto3 JSON shapes REST clients send.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.harness import TestClock, start_coordinator_for, start_gateway_for
from tests.support.rest import JSON, bearer, expect_status, items_by_key, ok, run_identity
from workcoord.coordinator.server import RunningCoordinator
from workcoord.gateway.server import RunningGateway
from workcoord.kit.settings import RecoverySettings
from workcoord.recovery.server import RunningRecovery, start_recovery

from .fake_github import FakeGitHub

GITHUB_TOKEN = "ghp_laneScenarioToken0123456789abcdefXYZ"
DIGEST_OWNER = "ops@acme.test"
ESCALATE_AFTER_SECONDS = 60
RECEIPT: JSON = {"environment": "prod", "version": "1.4.2", "url": "https://deploy.test/1.4.2"}
STAGE_CLASSES: JSON = {"build": "codex", "review": "claude", "fix": "codex", "ship": "machine"}


def forbidden(response: httpx.Response) -> JSON:
    return expect_status(response, 403, 7, "PERMISSION_DENIED")


def illegal(response: httpx.Response) -> JSON:
    return expect_status(response, 400, 9, "ILLEGAL_TRANSITION")


def standard_lane(title: str = "Fix flaky parser", **extra: Any) -> JSON:
    body: JSON = {"title": title, "template": "STANDARD", "workerClasses": dict(STAGE_CLASSES)}
    body.update(extra)
    return body


@dataclass
class LaneSystem:
    """One test's running system, org, work coordinator and clients."""

    clock: TestClock
    github: FakeGitHub
    coordinator: RunningCoordinator
    recovery: RunningRecovery
    gateway: RunningGateway
    admin_token: str
    service_key: str
    admin: httpx.AsyncClient
    service: httpx.AsyncClient
    worker: httpx.AsyncClient
    key_secret: str = ""
    cid: str = ""
    org: str = ""
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"/v1/work-coordinators/{self.cid}"

    @property
    def today(self) -> str:
        return self.clock.now().date().isoformat()

    def client(self, token: str) -> httpx.AsyncClient:
        client = httpx.AsyncClient(
            base_url=f"http://{self.gateway.address}",
            headers=bearer(token),
            timeout=30.0,
        )
        self.clients.append(client)
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()
        await self.gateway.stop()
        await self.recovery.stop(0)
        await self.coordinator.stop(0)

    # ------------------------------------------------------------------ administration

    async def work_key(self, capabilities: list[str] | None = None) -> httpx.AsyncClient:
        key = ok(
            await self.admin.post(
                "/v1/work-keys",
                json={
                    "displayName": f"key-{secrets.token_hex(3)}",
                    "orgSlug": self.org,
                    "coordinatorIds": [self.cid],
                    "capabilities": capabilities or ["READ", "LEASE", "WRITE"],
                },
            )
        )
        return self.client(key["secret"])

    async def configure(self, **fields: Any) -> JSON:
        return ok(await self.admin.patch(self.base, json=fields))

    # ------------------------------------------------------------------ lanes and items

    async def create_lane(self, body: JSON, client: httpx.AsyncClient | None = None) -> JSON:
        return ok(await (client or self.worker).post(f"{self.base}/lanes", json=body))

    async def lane(self, lane_id: str) -> JSON:
        return ok(await self.admin.get(f"{self.base}/lanes/{lane_id}"))

    async def item(self, lane_id: str, item_id: str) -> JSON:
        return ok(await self.admin.get(f"{self.base}/lanes/{lane_id}/items/{item_id}"))

    async def item_by_key(self, lane_id: str, key: str) -> JSON:
        return items_by_key(await self.lane(lane_id))[key]

    def decide(
        self, item: JSON, verb: str, client: httpx.AsyncClient | None = None, note: str = ""
    ) -> Any:
        """POST …/items/{itemId}/{verb} (a coroutine returning the raw response)."""
        body: JSON = {"note": note} if note else {}
        return (client or self.admin).post(
            f"{self.base}/lanes/{item['laneId']}/items/{item['itemId']}/{verb}", json=body
        )

    # ------------------------------------------------------------------ scripted workers

    def identity(self, **overrides: Any) -> JSON:
        """A run identity started now by the system's clock."""
        return run_identity(self.clock.now(), **overrides)

    async def lease(
        self, worker_class: str, *, max_items: int = 1, lease_seconds: int = 60
    ) -> list[JSON]:
        body: JSON = {
            "workerId": f"{worker_class}-1",
            "workerClass": worker_class,
            "maxItems": max_items,
            "leaseSeconds": lease_seconds,
            "waitSeconds": 0,
        }
        leases: list[JSON] = ok(await self.worker.post(f"{self.base}/leases", json=body)).get(
            "leases", []
        )
        return leases

    async def lease_call(self, lease: JSON, verb: str, **body: Any) -> httpx.Response:
        return await self.worker.post(
            f"{self.base}/leases/{lease['leaseId']}/{verb}",
            json={"leaseToken": lease["leaseToken"], **body},
        )

    async def take(self, worker_class: str, *, lease_seconds: int = 60) -> JSON:
        """Lease exactly one item of ``worker_class`` and start it."""
        leases = await self.lease(worker_class, lease_seconds=lease_seconds)
        assert len(leases) == 1, leases
        ok(await self.lease_call(leases[0], "start", runIdentity=self.identity()))
        return leases[0]

    async def complete(self, lease: JSON, **evidence: Any) -> JSON:
        evidence.setdefault("summary", "done")
        return ok(await self.lease_call(lease, "complete", evidence=evidence))

    async def fail(self, lease: JSON, *, retryable: bool = True) -> JSON:
        error = {"message": "boom", "type": "Timeout", "retryable": retryable}
        return ok(await self.lease_call(lease, "fail", error=error))

    async def work(self, worker_class: str, kind: str, **evidence: Any) -> JSON:
        """A scripted worker: lease one ``kind`` item of ``worker_class``, start, complete."""
        lease = await self.take(worker_class)
        assert lease["item"]["kind"] == kind, lease
        await self.complete(lease, **evidence)
        return lease

    async def build_and_review(self, lane_id: str, verdicts: list[str]) -> None:
        """BUILD, then a REVIEW per verdict (FIX between a FAIL and the next REVIEW)."""
        await self.work("codex", "BUILD", summary="built")
        for n, verdict in enumerate(verdicts):
            if n:
                await self.work("codex", "FIX", summary="fixed")
            findings = ["missing test"] if verdict == "FAIL" else []
            await self.work("claude", "REVIEW", verdict=verdict, findings=findings)
        del lane_id

    async def ship(self, lane_id: str) -> JSON:
        """Approve the lane's SHIP item as the admin and complete it with a receipt."""
        ship = await self.item_by_key(lane_id, "ship")
        assert ship["state"] == "AWAITING_APPROVAL", ship
        ok(await self.decide(ship, "approve"))
        return await self.work("machine", "SHIP", receipt=RECEIPT)

    async def settle(self) -> None:
        """Wait for follow-up work started after commits (ticket closures)."""
        await self.coordinator.engine.drain()

    # ------------------------------------------------------------------ reading

    async def events(self, **params: Any) -> list[JSON]:
        out: list[JSON] = []
        token = ""
        while True:
            query: JSON = {"sinceRevision": 0, "pageSize": 500, **params}
            if token:
                query["pageToken"] = token
            page = ok(await self.admin.get(f"{self.base}/events", params=query))
            out.extend(page.get("events", []))
            token = page.get("nextPageToken", "")
            if not token:
                return out

    async def event_types(self, **params: Any) -> list[str]:
        return [e["type"] for e in await self.events(**params)]

    async def digest(self, day: str | None = None) -> JSON:
        return ok(await self.admin.get(f"{self.base}/digests/{day or self.today}"))

    async def pending_actions(self, state: str | None = None) -> list[JSON]:
        params = {"state": state} if state else {}
        page = ok(await self.admin.get(f"{self.base}/pending-actions", params=params))
        actions: list[JSON] = page.get("pendingActions", [])
        return actions

    async def view(self) -> JSON:
        return ok(await self.admin.get(f"{self.base}/view"))

    async def why(self, **params: str) -> JSON:
        return ok(await self.admin.get(f"{self.base}/why", params=params))

    async def maintain(self) -> JSON:
        """A recovery pass, through the gateway and the recovery service, as the service."""
        return ok(await self.service.post(f"{self.base}/maintain", json={}))


async def start_lane_system(database_url: str, redis_url: str, github: FakeGitHub) -> LaneSystem:
    clock = TestClock()
    admin_token = f"wcadm_test_{secrets.token_hex(16)}"
    service_key = f"wcsvc_test_{secrets.token_hex(16)}"
    coordinator = await start_coordinator_for(
        database_url,
        redis_url,
        clock,
        admin_token,
        service_key,
        github_token=GITHUB_TOKEN,
        github_api_url=github.base_url,
        # Tracker connections reach the local fakes over http (as `workcoord dev` allows).
        webhook_allowed_hosts=["127.0.0.1"],
    )
    first_tick_done = asyncio.Event()
    parked = asyncio.Event()

    async def never(_seconds: float) -> None:
        # Each loop (leadership, passes) sleeps once its first turn is over; no second comes.
        task = asyncio.current_task()
        if task is not None and task.get_name() == "workcoord-recovery-passes":
            first_tick_done.set()
        await parked.wait()

    recovery = await start_recovery(
        RecoverySettings.model_validate(
            {
                "listen_recovery": "127.0.0.1:0",
                "coordinator_address": coordinator.address,
                "service_key": service_key,
                "recovery_interval_seconds": 3600,
            }
        ),
        clock=clock,
        sleep=never,
    )
    # The first pass runs at once; let it finish before the test creates anything.
    await asyncio.wait_for(first_tick_done.wait(), 60)
    gateway = await start_gateway_for(coordinator.address, recovery.address)
    base_url = f"http://{gateway.address}"
    clients = [
        httpx.AsyncClient(base_url=base_url, headers=bearer(token), timeout=30.0)
        for token in (admin_token, service_key)
    ]
    system = LaneSystem(
        clock=clock,
        github=github,
        coordinator=coordinator,
        recovery=recovery,
        gateway=gateway,
        admin_token=admin_token,
        service_key=service_key,
        admin=clients[0],
        service=clients[1],
        worker=clients[0],  # replaced by the work key below
        clients=list(clients),
    )
    system.org = f"org-{secrets.token_hex(4)}"
    ok(await system.admin.post("/v1/orgs", json={"slug": system.org, "displayName": "Acme"}))
    coordinator_json = ok(
        await system.admin.post(
            "/v1/work-coordinators",
            json={
                "scope": "ORG",
                "orgSlug": system.org,
                "displayName": "Acme work",
                "digestOwner": DIGEST_OWNER,
                "escalateAfter": f"{ESCALATE_AFTER_SECONDS}s",
            },
        )
    )
    system.cid = coordinator_json["coordinatorId"]
    system.worker = await system.work_key()
    return system
