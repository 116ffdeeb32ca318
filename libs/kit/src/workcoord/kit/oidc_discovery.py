"""OpenID Connect discovery, as both the coordinator (JWKS for id_token checks) and the gateway
(authorization and token endpoints for the login flow) read it: the document is fetched from
:func:`discovery_url` and trusted only for its own issuer, with http(s) URLs where asked."""

from __future__ import annotations

from typing import Any

__all__ = ["DISCOVERY_PATH", "HTTP_TIMEOUT_SECONDS", "discovered_urls", "discovery_url"]

DISCOVERY_PATH = "/.well-known/openid-configuration"
# How long one request to the identity provider may take.
HTTP_TIMEOUT_SECONDS = 10.0


def discovery_url(issuer: str) -> str:
    """Where ``issuer`` (without a trailing slash) publishes its discovery document."""
    return issuer + DISCOVERY_PATH


def discovered_urls(document: dict[str, Any], issuer: str, *names: str) -> tuple[str, ...] | None:
    """The values of ``names`` in ``issuer``'s discovery ``document``, in that order; None when
    the document names another issuer (a trailing slash aside) or a value is not an http(s)
    URL."""
    if str(document.get("issuer", "")).rstrip("/") != issuer:
        return None
    urls = tuple(document.get(name) for name in names)
    if not all(isinstance(url, str) and url.startswith(("https://", "http://")) for url in urls):
        return None
    return tuple(str(url) for url in urls)
