"""workcoord gateway: REST (+ OpenAPI) and the WebSocket feed over the gRPC services.

Routes, JSON shapes and the OpenAPI document all derive from the ``google.api.http``
annotations and descriptors of ``workcoord.api.v1``; the gateway holds no domain logic.
"""

from __future__ import annotations

from workcoord.gateway.app import OPENAPI_PATH, build_app
from workcoord.gateway.openapi import build_openapi, openapi_document
from workcoord.gateway.routes import Route, RouteTable, load_routes
from workcoord.gateway.server import RunningGateway, main, start_gateway
from workcoord.gateway.upstream import Upstreams

__all__ = [
    "OPENAPI_PATH",
    "Route",
    "RouteTable",
    "RunningGateway",
    "Upstreams",
    "build_app",
    "build_openapi",
    "load_routes",
    "main",
    "openapi_document",
    "start_gateway",
]
