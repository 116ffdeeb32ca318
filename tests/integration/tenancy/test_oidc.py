"""OpenID Connect login end to end: the local fake provider of :mod:`tests.support.oidc_provider`
(a real HTTP server on 127.0.0.1: discovery, JWKS, an authorization endpoint that redirects
straight back with a code, a token endpoint that checks the client secret and the PKCE verifier
and answers a signed id_token), the real coordinator on PostgreSQL, and the real gateway.

The browser is httpx following redirects by hand. The coordinator verifies every id_token
itself: a bad signature, another audience, an expired token, a wrong nonce, an unverified or
unknown email each leave the browser without a session (401, a Status, never a 500), and
neither the client secret nor an id_token ever shows in a log line or an answer.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
import pytest
from pydantic import SecretStr

from tests.integration.tenancy.world import sessions
from tests.support.harness import Stack, TestClock, start_gateway_for, start_stack
from tests.support.oidc_provider import (
    CLIENT_ID,
    FakeProvider,
    SigningKey,
    ec_key,
    rsa_key,
    serve_provider,
)
from workcoord.api.v1 import admin_pb2, session_pb2
from workcoord.gateway.server import RunningGateway
from workcoord.kit.errors import Code, WorkcoordError

pytestmark = [pytest.mark.pg, pytest.mark.xdist_group(name="oidc")]

PUBLIC_HOST = "workcoord.test"


@pytest.fixture
def clock() -> TestClock:
    # The JWKS cache and its refetch pause are measured on this clock's monotonic reading:
    # frozen, so they move only by clock.advance (never by a slow run of the test).
    return TestClock(real_time=False)


@pytest.fixture
def provider(clock: TestClock) -> Iterator[FakeProvider]:
    with serve_provider(clock) as fake:
        yield fake


@pytest.fixture
async def stack(pg_url: str, provider: FakeProvider, clock: TestClock) -> AsyncIterator[Stack]:
    started = await start_stack(
        "postgres",
        pg_url,
        None,
        clock=clock,
        oidc_issuer=provider.issuer,
        oidc_client_id=CLIENT_ID,
    )
    yield started
    await started.close()


@pytest.fixture
def gateway_settings(provider: FakeProvider) -> dict[str, Any]:
    return {
        "oidc_issuer": provider.issuer,
        "oidc_client_id": CLIENT_ID,
        "oidc_client_secret": SecretStr(provider.client_secret),
        "oidc_redirect_url": f"http://{PUBLIC_HOST}/login/oidc/callback",
    }


async def _user(stack: Stack, email: str, *, platform_admin: bool = False) -> str:
    created = await stack.admin.admin.CreateUser(
        admin_pb2.CreateUserRequest(
            user=admin_pb2.User(
                email=email, display_name="oidc user", platform_admin=platform_admin, verified=True
            )
        )
    )
    return created.user.user_id


def _set_cookies(response: httpx.Response) -> dict[str, str]:
    return {line.split("=", 1)[0]: line for line in response.headers.get_list("set-cookie")}


def _cookie_value(line: str) -> str:
    return line.split("=", 1)[1].split(";", 1)[0]


@dataclass
class Outcome:
    callback: httpx.Response
    cookies: dict[str, str]


async def browser_login(
    gateway: RunningGateway, *, tamper_state: bool = False, next_path: str = ""
) -> Outcome:
    """``/login/oidc`` (with ``?next=`` when given) → provider → ``/login/oidc/callback``, by
    hand. The gateway's public name (``PUBLIC_HOST``, its redirect URL) is resolved to its
    ephemeral address here, and the flow cookie is carried back explicitly (httpx keeps no
    cookies for a bare IP)."""
    params = {"next": next_path} if next_path else {}
    async with httpx.AsyncClient(timeout=30) as browser:
        start = await browser.get(f"http://{gateway.address}/login/oidc", params=params)
        assert start.status_code == 303, start.text
        assert start.headers["cache-control"] == "no-store"
        flow_line = _set_cookies(start)["workcoord_oidc"]
        lowered = flow_line.lower()
        assert "httponly" in lowered and "samesite=lax" in lowered
        assert "path=/login/oidc" in lowered
        authorize = await browser.get(start.headers["location"])
        assert authorize.status_code == 302, authorize.text
        back = urlsplit(authorize.headers["location"])
        assert back.netloc == PUBLIC_HOST and back.path == "/login/oidc/callback"
        query = {k: v[0] for k, v in parse_qs(back.query).items()}
        if tamper_state:
            query["state"] = secrets.token_urlsafe(32)
        callback = await browser.get(
            f"http://{gateway.address}{back.path}?{urlencode(query)}",
            headers={"Cookie": f"workcoord_oidc={_cookie_value(flow_line)}"},
        )
    return Outcome(callback, _set_cookies(callback))


async def me(gateway: RunningGateway, outcome: Outcome) -> httpx.Response:
    cookie = outcome.cookies.get("workcoord_session")
    headers = {"Cookie": f"workcoord_session={_cookie_value(cookie)}"} if cookie else {}
    async with httpx.AsyncClient(timeout=30) as browser:
        return await browser.get(f"http://{gateway.address}/v1/me", headers=headers)


def assert_refused(outcome: Outcome, code: int = 401, message: str = "") -> dict[str, Any]:
    assert outcome.callback.status_code == code, outcome.callback.text
    body: dict[str, Any] = outcome.callback.json()
    assert body["code"] in (16, 7, 3), body  # UNAUTHENTICATED, PERMISSION_DENIED, INVALID
    assert message in body["message"], body
    # No session cookie was set; the flow cookie is cleared.
    assert "workcoord_session" not in outcome.cookies
    assert "workcoord_csrf" not in outcome.cookies
    return body


async def rpc_code(stack: Stack, id_token: str, nonce: str) -> Code:
    try:
        await sessions(stack.admin).ExchangeIdToken(
            session_pb2.ExchangeIdTokenRequest(id_token=id_token, nonce=nonce)
        )
    except WorkcoordError as err:
        assert id_token not in err.message
        return Code(err.code)
    return Code.OK


# ---------------------------------------------------------------------- tests


async def test_oidc_login_opens_a_session_for_the_provisioned_user(
    stack: Stack, gateway: RunningGateway, provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    user_id = await _user(stack, "Ada@Example.test")
    provider.email = "ADA@example.TEST"  # matched case-insensitively
    outcome = await browser_login(gateway)
    assert outcome.callback.status_code == 303, outcome.callback.text
    assert outcome.callback.headers["location"] == "/"
    session_line = outcome.cookies["workcoord_session"].lower()
    assert "httponly" in session_line and "samesite=strict" in session_line
    assert "httponly" not in outcome.cookies["workcoord_csrf"].lower()
    # The single-use flow cookie is cleared.
    assert "max-age=0" in outcome.cookies["workcoord_oidc"].lower()
    answer = await me(gateway, outcome)
    assert answer.status_code == 200, answer.text
    assert answer.json()["id"] == user_id and answer.json()["kind"] == "USER"
    assert answer.json().get("platformAdmin", False) is False
    # The session acts with the user's provisioned roles: a change without CSRF is refused,
    # one with it goes through to authorization (a plain user may not create orgs).
    csrf = _cookie_value(outcome.cookies["workcoord_csrf"])
    session = _cookie_value(outcome.cookies["workcoord_session"])
    async with httpx.AsyncClient(timeout=30) as browser:
        made = await browser.post(
            f"http://{gateway.address}/v1/orgs",
            json={"slug": "oidc-made", "displayName": "O"},
            headers={"Cookie": f"workcoord_session={session}", "X-CSRF-Token": csrf},
        )
    assert made.status_code == 403, made.text
    assert provider.token_calls == 1 and not provider.refused
    secrets_seen = [provider.client_secret, *provider.issued_tokens]
    for secret in secrets_seen:
        assert secret not in caplog.text
        assert secret not in outcome.callback.text


@pytest.mark.parametrize(
    ("next_path", "location"),
    [
        ("/o/acme/work-coordinator?x=1", "/o/acme/work-coordinator?x=1"),
        ("https://evil.example/o/acme", "/"),
        ("//evil.example", "/"),
        ("/\\evil.example", "/"),
    ],
)
async def test_oidc_login_returns_to_a_same_origin_next_only(
    stack: Stack, gateway: RunningGateway, provider: FakeProvider, next_path: str, location: str
) -> None:
    await _user(stack, "grace@example.test")
    provider.email = "grace@example.test"
    outcome = await browser_login(gateway, next_path=next_path)
    assert outcome.callback.status_code == 303, outcome.callback.text
    assert outcome.callback.headers["location"] == location
    assert "workcoord_session" in outcome.cookies


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("bad_signature", "bad signature"),
        ("wrong_audience", "another audience"),
        ("expired", "expired"),
        ("wrong_nonce", "nonce"),
        ("unverified_email", "not verified"),
        ("unknown_user", "no such user"),
        ("unknown_key", "unknown key"),
        ("no_email", "no email"),
        ("wrong_issuer", "another issuer"),
    ],
)
async def test_a_refused_id_token_opens_no_session(
    stack: Stack,
    gateway: RunningGateway,
    provider: FakeProvider,
    caplog: pytest.LogCaptureFixture,
    case: str,
    message: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    await _user(stack, "grace@example.test", platform_admin=True)
    provider.email = "grace@example.test"
    if case == "bad_signature":
        # Same key id, another private key: the signature does not verify.
        provider.signer = SigningKey("k1", "RS256", rsa_key("k1").private)
    elif case == "wrong_audience":
        provider.audience = ["someone-else"]
    elif case == "expired":
        provider.lifetime_seconds = -3600
    elif case == "wrong_nonce":
        provider.nonce = secrets.token_urlsafe(32)
    elif case == "unverified_email":
        provider.email_verified = False
    elif case == "unknown_user":
        provider.email = "nobody@example.test"
    elif case == "unknown_key":
        provider.signer = rsa_key("not-published")
    elif case == "no_email":
        provider.email = ""
    elif case == "wrong_issuer":
        provider.iss_claim = "https://evil.example.test"
    outcome = await browser_login(gateway)
    assert_refused(outcome, 401, message)
    assert provider.token_calls == 1
    assert (await me(gateway, outcome)).status_code == 401
    for secret in [provider.client_secret, *provider.issued_tokens]:
        assert secret not in caplog.text
        assert secret not in outcome.callback.text


async def test_a_state_mismatch_never_redeems_the_code(
    stack: Stack, gateway: RunningGateway, provider: FakeProvider
) -> None:
    await _user(stack, "lin@example.test")
    provider.email = "lin@example.test"
    outcome = await browser_login(gateway, tamper_state=True)
    assert_refused(outcome, 401, "state")
    assert provider.token_calls == 0
    # No flow cookie at all (a callback forged cross-site) is refused the same way.
    async with httpx.AsyncClient(timeout=30) as browser:
        bare = await browser.get(
            f"http://{gateway.address}/login/oidc/callback", params={"code": "c", "state": "s"}
        )
        assert bare.status_code == 401, bare.text
        forged = await browser.get(
            f"http://{gateway.address}/login/oidc/callback",
            params={"code": "c", "state": "s"},
            headers={"Cookie": "workcoord_oidc=eyJzIjoicyJ9.forged"},
        )
        assert forged.status_code == 401, forged.text
        missing = await browser.get(f"http://{gateway.address}/login/oidc/callback")
        assert missing.status_code == 400, missing.text
        denied = await browser.get(
            f"http://{gateway.address}/login/oidc/callback",
            params={"error": "access_denied", "state": "s"},
        )
        assert denied.status_code == 401, denied.text
    assert provider.token_calls == 0


async def test_rotated_and_es256_keys_are_fetched_on_an_unknown_kid(
    stack: Stack, gateway: RunningGateway, provider: FakeProvider, clock: TestClock
) -> None:
    await _user(stack, "ken@example.test")
    provider.email = "ken@example.test"
    assert (await browser_login(gateway)).callback.status_code == 303
    fetched = provider.jwks_calls
    # The provider rotates to an ES256 key; the coordinator refetches its JWKS on the unknown
    # kid (once the refetch pause has passed on the injected clock).
    provider.published = [ec_key("k2")]
    clock.advance(11)
    outcome = await browser_login(gateway)
    assert outcome.callback.status_code == 303, outcome.callback.text
    assert provider.jwks_calls == fetched + 1
    assert (await me(gateway, outcome)).status_code == 200
    # A token that names a key the provider never published does not trigger a refetch storm.
    provider.signer = rsa_key("k3")
    for _ in range(3):
        assert_refused(await browser_login(gateway), 401, "unknown key")
    assert provider.jwks_calls == fetched + 1


async def test_exchange_id_token_rpc_verifies_for_itself(
    stack: Stack, provider: FakeProvider
) -> None:
    """A caller holding a forged token cannot skip the gateway's flow: the coordinator checks."""
    await _user(stack, "eve@example.test", platform_admin=True)
    provider.email = "eve@example.test"
    forged = jwt.encode(
        {"iss": provider.issuer, "aud": CLIENT_ID, "sub": "x", "email": "eve@example.test"},
        "not-the-key-" + secrets.token_hex(16),
        algorithm="HS256",
    )
    assert await rpc_code(stack, forged, "n") == Code.UNAUTHENTICATED
    unsigned = (
        ".".join(
            base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()
            for part in ({"alg": "none"}, {"iss": provider.issuer, "aud": CLIENT_ID})
        )
        + "."
    )
    assert await rpc_code(stack, unsigned, "n") == Code.UNAUTHENTICATED
    # A valid token replayed with another nonce (not the flow it was issued for): refused.
    assert await rpc_code(stack, provider.id_token("n-0"), "n") == Code.UNAUTHENTICATED
    # Over-long input is INVALID_ARGUMENT at the edge.
    assert await rpc_code(stack, "x" * 20000, "n") == Code.INVALID_ARGUMENT
    good = provider.id_token("n-1")
    issued = await sessions(stack.admin).ExchangeIdToken(
        session_pb2.ExchangeIdTokenRequest(id_token=good, nonce="n-1")
    )
    assert issued.session_secret and issued.csrf_token


async def test_without_oidc_settings_the_routes_answer_unimplemented(
    pg_url: str, clock: TestClock
) -> None:
    plain = await start_stack("postgres", pg_url, None, clock=clock)
    gateway = await start_gateway_for(plain.address)
    try:
        assert await rpc_code(plain, "a.b.c", "n") == Code.UNIMPLEMENTED
        async with httpx.AsyncClient(timeout=30) as browser:
            answer = await browser.get(f"http://{gateway.address}/login/oidc")
        assert answer.status_code == 501, answer.text
        assert answer.json()["code"] == 12
    finally:
        await gateway.stop()
        await plain.close()
