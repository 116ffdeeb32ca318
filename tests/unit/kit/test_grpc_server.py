from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from workcoord.kit.grpc_server import (
    TlsSettings,
    bound_port,
    build_server,
    client_channel,
    serve_until_signal,
)
from workcoord.kit.status import ErrorInterceptor


def _add_echo(servicer: Any, server: grpc.aio.Server) -> None:
    async def echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        return request

    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "kittest.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
            ),
        )
    )


async def test_server_health_reflection_and_shutdown() -> None:
    server = build_server(
        [(_add_echo, object())],
        ["kittest.Echo"],
        "127.0.0.1:0",
        [ErrorInterceptor()],
        tls=TlsSettings(),
    )
    port = bound_port(server)
    stop = asyncio.Event()
    stopped = asyncio.Event()

    async def on_stop() -> None:
        stopped.set()

    serving = asyncio.create_task(serve_until_signal([server], on_stop, grace_seconds=1, stop=stop))
    async with client_channel(f"127.0.0.1:{port}", tls=TlsSettings()) as channel:
        await channel.channel_ready()
        await asyncio.sleep(0.05)
        echo: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            "/kittest.Echo/Echo"
        )
        assert await echo(b"hi") == b"hi"
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", "kittest.Echo"):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        names = set()
        async for response in responses:
            names = {s.name for s in response.list_services_response.service}
        assert {"kittest.Echo", "grpc.health.v1.Health"} <= names
    stop.set()
    await asyncio.wait_for(serving, 5)
    assert stopped.is_set()


def test_tls_settings_from_env() -> None:
    tls = TlsSettings.from_env({"WORKCOORD_TLS_CERT_FILE": "/c", "WORKCOORD_TLS_KEY_FILE": "/k"})
    assert tls.server_enabled and tls.client_enabled
    assert not TlsSettings.from_env({}).server_enabled
