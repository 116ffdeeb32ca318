"""MCP sign-in by OAuth, end to end: the local fake provider of :mod:`tests.support.oidc_provider`
issues JWT access tokens, the real gateway publishes its Protected Resource Metadata (RFC 9728)
and points at it from its 401s, and the real coordinator (PostgreSQL) verifies each token and
maps it to the provisioned user, as OIDC browser sign-in maps an id_token.

The OAuth-only client is the official ``mcp`` SDK's ``OAuthClientProvider`` (authorization code
with PKCE, RFC 8707 ``resource``), holding no credential but its public client id; the test plays
the user's browser. The gateway's public name (``PUBLIC_HOST``) is routed to its ephemeral
address by the client's transport, so the resource URL the client checks is the configured one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, SecretStr

from tests.integration.tenancy.world import new_user
from tests.support.harness import Stack, TestClock, start_gateway_for, start_stack
from tests.support.mcp_agents import reason
from tests.support.oidc_provider import (
    CLIENT_ID,
    MCP_CLIENT_ID,
    FakeProvider,
    SigningKey,
    rsa_key,
    serve_provider,
)
from workcoord.api.v1 import admin_pb2
from workcoord.gateway.server import RunningGateway

pytestmark = [pytest.mark.pg, pytest.mark.xdist_group(name="oidc")]

PUBLIC_HOST = "workcoord.test"
RESOURCE = f"http://{PUBLIC_HOST}/mcp"
METADATA_URL = f"http://{PUBLIC_HOST}/.well-known/oauth-protected-resource/mcp"
_MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
_TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}


@pytest.fixture
def clock() -> TestClock:
    return TestClock(real_time=False)


@pytest.fixture
def provider(clock: TestClock) -> Iterator[FakeProvider]:
    with serve_provider(clock) as fake:
        fake.access_audience = RESOURCE
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
        oidc_audience=RESOURCE,
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


class PublicName(httpx2.AsyncBaseTransport):
    """Sends requests for ``PUBLIC_HOST`` to the gateway's real address, others as they are."""

    def __init__(self, gateway: str) -> None:
        self.host, port = gateway.rsplit(":", 1)
        self.port = int(port)
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.host == PUBLIC_HOST:
            request.url = request.url.copy_with(host=self.host, port=self.port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class Registered(TokenStorage):
    """The MCP client's storage: its pre-registered public client, and the tokens it gets."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=MCP_CLIENT_ID,
            redirect_uris=[AnyUrl("http://127.0.0.1:9/callback")],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code"],
            response_types=["code"],
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The user's browser: opens the authorization URL and reads the code it is sent back."""

    def __init__(self) -> None:
        self.visited: list[str] = []
        self._back: dict[str, str] = {}

    async def open(self, url: str) -> None:
        self.visited.append(url)
        async with httpx.AsyncClient(timeout=30) as browser:
            answer = await browser.get(url)
        assert answer.status_code == 302, answer.text
        self._back = {
            k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()
        }

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=self._back["code"], state=self._back.get("state"))


async def _post(gateway: RunningGateway, body: Any, token: str | None) -> httpx.Response:
    headers = dict(_MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(f"http://{gateway.address}/mcp", json=body, headers=headers)


async def _email(stack: Stack, user_id: str) -> str:
    found = await stack.admin.admin.GetUser(admin_pb2.GetUserRequest(user_id=user_id))
    return found.user.email


def _tool_json(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.structured_content
    body = result.structured_content
    assert isinstance(body, dict)
    return body


# ---------------------------------------------------------------------- tests


async def test_an_oauth_only_mcp_client_signs_its_user_in(
    stack: Stack, gateway: RunningGateway, provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    viewer = await new_user(stack, role=admin_pb2.OrgMember.Role.ORG_VIEWER)
    provider.email = (await _email(stack, viewer.user_id)).upper()  # matched case-insensitively
    browser, storage = Browser(), Registered()
    oauth = OAuthClientProvider(
        server_url=RESOURCE,
        client_metadata=OAuthClientMetadata(
            redirect_uris=storage.client.redirect_uris,
            token_endpoint_auth_method="none",
            grant_types=["authorization_code"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    http = httpx2.AsyncClient(auth=oauth, transport=PublicName(gateway.address), timeout=60.0)
    transport = streamable_http_client(RESOURCE, http_client=http)
    async with http, Client(transport) as client:
        tools = await client.list_tools()
        assert {"lease_work", "work_coordinators", "view"} <= {t.name for t in tools.tools}
        # The call carries the user's authority: their org's work coordinator, and (a viewer)
        # no right to lease its work.
        listed = _tool_json(await client.call_tool("work_coordinators", {}))
        ids = [c["coordinatorId"] for c in listed["workCoordinators"]]
        assert ids == [stack.coordinator_id], listed
        refused = await client.call_tool(
            "lease_work",
            {
                "coordinatorId": stack.coordinator_id,
                "workerId": "w",
                "workerClass": "machine",
                "maxItems": 1,
                "leaseSeconds": 30,
            },
        )
        assert refused.is_error
        assert reason(refused.structured_content or {}) == "PERMISSION_DENIED"
    # The client found the provider through the metadata and asked for this resource, with
    # the scopes that put the email in the token.
    (authorize,) = browser.visited
    asked = {k: v[0] for k, v in parse_qs(urlsplit(authorize).query).items()}
    assert authorize.startswith(f"{provider.issuer}/authorize?")
    assert asked["resource"] == RESOURCE
    assert {"openid", "email"} <= set(asked["scope"].split())
    (token_request,) = provider.token_requests
    assert token_request["resource"] == RESOURCE
    assert storage.tokens is not None
    access_token = storage.tokens.access_token
    assert jwt.decode(access_token, options={"verify_signature": False})["aud"] == RESOURCE
    for token in provider.issued_tokens:
        assert token not in caplog.text


async def test_discovery_by_hand_follows_the_spec(
    stack: Stack, gateway: RunningGateway, provider: FakeProvider
) -> None:
    """What an MCP client does, step by step: 401 → resource_metadata → metadata → the
    issuer's metadata → a token → tools/list."""
    admin = await new_user(stack, role=admin_pb2.OrgMember.Role.ORG_ADMIN)
    provider.email = await _email(stack, admin.user_id)
    refused = await _post(gateway, _INITIALIZE, None)
    assert refused.status_code == 401, refused.text
    challenge = refused.headers["www-authenticate"]
    assert challenge == f'Bearer realm="workcoord", resource_metadata="{METADATA_URL}"'
    # The body keeps its shape: a JSON-RPC error carrying the Status.
    assert refused.json()["error"]["message"].startswith("UNAUTHENTICATED: ")
    assert reason(refused.json()["error"]["data"]) == "UNAUTHENTICATED"
    async with httpx.AsyncClient(timeout=30) as http:
        documents = []
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            answer = await http.get(f"http://{gateway.address}{path}")
            assert answer.status_code == 200, answer.text
            assert answer.headers["access-control-allow-origin"] == "*"
            documents.append(answer.json())
        assert documents[0] == documents[1]
        metadata = documents[0]
        assert metadata["resource"] == RESOURCE
        assert metadata["authorization_servers"] == [provider.issuer]
        assert metadata["bearer_methods_supported"] == ["header"]
        assert {"openid", "email"} <= set(metadata["scopes_supported"])
        posted = await http.post(f"http://{gateway.address}/.well-known/oauth-protected-resource")
        assert posted.status_code == 405
        issuer = metadata["authorization_servers"][0]
        server = (await http.get(f"{issuer}/.well-known/openid-configuration")).json()
    assert server["issuer"] == issuer and "S256" in server["code_challenge_methods_supported"]
    # The token endpoint step (the SDK test above drives it through the provider's
    # endpoints); here the provider issues the token for the resource directly.
    token = provider.access_token(metadata["resource"])
    listed = await _post(gateway, _TOOLS_LIST, token)
    assert listed.status_code == 200, listed.text
    assert "lease_work" in {t["name"] for t in listed.json()["result"]["tools"]}
    # A work key keeps working beside OAuth.
    keyed = await _post(gateway, _TOOLS_LIST, stack.key_secret)
    assert keyed.status_code == 200, keyed.text


def _alg_none(claims: dict[str, Any]) -> str:
    parts = [{"alg": "none", "typ": "JWT"}, claims]
    return (
        ".".join(
            base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()
            for part in parts
        )
        + "."
    )


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("expired", "expired"),
        ("wrong_audience", "another audience"),
        ("client_id_audience", "another audience"),
        ("unknown_user", "no such user"),
        ("unverified_email", "not verified"),
        ("bad_signature", "bad signature"),
        ("another_issuer", "another issuer"),
        ("hs256_with_the_public_key", "unsupported signature algorithm"),
        ("alg_none", "unsupported signature algorithm"),
        ("not_yet_valid", "issued in the future"),
    ],
)
async def test_a_refused_access_token_is_a_401_pointing_at_the_metadata(
    stack: Stack,
    gateway: RunningGateway,
    provider: FakeProvider,
    caplog: pytest.LogCaptureFixture,
    case: str,
    why: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    admin = await new_user(stack, role=admin_pb2.OrgMember.Role.ORG_ADMIN)
    provider.email = await _email(stack, admin.user_id)
    now = int(provider.clock.now().timestamp())
    if case == "expired":
        token = provider.access_token(exp=now - 3600, iat=now - 7200)
    elif case == "wrong_audience":
        token = provider.access_token("https://someone-else.example/mcp")
    elif case == "client_id_audience":
        # With a resource audience configured, an id_token-like token for the client is not
        # an access token for this resource.
        token = provider.access_token(CLIENT_ID)
    elif case == "unknown_user":
        token = provider.access_token(email="nobody@example.test")
    elif case == "unverified_email":
        token = provider.access_token(email_verified=False)
    elif case == "bad_signature":
        provider.signer = SigningKey("k1", "RS256", rsa_key("k1").private)
        token = provider.access_token()
    elif case == "another_issuer":
        token = provider.access_token(iss="https://evil.example.test")
    elif case == "hs256_with_the_public_key":
        public = provider.published[0].private.public_key()
        pem = public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        claims = jwt.decode(provider.access_token(), options={"verify_signature": False})
        token = _hs256(claims, pem)
    elif case == "alg_none":
        token = _alg_none(jwt.decode(provider.access_token(), options={"verify_signature": False}))
    else:
        token = provider.access_token(nbf=now + 3600)
    answer = await _post(gateway, _TOOLS_LIST, token)
    assert answer.status_code == 401, answer.text
    assert answer.headers["www-authenticate"] == (
        f'Bearer realm="workcoord", resource_metadata="{METADATA_URL}", error="invalid_token"'
    )
    assert reason(answer.json()["error"]["data"]) == "UNAUTHENTICATED"
    assert why in answer.json()["error"]["message"], answer.text
    assert token not in answer.text
    assert token not in caplog.text


def _hs256(claims: dict[str, Any], key: bytes) -> str:
    """An HMAC-signed token keyed with the provider's public key (algorithm confusion),
    signed by hand: PyJWT itself refuses to use a PEM key as an HMAC secret."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = part(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    body = part(json.dumps(claims).encode())
    mac = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{part(mac)}"


async def test_a_token_carries_the_users_current_roles(
    stack: Stack, gateway: RunningGateway, provider: FakeProvider
) -> None:
    """Nothing about the user is kept from one call to the next: removed from the org, the
    same unexpired token no longer sees its work coordinator."""
    member = await new_user(stack, role=admin_pb2.OrgMember.Role.ORG_VIEWER)
    provider.email = await _email(stack, member.user_id)
    token = provider.access_token()
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "work_coordinators", "arguments": {}},
    }
    before = await _post(gateway, call, token)
    assert before.status_code == 200, before.text
    assert stack.coordinator_id in before.text
    await stack.admin.admin.RemoveOrgMember(
        admin_pb2.RemoveOrgMemberRequest(org_slug=stack.org, user_id=member.user_id)
    )
    after = await _post(gateway, call, token)
    assert after.status_code == 200, after.text
    assert stack.coordinator_id not in after.text


async def test_without_oidc_there_is_no_metadata_and_no_pointer_to_it(
    pg_url: str, clock: TestClock, provider: FakeProvider
) -> None:
    plain = await start_stack("postgres", pg_url, None, clock=clock)
    gateway = await start_gateway_for(plain.address)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            for path in (
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp",
            ):
                answer = await http.get(f"http://{gateway.address}{path}")
                assert answer.status_code == 404, answer.text
        refused = await _post(gateway, _INITIALIZE, None)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="workcoord"'
        # A JWT is no credential to a coordinator without OIDC.
        admin = await new_user(plain, role=admin_pb2.OrgMember.Role.ORG_ADMIN)
        provider.email = await _email(plain, admin.user_id)
        token = provider.access_token(secrets.token_hex(4))
        assert (await _post(gateway, _TOOLS_LIST, token)).status_code == 401
    finally:
        await gateway.stop()
        await plain.close()
