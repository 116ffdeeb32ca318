"""The issuer's access tokens as a user's bearer credential: :class:`OidcVerifier`'s
``access_token_email`` (over an in-memory HTTP transport serving discovery and JWKS) and the
engine's ``authenticate`` mapping a verified email to the provisioned user with current roles."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from workcoord.coordinator.domain.auth import OrgRole, PrincipalKind
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import AddOrgMemberInput, CreateUserInput
from workcoord.coordinator.oidc import OidcVerifier
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.bus import InProcessBus
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import Code, Unauthenticated, WorkcoordError

from .harness import ADMIN, make_world

ISSUER = "https://id.example.test"
CLIENT_ID = "workcoord-web"
RESOURCE = "https://workcoord.example.test/mcp"

_RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
_EC = ec.generate_private_key(ec.SECP256R1())


def _jwk(private: Any, kid: str) -> dict[str, Any]:
    algorithm = RSAAlgorithm if isinstance(private, rsa.RSAPrivateKey) else ECAlgorithm
    data: dict[str, Any] = json.loads(algorithm.to_jwk(private.public_key()))
    data.update(kid=kid, use="sig", alg="RS256" if algorithm is RSAAlgorithm else "ES256")
    return data


def _provider(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/.well-known/openid-configuration":
        return httpx.Response(200, json={"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks"})
    if request.url.path == "/jwks":
        return httpx.Response(200, json={"keys": [_jwk(_RSA, "r1"), _jwk(_EC, "e1")]})
    return httpx.Response(404)


def _verifier(clock: ManualClock, audience: str | None = RESOURCE) -> OidcVerifier:
    return OidcVerifier(
        ISSUER,
        CLIENT_ID,
        clock,
        access_audience=audience,
        transport=httpx.MockTransport(_provider),
    )


def _token(clock: ManualClock, *, key: Any = _RSA, kid: str = "r1", **claims: Any) -> str:
    now = int(clock.now().timestamp())
    body = {
        "iss": ISSUER,
        "sub": "s-1",
        "aud": RESOURCE,
        "iat": now,
        "exp": now + 300,
        "email": "Ada@Example.test",
        "email_verified": True,
        **claims,
    }
    body = {k: v for k, v in body.items() if v is not None}
    alg = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
    return jwt.encode(body, key, algorithm=alg, headers={"kid": kid})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


async def test_a_valid_access_token_names_its_verified_email(clock: ManualClock) -> None:
    verifier = _verifier(clock)
    assert await verifier.access_token_email(_token(clock)) == "ada@example.test"
    # ES256 too; an audience list naming the resource; no iat (RFC 9068 asks it, not all do).
    es = _token(clock, key=_EC, kid="e1", aud=["other", RESOURCE], iat=None)
    assert await verifier.access_token_email(es) == "ada@example.test"
    # Default audience: the client id.
    by_client = _verifier(clock, audience=None)
    assert await by_client.access_token_email(_token(clock, aud=CLIENT_ID)) == "ada@example.test"


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"aud": CLIENT_ID}, "another audience"),
        ({"iss": "https://evil.example.test"}, "another issuer"),
        ({"exp": None}, "MissingRequiredClaimError"),
        ({"sub": None}, "MissingRequiredClaimError"),
        ({"email_verified": False}, "not verified"),
        ({"email": None}, "no email"),
    ],
)
async def test_a_token_failing_a_claim_is_refused(
    clock: ManualClock, claims: dict[str, Any], why: str
) -> None:
    token = _token(clock, **claims)
    with pytest.raises(Unauthenticated, match=why) as refused:
        await _verifier(clock).access_token_email(token)
    assert token not in str(refused.value)
    assert "access token" in str(refused.value)


async def test_times_are_the_injected_clocks_with_a_small_leeway(clock: ManualClock) -> None:
    verifier = _verifier(clock)
    token = _token(clock)
    clock.advance(300 + 59)
    assert await verifier.access_token_email(token) == "ada@example.test"
    clock.advance(2)
    with pytest.raises(Unauthenticated, match="expired"):
        await verifier.access_token_email(token)
    later = _token(clock, nbf=int(clock.now().timestamp()) + 120)
    with pytest.raises(Unauthenticated, match="in the future"):
        await verifier.access_token_email(later)


async def test_none_hmac_and_a_key_of_another_type_are_refused(clock: ManualClock) -> None:
    verifier = _verifier(clock)
    claims = jwt.decode(_token(clock), options={"verify_signature": False})
    payload = _b64(json.dumps(claims).encode())
    unsigned = f"{_b64(json.dumps({'alg': 'none', 'kid': 'r1'}).encode())}.{payload}."
    pem = _RSA.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    head = _b64(json.dumps({"alg": "HS256", "kid": "r1"}).encode())
    mac = hmac.new(pem, f"{head}.{payload}".encode(), hashlib.sha256).digest()
    confused = f"{head}.{payload}.{_b64(mac)}"
    # ES256 claimed for the RSA key's kid.
    mismatched = _token(clock, key=_EC, kid="r1")
    for token, why in (
        (unsigned, "unsupported signature algorithm"),
        (confused, "unsupported signature algorithm"),
        (mismatched, "does not match the algorithm"),
        ("not-a.jwt.at-all", "not a signed JWT"),
    ):
        with pytest.raises(Unauthenticated, match=why):
            await verifier.access_token_email(token)


async def test_the_engine_maps_an_access_token_to_the_user_with_current_roles(
    clock: ManualClock,
) -> None:
    engine = Engine(MemoryStore(clock), InProcessBus(), clock, access_tokens=_verifier(clock))
    world = await make_world(engine)
    user = await engine.membership.create_user(
        ADMIN, CreateUserInput("ada@example.test", "Ada", platform_admin=False, verified=True)
    )
    await engine.membership.add_org_member(
        ADMIN, AddOrgMemberInput(world.org_slug, user.user_id, OrgRole.ORG_VIEWER)
    )
    token = _token(clock)
    principal = await engine.credentials.authenticate(token)
    assert (principal.kind, principal.id) == (PrincipalKind.USER, user.user_id)
    assert principal.org_roles == {world.org_slug: OrgRole.ORG_VIEWER}
    # Read again on every call: a role change applies to the same token at once.
    await engine.membership.add_org_member(
        ADMIN, AddOrgMemberInput(world.org_slug, user.user_id, OrgRole.ORG_ADMIN)
    )
    assert (await engine.credentials.authenticate(token)).org_roles == {
        world.org_slug: OrgRole.ORG_ADMIN
    }
    # An email no user has is no one; a workcoord secret still resolves the usual way.
    with pytest.raises(Unauthenticated, match="no such user"):
        await engine.credentials.authenticate(_token(clock, email="nobody@example.test"))
    with pytest.raises(Unauthenticated, match="unknown credential"):
        await engine.credentials.authenticate("wck_not-a-jwt")


async def test_without_a_verifier_a_jwt_is_an_unknown_credential(clock: ManualClock) -> None:
    engine = Engine(MemoryStore(clock), InProcessBus(), clock)
    with pytest.raises(WorkcoordError) as refused:
        await engine.credentials.authenticate(_token(clock))
    assert refused.value.code == Code.UNAUTHENTICATED
    assert "unknown credential" in refused.value.message
