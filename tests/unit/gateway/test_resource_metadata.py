"""The Protected Resource Metadata the gateway publishes for ``/mcp`` (RFC 9728)."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from workcoord.gateway.mcp import MCP_PATH
from workcoord.gateway.resource_metadata import ProtectedResource
from workcoord.kit.settings import GatewaySettings

_OIDC: dict[str, Any] = {
    "oidc_issuer": "https://id.example.test/realms/w",
    "oidc_client_id": "workcoord-web",
    "oidc_client_secret": SecretStr("s3cret-value"),
    "oidc_redirect_url": "https://gw.example.test:8443/login/oidc/callback",
}


def test_the_public_urls_come_from_the_redirect_urls_origin() -> None:
    resource = ProtectedResource.from_settings(GatewaySettings(**_OIDC), MCP_PATH)
    assert resource is not None
    assert resource.resource == "https://gw.example.test:8443/mcp"
    assert resource.metadata_url == (
        "https://gw.example.test:8443/.well-known/oauth-protected-resource/mcp"
    )
    assert resource.paths == {
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    }
    assert resource.document() == {
        "resource": "https://gw.example.test:8443/mcp",
        "authorization_servers": ["https://id.example.test/realms/w"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["openid", "email", "profile"],
        "resource_name": "workcoord MCP",
    }
    assert "s3cret" not in repr(resource) + str(resource.document())
    assert resource.challenge(invalid_token=False) == (
        'Bearer realm="workcoord", resource_metadata="'
        'https://gw.example.test:8443/.well-known/oauth-protected-resource/mcp"'
    )
    assert resource.challenge(invalid_token=True).endswith(', error="invalid_token"')


def test_without_the_whole_oidc_configuration_there_is_none() -> None:
    assert ProtectedResource.from_settings(GatewaySettings(), MCP_PATH) is None
    partial = {k: v for k, v in _OIDC.items() if k != "oidc_client_secret"}
    assert ProtectedResource.from_settings(GatewaySettings(**partial), MCP_PATH) is None
