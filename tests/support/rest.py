"""REST helpers for the tests that drive the gateway: checked answers, ``google.rpc.Status``
bodies, times, and request bodies in the proto3 JSON mapping (camelCase)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

__all__ = [
    "BAD_REQUEST",
    "ERROR_INFO",
    "JSON",
    "bearer",
    "custom",
    "error_info",
    "expect_status",
    "field_violations",
    "items_by_key",
    "ok",
    "parse_time",
    "rest_client",
    "rfc3339",
    "run_identity",
    "task",
]

JSON = dict[str, Any]

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def bearer(token: str) -> dict[str, str]:
    """The headers that send ``token`` as the bearer credential."""
    return {"Authorization": f"Bearer {token}"}


def rest_client(base_url: str, token: str) -> httpx.Client:
    """A client of the gateway at ``base_url`` holding ``token`` (close it, or use ``with``)."""
    return httpx.Client(base_url=base_url, headers=bearer(token), timeout=30.0)


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


def parse_time(text: str) -> datetime:
    """An RFC 3339 time of a JSON body (``…Z``) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def rfc3339(moment: datetime) -> str:
    """``moment`` (UTC) as an RFC 3339 time to the second, as a client would send it."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def run_identity(started_at: datetime | None = None, **overrides: Any) -> JSON:
    """A plausible run identity (``startedAt`` a minute ago by the real clock unless given)."""
    started = started_at or datetime.now(UTC) - timedelta(minutes=1)
    identity: JSON = {
        "pid": 4242,
        "agentId": "agent-7",
        "engine": "codex",
        "account": "fleet-bot",
        "hostname": "build-3",
        "worktreePath": "/srv/lanes/parser",
        "branch": "fix/parser",
        "startedAt": rfc3339(started),
    }
    identity.update(overrides)
    return identity


def task(key: str, worker_class: str, **fields: Any) -> JSON:
    """A TASK item of a CUSTOM lane, titled after its key unless ``fields`` say otherwise."""
    return {"key": key, "kind": "TASK", "workerClass": worker_class, "title": key, **fields}


def custom(*items: JSON, **fields: Any) -> JSON:
    """A CUSTOM lane of ``items``."""
    return {"title": "lane", "template": "CUSTOM", "items": list(items), **fields}


def items_by_key(lane: JSON) -> dict[str, JSON]:
    """A lane's items by their key."""
    return {item["key"]: item for item in lane.get("items", [])}
