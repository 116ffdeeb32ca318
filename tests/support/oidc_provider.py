"""A local fake OpenID Connect provider: a real HTTP server on 127.0.0.1 serving discovery,
JWKS, an authorization endpoint that redirects straight back with a code, and a token endpoint
that checks the client (the gateway's confidential client by its secret; public clients, as MCP
clients are, by PKCE alone) and answers a signed id_token and a signed JWT access token.

The access token's ``aud`` is the ``resource`` the client asked for (RFC 8707), else
:attr:`FakeProvider.access_audience`. Every token's claims can be bent by the test (signer,
audience, lifetime, email…) to exercise the coordinator's refusals.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from workcoord.kit.clock import Clock

__all__ = [
    "CLIENT_ID",
    "MCP_CLIENT_ID",
    "FakeProvider",
    "SigningKey",
    "ec_key",
    "rsa_key",
    "serve_provider",
]

CLIENT_ID = "workcoord-web"
"""The gateway's confidential client (browser sign-in)."""
MCP_CLIENT_ID = "workcoord-mcp-agent"
"""A public client (no secret, PKCE), as an MCP client is registered."""


@dataclass
class SigningKey:
    kid: str
    alg: str
    private: Any

    def jwk(self) -> dict[str, Any]:
        algorithm = RSAAlgorithm if self.alg == "RS256" else ECAlgorithm
        data: dict[str, Any] = json.loads(algorithm.to_jwk(self.private.public_key()))
        data.update(kid=self.kid, use="sig", alg=self.alg)
        return data


def rsa_key(kid: str) -> SigningKey:
    return SigningKey(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_key(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


@dataclass
class FakeProvider:
    """What the fake provider publishes and puts in the tokens it issues."""

    clock: Clock
    client_secret: str = field(default_factory=lambda: f"sk-oidc-{secrets.token_urlsafe(24)}")
    published: list[SigningKey] = field(default_factory=lambda: [rsa_key("k1")])
    signer: SigningKey | None = None  # default: the first published key
    email: str = ""
    email_verified: Any = True
    audience: Any = CLIENT_ID
    lifetime_seconds: int = 300
    nonce: str | None = None  # default: the one of the authentication request
    issuer: str = ""
    iss_claim: str | None = None  # default: the issuer
    # Access tokens: their audience when the client names no resource, and (None: the
    # resource, else this) an audience forced on every one.
    access_audience: str = CLIENT_ID
    forced_access_audience: str | None = None
    public_clients: frozenset[str] = frozenset({MCP_CLIENT_ID})
    # Records.
    grants: dict[str, dict[str, str]] = field(default_factory=dict)
    issued_tokens: list[str] = field(default_factory=list)
    token_calls: int = 0
    jwks_calls: int = 0
    refused: list[str] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)

    def _sign(self, claims: dict[str, Any]) -> str:
        signer = self.signer or self.published[0]
        token = jwt.encode(
            claims, signer.private, algorithm=signer.alg, headers={"kid": signer.kid}
        )
        self.issued_tokens.append(token)
        return token

    def _base_claims(self) -> dict[str, Any]:
        now = int(self.clock.now().timestamp())
        return {
            "iss": self.iss_claim if self.iss_claim is not None else self.issuer,
            "sub": "subject-1",
            "iat": now,
            "exp": now + self.lifetime_seconds,
            "email": self.email,
            "email_verified": self.email_verified,
        }

    def id_token(self, nonce: str | None) -> str:
        claims = {**self._base_claims(), "aud": self.audience}
        token_nonce = self.nonce if self.nonce is not None else nonce
        if token_nonce is not None:
            claims["nonce"] = token_nonce
        return self._sign(claims)

    def access_token(
        self, audience: Any = None, *, client_id: str = MCP_CLIENT_ID, **claims: Any
    ) -> str:
        """A JWT access token for ``audience`` (default :attr:`access_audience`); ``claims``
        override or add claims."""
        body = {
            **self._base_claims(),
            "aud": audience if audience is not None else self.access_audience,
            "client_id": client_id,
            "scope": "openid email profile",
            **claims,
        }
        return self._sign(body)


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _handler(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/.well-known/openid-configuration":
                base = provider.issuer
                self._json(
                    200,
                    {
                        "issuer": base,
                        "authorization_endpoint": f"{base}/authorize",
                        "token_endpoint": f"{base}/token",
                        "jwks_uri": f"{base}/jwks",
                        "response_types_supported": ["code"],
                        "grant_types_supported": ["authorization_code"],
                        "code_challenge_methods_supported": ["S256"],
                        "scopes_supported": ["openid", "email", "profile"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
                    },
                )
            elif url.path == "/jwks":
                provider.jwks_calls += 1
                self._json(200, {"keys": [k.jwk() for k in provider.published]})
            elif url.path == "/authorize":
                known = {CLIENT_ID, *provider.public_clients}
                if (
                    query.get("response_type") != "code"
                    or query.get("client_id") not in known
                    or query.get("code_challenge_method") != "S256"
                    or not query.get("code_challenge")
                    or "openid" not in query.get("scope", "").split()
                ):
                    provider.refused.append("authorize")
                    self._json(400, {"error": "invalid_request"})
                    return
                code = secrets.token_urlsafe(16)
                provider.grants[code] = query
                back = urlencode({"code": code, "state": query["state"]})
                self.send_response(302)
                self.send_header("Location", f"{query['redirect_uri']}?{back}")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            if urlsplit(self.path).path != "/token":
                self._json(404, {"error": "not_found"})
                return
            provider.token_calls += 1
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            provider.token_requests.append(form)
            client = self._client(form)
            if client is None:
                provider.refused.append("client")
                self._json(401, {"error": "invalid_client"})
                return
            grant = provider.grants.pop(form.get("code", ""), None)
            if (
                grant is None
                or grant["client_id"] != client
                or form.get("grant_type") != "authorization_code"
                or form.get("redirect_uri") != grant["redirect_uri"]
                or _challenge(form.get("code_verifier", "")) != grant["code_challenge"]
            ):
                provider.refused.append("grant")
                self._json(400, {"error": "invalid_grant"})
                return
            audience = provider.forced_access_audience or grant.get("resource")
            self._json(
                200,
                {
                    "access_token": provider.access_token(audience, client_id=client),
                    "token_type": "Bearer",
                    "expires_in": provider.lifetime_seconds,
                    "scope": grant.get("scope", ""),
                    "id_token": provider.id_token(grant.get("nonce")),
                },
            )

        def _client(self, form: dict[str, str]) -> str | None:
            """The authenticated client: the confidential one by HTTP Basic, a public one by
            its id alone (its proof is the PKCE verifier)."""
            expected = base64.b64encode(f"{CLIENT_ID}:{provider.client_secret}".encode()).decode()
            authorization = self.headers.get("Authorization")
            if authorization is not None:
                return CLIENT_ID if authorization == f"Basic {expected}" else None
            claimed = form.get("client_id", "")
            return claimed if claimed in provider.public_clients else None

    return Handler


@contextmanager
def serve_provider(clock: Clock) -> Iterator[FakeProvider]:
    """A fake provider serving on a free loopback port for the block's duration."""
    fake = FakeProvider(clock)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.issuer = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
