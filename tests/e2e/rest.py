"""REST helpers for the end-to-end tests: tenants over REST and the example lane."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from tests.support.rest import JSON, ok, rest_client, run_identity

# The README's example lane: a and b run in parallel, c waits for both and holds an exclusive key.
EXAMPLE_LANE: JSON = {
    "title": "Fix flaky parser",
    "template": "CUSTOM",
    "priority": 5,
    "inputs": {"repo": "acme/parser", "hint": "private input"},
    "items": [
        {"key": "a", "kind": "TASK", "workerClass": "machine"},
        {"key": "b", "kind": "TASK", "workerClass": "machine"},
        {
            "key": "c",
            "kind": "TASK",
            "workerClass": "person",
            "dependsOn": ["a", "b"],
            "exclusiveKey": "repo:parser",
        },
    ],
}


@dataclass
class Tenant:
    """An org with one ORG work coordinator and a READ/LEASE/WRITE work key on it."""

    org_slug: str
    coordinator: JSON
    key: JSON
    admin: httpx.Client
    worker: httpx.Client

    @property
    def coordinator_id(self) -> str:
        value: str = self.coordinator["coordinatorId"]
        return value

    @property
    def base(self) -> str:
        """``/v1/work-coordinators/{id}``."""
        return f"/v1/work-coordinators/{self.coordinator_id}"

    def create_lane(self, lane: JSON | None = None) -> JSON:
        return ok(self.worker.post(f"{self.base}/lanes", json=lane or EXAMPLE_LANE))

    def lease(self, worker_class: str, *, lease_seconds: int = 30, **extra: Any) -> list[JSON]:
        # A worker registers with one class: one worker id per class.
        body: JSON = {
            "workerId": f"{worker_class}-1",
            "workerClass": worker_class,
            "maxItems": 10,
            "leaseSeconds": lease_seconds,
            "waitSeconds": 0,
            **extra,
        }
        leases: list[JSON] = ok(self.worker.post(f"{self.base}/leases", json=body)).get(
            "leases", []
        )
        return leases

    def lease_call(self, lease: JSON, verb: str, **body: Any) -> httpx.Response:
        """POST ``…/leases/{leaseId}/{verb}`` with the lease's token and ``body``."""
        return self.worker.post(
            f"{self.base}/leases/{lease['leaseId']}/{verb}",
            json={"leaseToken": lease["leaseToken"], **body},
        )

    def start(self, lease: JSON) -> JSON:
        return ok(self.lease_call(lease, "start", runIdentity=run_identity()))

    def complete(self, lease: JSON, summary: str = "done") -> JSON:
        return ok(self.lease_call(lease, "complete", evidence={"summary": summary}))

    def item(self, lane_id: str, item_id: str) -> JSON:
        return ok(self.worker.get(f"{self.base}/lanes/{lane_id}/items/{item_id}"))

    def lane(self, lane_id: str) -> JSON:
        return ok(self.worker.get(f"{self.base}/lanes/{lane_id}"))

    def events(self, page_size: int = 100, since: int = 0) -> list[JSON]:
        """Every event after ``since``, following ``nextPageToken`` to the end."""
        return list(self.iter_events(page_size, since))

    def iter_events(self, page_size: int = 100, since: int = 0) -> Iterator[JSON]:
        token = ""
        while True:
            params: dict[str, str | int] = {"sinceRevision": since, "pageSize": page_size}
            if token:
                params["pageToken"] = token
            page = ok(self.worker.get(f"{self.base}/events", params=params))
            events: list[JSON] = page.get("events", [])
            assert len(events) <= page_size
            yield from events
            token = page.get("nextPageToken", "")
            if not token:
                return

    def revision(self) -> int:
        return int(ok(self.admin.get(self.base))["revision"])

    def close(self) -> None:
        self.worker.close()
        self.admin.close()


def unique_slug(prefix: str = "org") -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


class Gateway(Protocol):
    """Where a tenant is made: the gateway and the bootstrap admin's token."""

    @property
    def gateway_url(self) -> str: ...

    @property
    def admin_token(self) -> str: ...


def make_tenant(system: Gateway, slug: str | None = None) -> Tenant:
    """A new org, its ORG work coordinator and a READ/LEASE/WRITE work key, over REST."""
    slug = slug or unique_slug()
    admin = rest_client(system.gateway_url, system.admin_token)
    ok(admin.post("/v1/orgs", json={"slug": slug, "displayName": slug.title()}))
    coordinator = ok(
        admin.post(
            "/v1/work-coordinators",
            json={
                "scope": "ORG",
                "orgSlug": slug,
                "displayName": f"{slug} work",
                "digestOwner": f"ops@{slug}.test",
            },
        )
    )
    key = ok(
        admin.post(
            "/v1/work-keys",
            json={
                "displayName": "fleet-1",
                "orgSlug": slug,
                "coordinatorIds": [coordinator["coordinatorId"]],
                "capabilities": ["READ", "LEASE", "WRITE"],
            },
        )
    )
    worker = rest_client(system.gateway_url, key["secret"])
    return Tenant(org_slug=slug, coordinator=coordinator, key=key, admin=admin, worker=worker)


def contains_key(document: Any, name: str) -> bool:
    """Whether ``name`` is a key anywhere in a JSON document."""
    if isinstance(document, dict):
        return name in document or any(contains_key(v, name) for v in document.values())
    if isinstance(document, list):
        return any(contains_key(v, name) for v in document)
    return False


# --------------------------------------------------------------------------- decisions ahead


def work(tenant: Tenant, worker_class: str) -> list[JSON]:
    """Lease (and start at once) everything ready for ``worker_class``."""
    return tenant.lease(worker_class, runIdentity=run_identity(agentId=f"agent-{worker_class}"))


# What a build and a review report in a lane whose approval shows the evidence.
BUILD_EVIDENCE: JSON = {
    "summary": "parser rewritten without the global state",
    "links": ["https://ci.example.test/runs/7"],
    "checks": [{"name": "pytest", "status": "PASSED"}, {"name": "lint", "status": "PASSED"}],
    "artifacts": [{"name": "wheel", "uri": "https://ci.example.test/runs/7/parser.whl"}],
}
REVIEW_EVIDENCE: JSON = {
    "summary": "the change is small and tested",
    "verdict": "PASS",
    "links": ["https://git.example.test/acme/app/pull/7"],
}


def lane_awaiting_ship(
    tenant: Tenant,
    title: str,
    *,
    build: JSON | None = None,
    review: JSON | None = None,
    **extra: Any,
) -> JSON:
    """A STANDARD lane built and reviewed (with the evidence ``build`` and ``review``, if
    given): its SHIP waits for a human's approval."""
    lane = tenant.create_lane({"title": title, "template": "STANDARD", **extra})
    for lease in work(tenant, "codex"):
        ok(tenant.lease_call(lease, "complete", evidence=build or {"summary": "built"}))
    for lease in work(tenant, "claude"):
        evidence = review or {"summary": "ok", "verdict": "PASS"}
        ok(tenant.lease_call(lease, "complete", evidence=evidence))
    shipped = tenant.lane(lane["laneId"])
    ship = item_of(shipped, "SHIP")
    assert ship["state"] == "AWAITING_APPROVAL", shipped
    return shipped


def ship_it(tenant: Tenant) -> None:
    """The machine worker completes everything ready for it (a SHIP with a receipt), as many
    rounds as its class capacity takes."""
    receipt = {"environment": "prod", "version": "1.4.2", "url": "https://example.test/r/1"}
    shipped = 0
    while leases := work(tenant, "machine"):
        for lease in leases:
            evidence = {"summary": "shipped", "receipt": receipt}
            ok(tenant.lease_call(lease, "complete", evidence=evidence))
            shipped += 1
    assert shipped, "nothing to ship"


def item_of(lane: JSON, kind: str) -> JSON:
    items = [item for item in lane["items"] if item["kind"] == kind]
    assert len(items) == 1, lane
    found: JSON = items[0]
    return found


def busy_day(tenant: Tenant) -> JSON:
    """What a working day looks like: a lane whose SHIP waits for approval (returned), a build
    running with progress, and a custom lane with a dead-lettered and a stopped item."""
    awaiting = lane_awaiting_ship(tenant, "Speed up the parser", priority=5)
    tenant.create_lane({"title": "Flaky test in CI: test_lease_expiry", "template": "STANDARD"})
    for lease in work(tenant, "codex"):
        ok(tenant.lease_call(lease, "heartbeat", progress="tests 40/120"))
    tenant.create_lane(
        {
            "title": "Refresh the staging database",
            "template": "CUSTOM",
            "items": [
                {
                    "key": "dump",
                    "kind": "TASK",
                    "workerClass": "machine",
                    "retryPolicy": {"maximumAttempts": 1},
                },
                {"key": "announce", "kind": "TASK", "workerClass": "agent", "needsHuman": True},
            ],
        }
    )
    for lease in work(tenant, "machine"):
        error = {"message": "pg_dump: connection refused", "retryable": False}
        ok(tenant.lease_call(lease, "fail", error=error))
    return awaiting
