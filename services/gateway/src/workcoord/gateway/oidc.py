"""OpenID Connect login for production (authorization-code flow with PKCE).

- ``GET /login/oidc``: discovers the provider (``{issuer}/.well-known/openid-configuration``,
  cached), and redirects the browser to its authorization endpoint with a fresh ``state``,
  ``nonce`` and PKCE S256 challenge. The three, and the page to return to (``?next=``, checked
  by :func:`~workcoord.gateway.return_path.return_path`), are kept in the ``workcoord_oidc`` cookie:
  HttpOnly, SameSite=Lax (it must come back on the provider's top-level redirect), scoped to
  ``/login/oidc``, short-lived, and HMAC-signed with a key derived from the client secret so a
  planted cookie is refused.
- ``GET /login/oidc/callback?code&state``: checks ``state`` against the cookie, exchanges the
  code at the token endpoint (client id and secret, PKCE verifier), and hands the id_token and
  nonce to the coordinator's ``SessionService.ExchangeIdToken``. The coordinator verifies the
  token itself and maps it to a provisioned user; the gateway then sets the same session and
  CSRF cookies as ``/login?code=…`` and redirects to the flow's return path (``/`` by
  default). The return path travels only inside the sealed cookie that ``state`` is checked
  against, so a callback cannot be pointed anywhere else.

The gateway decides nothing about who may log in. It never logs nor echoes the client secret,
the authorization code or the tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, urlencode

import httpx
from starlette.requests import Request
from starlette.responses import Response

from workcoord.api.v1 import session_pb2
from workcoord.gateway.errors import make_status, status_response
from workcoord.gateway.return_path import NEXT_PARAM, return_path
from workcoord.gateway.session import no_store, open_session
from workcoord.gateway.upstream import Upstreams
from workcoord.kit.errors import Code
from workcoord.kit.oidc_discovery import HTTP_TIMEOUT_SECONDS, discovered_urls, discovery_url
from workcoord.kit.settings import GatewaySettings

__all__ = ["OIDC_CALLBACK_PATH", "OIDC_COOKIE", "OIDC_LOGIN_PATH", "SCOPES", "OidcLogin"]

_log = logging.getLogger(__name__)

OIDC_LOGIN_PATH = "/login/oidc"
OIDC_CALLBACK_PATH = "/login/oidc/callback"
OIDC_COOKIE = "workcoord_oidc"
# What the sign-in asks for, and what MCP clients are told to ask for: the email claim is how
# a token names its user.
SCOPES = ("openid", "email", "profile")
_FLOW_SECONDS = 600
_DISCOVERY_TTL_SECONDS = 3600.0
_MAX_PARAM = 2048


@dataclass(frozen=True, slots=True)
class _Provider:
    authorization_endpoint: str
    token_endpoint: str
    basic_auth: bool


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _refused(message: str) -> Response:
    return no_store(status_response(make_status(Code.UNAUTHENTICATED, message)))


def _unavailable() -> Response:
    return no_store(
        status_response(
            make_status(Code.UNAVAILABLE, "the identity provider is unavailable, try again later")
        )
    )


class OidcLogin:
    """The gateway's half of OIDC login (configured: issuer, client id and secret, redirect)."""

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str,
        redirect_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.client_id = client_id
        self._client_secret = client_secret
        self.redirect_url = redirect_url
        self._secure = redirect_url.startswith("https://")
        self._key = hashlib.sha256(b"workcoord-oidc-flow\0" + client_secret.encode()).digest()
        self._transport = transport
        self._provider: _Provider | None = None
        self._provider_at = 0.0

    def __repr__(self) -> str:
        return f"OidcLogin(issuer={self.issuer!r}, client_id={self.client_id!r})"

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> OidcLogin | None:
        """The OIDC login when all four settings are present, else None (OIDC login off)."""
        if not (
            settings.oidc_issuer
            and settings.oidc_client_id
            and settings.oidc_client_secret is not None
            and settings.oidc_redirect_url
        ):
            return None
        return cls(
            settings.oidc_issuer,
            settings.oidc_client_id,
            settings.oidc_client_secret.get_secret_value(),
            settings.oidc_redirect_url,
        )

    # ------------------------------------------------------------------ provider

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS, transport=self._transport)

    async def _discover(self) -> _Provider | None:
        now = time.monotonic()
        if self._provider is not None and now - self._provider_at < _DISCOVERY_TTL_SECONDS:
            return self._provider
        try:
            async with self._client() as client:
                answer = await client.get(discovery_url(self.issuer))
            document = answer.json() if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            _log.warning("OIDC discovery failed: %s", type(exc).__name__)
            return None
        if not isinstance(document, dict):
            _log.warning("OIDC discovery answered HTTP %d", answer.status_code)
            return None
        urls = discovered_urls(document, self.issuer, "authorization_endpoint", "token_endpoint")
        if urls is None:
            _log.warning("OIDC discovery document is unusable for issuer %s", self.issuer)
            return None
        authorization, token = urls
        methods = document.get("token_endpoint_auth_methods_supported")
        basic = not isinstance(methods, list) or "client_secret_basic" in methods
        self._provider = _Provider(authorization, token, basic)
        self._provider_at = now
        return self._provider

    # ------------------------------------------------------------------ flow cookie

    def _seal(self, flow: dict[str, Any]) -> str:
        payload = _b64(json.dumps(flow, separators=(",", ":")).encode())
        mac = _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())
        return f"{payload}.{mac}"

    def _open(self, sealed: str) -> dict[str, Any] | None:
        payload, _, mac = sealed.partition(".")
        expected = _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())
        if not mac or not hmac.compare_digest(mac, expected):
            return None
        try:
            flow = json.loads(_unb64(payload))
        except ValueError:
            return None
        if not isinstance(flow, dict):
            return None
        started = flow.get("t")
        if not isinstance(started, int) or not 0 <= time.time() - started <= _FLOW_SECONDS:
            return None
        if not all(isinstance(flow.get(k), str) for k in ("s", "n", "v", "r")):
            return None
        return flow

    # ------------------------------------------------------------------ endpoints

    async def start(self, request: Request) -> Response:
        """``GET /login/oidc``: redirect to the provider with state, nonce and PKCE; the
        return path (``?next=``) is sealed with them."""
        provider = await self._discover()
        if provider is None:
            return _unavailable()
        state = secrets.token_urlsafe(32)
        nonce = secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(48)
        challenge = _b64(hashlib.sha256(verifier.encode()).digest())
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": self.redirect_url,
                "scope": " ".join(SCOPES),
                "state": state,
                "nonce": nonce,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
        separator = "&" if "?" in provider.authorization_endpoint else "?"
        response = Response(
            status_code=303,
            headers={"Location": f"{provider.authorization_endpoint}{separator}{query}"},
        )
        back = return_path(request.query_params.get(NEXT_PARAM))
        response.set_cookie(
            OIDC_COOKIE,
            self._seal({"s": state, "n": nonce, "v": verifier, "r": back, "t": int(time.time())}),
            max_age=_FLOW_SECONDS,
            path=OIDC_LOGIN_PATH,
            secure=self._secure,
            httponly=True,
            samesite="lax",
        )
        return no_store(response)

    async def callback(self, request: Request, upstreams: Upstreams | None) -> Response:
        """``GET /login/oidc/callback``: check state, redeem the code, open a session."""
        response = await self._callback(request, upstreams)
        # The flow is single-use whatever happened.
        response.delete_cookie(
            OIDC_COOKIE, path=OIDC_LOGIN_PATH, secure=self._secure, httponly=True, samesite="lax"
        )
        return response

    async def _callback(self, request: Request, upstreams: Upstreams | None) -> Response:
        params = request.query_params
        if params.get("error"):
            return _refused("the identity provider did not log you in")
        code = params.get("code", "")
        state = params.get("state", "")
        if not code or not state or len(code) > _MAX_PARAM or len(state) > _MAX_PARAM:
            return no_store(
                status_response(
                    make_status(Code.INVALID_ARGUMENT, "the callback needs code and state")
                )
            )
        sealed = request.cookies.get(OIDC_COOKIE, "")
        flow = self._open(sealed) if sealed else None
        if flow is None or not hmac.compare_digest(str(flow["s"]), state):
            return _refused("the login state does not match: start again at /login/oidc")
        if upstreams is None:
            return no_store(
                status_response(
                    make_status(Code.UNAVAILABLE, "the gateway is not connected to its upstreams")
                )
            )
        provider = await self._discover()
        if provider is None:
            return _unavailable()
        id_token = await self._redeem(provider, code, str(flow["v"]))
        if isinstance(id_token, Response):
            return id_token
        return await open_session(
            upstreams,
            session_pb2.ExchangeIdTokenRequest(id_token=id_token, nonce=str(flow["n"])),
            secure=self._secure or request.url.scheme == "https",
            # Checked again: the cookie is ours (signed), but the rule may have tightened.
            location=return_path(str(flow["r"])),
        )

    async def _redeem(self, provider: _Provider, code: str, verifier: str) -> str | Response:
        """The id_token for ``code`` from the token endpoint, or the error response."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_url,
            "code_verifier": verifier,
        }
        headers = {"Accept": "application/json"}
        if provider.basic_auth:
            # RFC 6749 2.3.1: both parts form-encoded before Basic encoding.
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self._client_secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["client_id"] = self.client_id
            form["client_secret"] = self._client_secret
        try:
            async with self._client() as client:
                answer = await client.post(
                    provider.token_endpoint,
                    data=form,
                    headers=headers,
                )
        except httpx.HTTPError as exc:
            _log.warning("OIDC token endpoint unreachable: %s", type(exc).__name__)
            return _unavailable()
        if answer.status_code in (400, 401):
            return _refused("the identity provider refused the authorization code")
        if answer.status_code != 200:
            _log.warning("OIDC token endpoint answered HTTP %d", answer.status_code)
            return _unavailable()
        try:
            body = answer.json()
        except ValueError:
            return _unavailable()
        id_token = body.get("id_token") if isinstance(body, dict) else None
        if not isinstance(id_token, str) or not id_token:
            return _refused("the identity provider returned no id_token")
        return id_token
