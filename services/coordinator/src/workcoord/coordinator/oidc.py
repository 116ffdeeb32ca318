"""OpenID Connect token verification: the coordinator, not the gateway, decides who is calling.

Two kinds of token of the one configured issuer are verified here:

- **id_tokens** (browser sign-in): the gateway runs the browser's authorization-code flow and
  hands the coordinator the id_token it got from the provider's token endpoint, with the nonce
  of that flow (``SessionService.ExchangeIdToken``). Checked: ``aud`` is the client id (and
  ``azp``), ``iat`` is present, ``nonce`` is the flow's.
- **access tokens** (MCP over OAuth, :meth:`OidcVerifier.access_token_email`): JWTs an MCP
  client obtained from the issuer and sends as its bearer credential. Checked: ``aud`` names
  the configured access-token audience (``WORKCOORD_OIDC_AUDIENCE``, default the client id).

For both, nothing the gateway says is trusted: the signature is checked against the issuer's
published keys (JWKS, found by discovery, cached briefly and refetched when a token names an
unknown key; RS256/ES256 only, the key's own algorithm: ``none`` and HMAC are refused), then
``iss``, ``sub``, ``exp``/``nbf``/``iat`` (a small leeway, on the injected clock). The identity
is the token's ``email``, which the provider must mark ``email_verified``: the same mapping to a
provisioned user for a browser session and for an MCP call.

No error, log line or exception message carries the token.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from workcoord.kit.clock import Clock
from workcoord.kit.errors import Code, Unauthenticated, WorkcoordError, generic_error
from workcoord.kit.oidc_discovery import HTTP_TIMEOUT_SECONDS, discovered_urls, discovery_url

__all__ = ["ALGORITHMS", "OidcIdentity", "OidcVerifier", "verifier_from_settings"]

_ID_TOKEN_CLAIMS = ("iss", "aud", "exp", "iat", "sub")
_ACCESS_TOKEN_CLAIMS = ("iss", "aud", "exp", "sub")

_log = logging.getLogger(__name__)

ALGORITHMS = frozenset({"RS256", "ES256"})
_LEEWAY_SECONDS = 60
_JWKS_TTL_SECONDS = 300.0
# A token naming an unknown key refetches the keys at most this often (no refetch storm).
_REFRESH_MIN_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class OidcIdentity:
    """What a verified id_token says about its human."""

    email: str
    subject: str


def _refused(why: str, kind: str = "id_token") -> Unauthenticated:
    return Unauthenticated(f"the {kind} was refused: {why}")


def _unavailable() -> WorkcoordError:
    return generic_error(Code.UNAVAILABLE, "the identity provider did not answer usably")


class OidcVerifier:
    """Verifies id_tokens of one issuer for one client id, and its access tokens for one
    audience (``access_audience``, default the client id)."""

    def __init__(
        self,
        issuer: str,
        client_id: str,
        clock: Clock,
        *,
        access_audience: str | None = None,
        leeway_seconds: int = _LEEWAY_SECONDS,
        jwks_ttl_seconds: float = _JWKS_TTL_SECONDS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        # ``iss`` must be the issuer as configured (some providers end it with a slash).
        self._issuers = sorted({issuer, self.issuer})
        self.client_id = client_id
        self.access_audience = access_audience or client_id
        self.clock = clock
        self.leeway = leeway_seconds
        self.jwks_ttl = jwks_ttl_seconds
        self._transport = transport
        self._jwks_uri: str | None = None
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ keys

    async def _get_json(self, client: httpx.AsyncClient, url: str) -> dict[str, Any]:
        try:
            response = await client.get(url)
        except httpx.HTTPError as exc:
            _log.warning("identity provider unreachable: %s", type(exc).__name__)
            raise _unavailable() from None
        if response.status_code != 200:
            _log.warning("identity provider answered HTTP %d", response.status_code)
            raise _unavailable()
        try:
            body = response.json()
        except ValueError:
            raise _unavailable() from None
        if not isinstance(body, dict):
            raise _unavailable()
        return body

    async def _refresh(self) -> None:
        async with httpx.AsyncClient(
            timeout=HTTP_TIMEOUT_SECONDS, transport=self._transport
        ) as client:
            if self._jwks_uri is None:
                discovery = await self._get_json(client, discovery_url(self.issuer))
                urls = discovered_urls(discovery, self.issuer, "jwks_uri")
                if urls is None:
                    _log.warning("identity provider discovery is unusable for %s", self.issuer)
                    raise _unavailable()
                (self._jwks_uri,) = urls
            document = await self._get_json(client, self._jwks_uri)
        keys: dict[str, jwt.PyJWK] = {}
        raw_keys = document.get("keys")
        for raw in raw_keys if isinstance(raw_keys, list) else ():
            if not isinstance(raw, dict) or raw.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(raw)
            except jwt.PyJWTError:
                continue  # a key type or curve we do not use
            if key.algorithm_name in ALGORITHMS:
                keys[str(raw.get("kid", ""))] = key
        self._keys = keys
        self._fetched_at = self.clock.monotonic()

    async def _key(self, kid: str, kind: str) -> jwt.PyJWK:
        async with self._lock:
            age = None if self._fetched_at is None else self.clock.monotonic() - self._fetched_at
            stale = age is None or age > self.jwks_ttl
            unknown = kid not in self._keys and not (not kid and len(self._keys) == 1)
            if stale or (unknown and (age is None or age > _REFRESH_MIN_SECONDS)):
                await self._refresh()
            if kid in self._keys:
                return self._keys[kid]
            if not kid and len(self._keys) == 1:
                return next(iter(self._keys.values()))
        raise _refused("signed with an unknown key", kind)

    # ------------------------------------------------------------------ verification

    async def verify(self, id_token: str, nonce: str) -> OidcIdentity:
        """The identity of a valid id_token, else UNAUTHENTICATED (never echoing the token)."""
        claims = await self._claims(id_token, "id_token", self.client_id, _ID_TOKEN_CLAIMS)
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        azp = claims.get("azp")
        if (len(audiences) > 1 or azp is not None) and azp != self.client_id:
            raise _refused("authorized for another party")
        token_nonce = claims.get("nonce")
        if not isinstance(token_nonce, str) or not secrets.compare_digest(
            token_nonce.encode(), nonce.encode()
        ):
            raise _refused("nonce mismatch")
        return _identity(claims, "id_token")

    def is_access_token(self, secret: str) -> bool:
        """Whether a bearer ``secret`` is a JWT (three dot-separated parts) rather than a
        workcoord secret (a prefix and URL-safe base64: never a dot)."""
        return secret.count(".") == 2

    async def access_token_email(self, access_token: str) -> str:
        """The verified email of a valid access token for :attr:`access_audience`, else
        UNAUTHENTICATED (never echoing the token); UNAVAILABLE when the keys cannot be had."""
        kind = "access token"
        claims = await self._claims(access_token, kind, self.access_audience, _ACCESS_TOKEN_CLAIMS)
        return _identity(claims, kind).email

    async def _claims(
        self, token: str, kind: str, audience: str, required: tuple[str, ...]
    ) -> dict[str, Any]:
        """The claims of ``token`` once its signature, issuer, audience and times check out."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _refused("not a signed JWT", kind) from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise _refused("unsupported signature algorithm", kind)
        key = await self._key(str(header.get("kid") or ""), kind)
        if key.algorithm_name != alg:
            raise _refused("the key does not match the algorithm", kind)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=audience,
                issuer=self._issuers,
                # Times are checked below against the injected clock.
                options={
                    "require": list(required),
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                },
            )
        except jwt.InvalidSignatureError:
            raise _refused("bad signature", kind) from None
        except jwt.InvalidAudienceError:
            raise _refused("issued for another audience", kind) from None
        except jwt.InvalidIssuerError:
            raise _refused("issued by another issuer", kind) from None
        except jwt.PyJWTError as exc:
            raise _refused(type(exc).__name__, kind) from None
        self._check_times(claims, kind)
        return claims

    def _check_times(self, claims: dict[str, Any], kind: str) -> None:
        now = self.clock.now().timestamp()
        try:
            exp = float(claims["exp"])
            iat = float(claims.get("iat", 0))
            nbf = float(claims.get("nbf", iat))
        except (TypeError, ValueError):
            raise _refused("malformed times", kind) from None
        if exp <= now - self.leeway:
            raise _refused("expired", kind)
        if iat > now + self.leeway or nbf > now + self.leeway:
            raise _refused("issued in the future", kind)


def _identity(claims: dict[str, Any], kind: str) -> OidcIdentity:
    """Who the verified ``claims`` name: their email, which the provider must have verified."""
    email = claims.get("email")
    if not isinstance(email, str) or not email or "@" not in email:
        raise _refused("no email claim", kind)
    if claims.get("email_verified") not in (True, "true"):
        raise _refused("the email is not verified by the provider", kind)
    return OidcIdentity(email=email.strip().lower(), subject=str(claims["sub"]))


def verifier_from_settings(
    issuer: str | None, client_id: str | None, clock: Clock, access_audience: str | None = None
) -> OidcVerifier | None:
    """The verifier when OIDC is configured (issuer and client id), else None."""
    if not issuer or not client_id:
        return None
    return OidcVerifier(issuer, client_id, clock, access_audience=access_audience)
