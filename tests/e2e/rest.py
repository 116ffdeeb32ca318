"""REST helpers for the end-to-end tests: tenants, checked calls, Status JSON, the example lane."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import httpx

JSON = dict[str, Any]

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"

# The example lane of api.md: c waits for a and b and holds an exclusive key.
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


def ok(response: httpx.Response) -> JSON:
    """The JSON body of a 200 answer (fails with the body otherwise)."""
    assert response.status_code == 200, (
        f"{response.request.method} {response.request.url} → {response.status_code}: "
        f"{response.text}"
    )
    body: JSON = response.json()
    return body


def error_info(body: JSON) -> JSON:
    """The ``google.rpc.ErrorInfo`` detail of a Status body."""
    infos = [detail for detail in body.get("details", []) if detail.get("@type") == ERROR_INFO]
    assert len(infos) == 1, body
    info: JSON = infos[0]
    return info


def field_violations(body: JSON) -> dict[str, str]:
    """``field → description`` from the ``google.rpc.BadRequest`` detail of a Status body."""
    requests = [d for d in body.get("details", []) if d.get("@type") == BAD_REQUEST]
    assert len(requests) == 1, body
    return {v["field"]: v["description"] for v in requests[0]["fieldViolations"]}


def expect_status(response: httpx.Response, http_status: int, code: int, reason: str) -> JSON:
    """Assert a ``google.rpc.Status`` answer with this HTTP status, gRPC code and reason."""
    assert response.status_code == http_status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: JSON = response.json()
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"], body
    info = error_info(body)
    assert info["reason"] == reason, body
    assert info["domain"] == "workcoord", body
    return body


def run_identity(**overrides: Any) -> JSON:
    """A plausible run identity (``startedAt`` a minute ago by the real clock)."""
    started = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    identity: JSON = {
        "pid": 4242,
        "agentId": "agent-7",
        "engine": "codex",
        "account": "fleet-bot",
        "hostname": "build-3",
        "worktreePath": "/srv/lanes/parser",
        "branch": "fix/parser",
        "startedAt": started,
    }
    identity.update(overrides)
    return identity


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
    admin = httpx.Client(
        base_url=system.gateway_url,
        headers={"Authorization": f"Bearer {system.admin_token}"},
        timeout=30.0,
    )
    ok(admin.post("/v1/orgs", json={"slug": slug, "displayName": slug.title()}))
    coordinator = ok(
        admin.post(
            "/v1/work-coordinators",
            json={"scope": "ORG", "orgSlug": slug, "displayName": f"{slug} work"},
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
    worker = httpx.Client(
        base_url=system.gateway_url,
        headers={"Authorization": f"Bearer {key['secret']}"},
        timeout=30.0,
    )
    return Tenant(org_slug=slug, coordinator=coordinator, key=key, admin=admin, worker=worker)


def items_by_key(lane: JSON) -> dict[str, JSON]:
    return {item["key"]: item for item in lane["items"]}


def contains_key(document: Any, name: str) -> bool:
    """Whether ``name`` is a key anywhere in a JSON document."""
    if isinstance(document, dict):
        return name in document or any(contains_key(v, name) for v in document.values())
    if isinstance(document, list):
        return any(contains_key(v, name) for v in document)
    return False
