"""The live feed end to end, access: who may watch (revoked and unknown credentials, unknown
coordinators, session cookies and their end) and that nothing private ever reaches a frame.
The system is :mod:`tests.e2e.feed_services` (two coordinators, two gateways, a private Redis).
"""

from __future__ import annotations

import json
import secrets

import pytest

from tests.support.rest import ok

from . import feed_clients, feed_services
from .feed_clients import Socket, Tenant, in_thread

pytestmark = [pytest.mark.xdist_group(name="e2e-feed"), pytest.mark.pg, pytest.mark.redis]

# The module-scoped system and the per-test tenant on it, registered here.
feed_system = feed_services.feed_system
tenant = feed_clients.tenant


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
