"""OAuth 2.0 Protected Resource Metadata (RFC 9728) for ``/mcp``, as MCP's authorization spec
asks of a server whose users sign in with an authorization server.

With OpenID Connect configured (:meth:`ProtectedResource.from_settings`) the gateway serves the
metadata document at ``/.well-known/oauth-protected-resource/mcp`` (the path-suffixed form
RFC 9728 §3.1 builds for the resource ``https://<gateway>/mcp``, which MCP clients probe first)
and at ``/.well-known/oauth-protected-resource``. It names the resource, the OIDC issuer as its
one authorization server, ``bearer_methods_supported: ["header"]`` and the scopes that make the
issuer put the user's email in its tokens. ``/mcp`` refusing a request for its credential points
there: ``WWW-Authenticate: Bearer resource_metadata="<absolute URL of the document>"``.

The public URLs are built from ``WORKCOORD_OIDC_REDIRECT_URL`` (its scheme and host are the
gateway's public origin), never from a request's Host header. The gateway only publishes where
tokens come from: the coordinator verifies every access token it is sent (signature, issuer,
audience, times) and maps it to a provisioned user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import Response

from workcoord.gateway.errors import json_response, make_status, status_response
from workcoord.gateway.oidc import SCOPES, OidcLogin
from workcoord.kit.errors import Code
from workcoord.kit.settings import GatewaySettings

__all__ = ["RESOURCE_METADATA_PATH", "ProtectedResource"]

RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
_METADATA_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class ProtectedResource:
    """What the gateway publishes about the resource at ``resource`` (``…/mcp``)."""

    issuer: str
    resource: str
    metadata_url: str
    paths: frozenset[str]

    @classmethod
    def from_settings(cls, settings: GatewaySettings, path: str) -> ProtectedResource | None:
        """The metadata of the resource served at ``path`` when OIDC is configured on the
        gateway (issuer, client id and secret, redirect URL), else None (no metadata routes)."""
        if OidcLogin.from_settings(settings) is None:
            return None
        assert settings.oidc_issuer and settings.oidc_redirect_url
        public = urlsplit(settings.oidc_redirect_url)
        origin = f"{public.scheme}://{public.netloc}"
        suffixed = RESOURCE_METADATA_PATH + path
        return cls(
            # As configured: clients compare it with the issuer the provider's metadata names.
            issuer=settings.oidc_issuer,
            resource=origin + path,
            metadata_url=origin + suffixed,
            paths=frozenset({RESOURCE_METADATA_PATH, suffixed}),
        )

    def document(self) -> dict[str, Any]:
        """The RFC 9728 metadata document."""
        return {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": list(SCOPES),
            "resource_name": "workcoord MCP",
        }

    def response(self, method: str) -> Response:
        """The answer to ``method`` on a metadata path: the document (public: any origin may
        read it, as browser-based MCP clients do), or 405."""
        if method not in ("GET", "HEAD"):
            status = make_status(
                Code.UNIMPLEMENTED,
                f"method {method} is not allowed here",
                reason="METHOD_NOT_ALLOWED",
            )
            return status_response(status, http_status=405, headers={"Allow": "GET"})
        return json_response(
            200,
            self.document(),
            {
                "Cache-Control": f"public, max-age={_METADATA_SECONDS}",
                "Access-Control-Allow-Origin": "*",
            },
        )

    def challenge(self, *, invalid_token: bool) -> str:
        """The ``WWW-Authenticate`` value of a 401 from ``/mcp``: where the metadata is, and
        (RFC 6750 §3.1) ``error="invalid_token"`` when a credential was sent but refused."""
        error = ', error="invalid_token"' if invalid_token else ""
        return f'Bearer realm="workcoord", resource_metadata="{self.metadata_url}"{error}'
