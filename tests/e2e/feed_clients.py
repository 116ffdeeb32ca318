"""The live feed's clients for end-to-end tests: a :class:`Tenant` (an org, a work
coordinator and a work key on the feed system, REST through gateway 1) and a :class:`Socket`
(one WebSocket subscriber on a gateway). ``tenant`` is a fixture a test module registers next
to ``feed_system``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.support.rest import JSON, bearer, ok

from .feed_services import FeedSystem

_T = TypeVar("_T")
WAIT_SECONDS = 120.0  # a hang guard: every wait returns as soon as its condition holds


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
