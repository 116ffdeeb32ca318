"""Browser login through the real gateway: ``GET /login?code=…`` sets the HttpOnly,
SameSite=Strict session cookie and the CSRF cookie; cookie-authenticated changes need the
matching ``X-CSRF-Token`` (else 403); ending the session logs out at once."""

from __future__ import annotations

import httpx

from tests.integration.tenancy.world import sessions
from tests.support.harness import Stack, start_gateway_for
from workcoord.api.v1 import session_pb2
from workcoord.gateway.server import RunningGateway


async def test_login_sets_cookies_and_csrf_guards_changes(
    stack: Stack, gateway: RunningGateway
) -> None:
    code = await sessions(stack.admin).CreateLoginCode(session_pb2.CreateLoginCodeRequest())
    async with httpx.AsyncClient(base_url=f"http://{gateway.address}", timeout=30) as browser:
        bad = await browser.get("/login", params={"code": "wcses_not-a-code"})
        assert bad.status_code == 401
        answer = await browser.get("/login", params={"code": code.code})
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        assert answer.headers["cache-control"] == "no-store"
        cookies = {
            line.split("=", 1)[0]: line.lower() for line in answer.headers.get_list("set-cookie")
        }
        assert "httponly" in cookies["workcoord_session"]
        assert "samesite=strict" in cookies["workcoord_session"]
        assert "path=/" in cookies["workcoord_session"]
        assert "secure" not in cookies["workcoord_session"]  # plain HTTP on loopback
        assert "httponly" not in cookies["workcoord_csrf"]
        values = {
            line.split("=", 1)[0]: line.split("=", 1)[1].split(";", 1)[0]
            for line in answer.headers.get_list("set-cookie")
        }
        csrf = values["workcoord_csrf"]
        # What a browser sends back (httpx's cookie jar does not keep cookies for a bare IP).
        browser.cookies.set("workcoord_session", values["workcoord_session"])
        browser.cookies.set("workcoord_csrf", csrf)
        # The code was one-time.
        again = await browser.get("/login", params={"code": code.code})
        assert again.status_code == 401

        me = await browser.get("/v1/me")
        assert me.status_code == 200, me.text
        assert me.json()["platformAdmin"] is True
        org = {"slug": "browser-made", "displayName": "B"}
        refused = await browser.post("/v1/orgs", json=org)
        assert refused.status_code == 403, refused.text
        wrong = await browser.post("/v1/orgs", json=org, headers={"X-CSRF-Token": "wcses_x"})
        assert wrong.status_code == 403
        made = await browser.post("/v1/orgs", json=org, headers={"X-CSRF-Token": csrf})
        assert made.status_code == 200, made.text

        ended = await browser.post(
            "/v1/sessions/current/end", json={}, headers={"X-CSRF-Token": csrf}
        )
        assert ended.status_code == 200, ended.text
        assert ended.json()["endTime"]
        after = await browser.get("/v1/me")
        assert after.status_code == 401


async def test_cookies_are_secure_behind_a_trusted_tls_proxy(stack: Stack) -> None:
    """An Ingress terminating TLS talks plain HTTP to the gateway from its pod network: its
    X-Forwarded-Proto counts only when WORKCOORD_TRUSTED_PROXIES names it."""
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    for trusted, secure in ((["10.0.0.0/8"], False), (["127.0.0.0/8", "10.0.0.0/8"], True)):
        running = await start_gateway_for(stack.address, trusted_proxies=trusted)
        try:
            code = await sessions(stack.admin).CreateLoginCode(session_pb2.CreateLoginCodeRequest())
            async with httpx.AsyncClient(base_url=f"http://{running.address}") as proxy:
                answer = await proxy.get("/login", params={"code": code.code}, headers=forwarded)
            assert answer.status_code == 303, answer.text
            for line in answer.headers.get_list("set-cookie"):
                assert ("; secure" in line.lower()) is secure, (trusted, line)
        finally:
            await running.stop()
