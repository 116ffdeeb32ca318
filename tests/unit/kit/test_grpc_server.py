from __future__ import annotations

import asyncio
import socket
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from workcoord.kit.grpc_server import (
    LIVENESS_SERVICE,
    REFLECTION_V1_SERVICE,
    TlsSettings,
    bound_port,
    build_server,
    client_channel,
    serve_until_signal,
    set_serving,
    start_server,
)
from workcoord.kit.metrics import PROCESS_HEALTH
from workcoord.kit.startup import AddressInUse
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
    await asyncio.wait_for(serving, 60)
    assert stopped.is_set()


def test_tls_settings_from_env() -> None:
    tls = TlsSettings.from_env({"WORKCOORD_TLS_CERT_FILE": "/c", "WORKCOORD_TLS_KEY_FILE": "/k"})
    assert tls.server_enabled and tls.client_enabled
    assert not TlsSettings.from_env({}).server_enabled


async def test_reflection_answers_v1_clients_too() -> None:
    server = build_server(
        [(_add_echo, object())], ["kittest.Echo"], "127.0.0.1:0", tls=TlsSettings()
    )
    await start_server(server)
    try:
        async with client_channel(f"127.0.0.1:{bound_port(server)}", tls=TlsSettings()) as channel:
            # A v1 stub: the v1 protocol's messages are v1alpha's, under another service name.
            v1 = channel.stream_stream(
                f"/{REFLECTION_V1_SERVICE}/ServerReflectionInfo",
                request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
            )
            requests = [
                reflection_pb2.ServerReflectionRequest(list_services=""),
                reflection_pb2.ServerReflectionRequest(
                    file_containing_symbol="grpc.health.v1.Health"
                ),
                reflection_pb2.ServerReflectionRequest(
                    file_containing_symbol=REFLECTION_V1_SERVICE
                ),
            ]
            responses = [r async for r in v1(iter(requests))]
    finally:
        await server.stop(None)
    names = {s.name for s in responses[0].list_services_response.service}
    assert {"kittest.Echo", "grpc.health.v1.Health", REFLECTION_V1_SERVICE} <= names
    for answer in responses[1:]:
        assert not answer.HasField("error_response"), answer.error_response
        files = [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in answer.file_descriptor_response.file_descriptor_proto
        ]
        assert files
    v1_file = descriptor_pb2.FileDescriptorProto.FromString(
        responses[2].file_descriptor_response.file_descriptor_proto[0]
    )
    assert v1_file.package == "grpc.reflection.v1"
    assert v1_file.service[0].method[0].input_type == ".grpc.reflection.v1.ServerReflectionRequest"


async def test_a_busy_port_is_refused_never_shared() -> None:
    first = build_server(
        [(_add_echo, object())], ["kittest.Echo"], "127.0.0.1:0", tls=TlsSettings()
    )
    await start_server(first)
    port = bound_port(first)
    try:
        for address in (f"127.0.0.1:{port}", f"0.0.0.0:{port}"):
            with pytest.raises(AddressInUse, match=f"cannot listen on {address} \\(kittest\\)"):
                build_server([], [], address, tls=TlsSettings(), what="kittest")
        # Even a listener that asks for SO_REUSEPORT itself cannot share: ours never set it.
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            with pytest.raises(OSError, match="in use"):
                other.bind(("127.0.0.1", port))
    finally:
        await first.stop(None)


async def test_liveness_stays_serving_when_readiness_drops() -> None:
    server = build_server(
        [(_add_echo, object())], ["kittest.Echo"], "127.0.0.1:0", tls=TlsSettings()
    )
    await start_server(server)
    try:
        async with client_channel(f"127.0.0.1:{bound_port(server)}", tls=TlsSettings()) as channel:
            health = health_pb2_grpc.HealthStub(channel)

            async def status(name: str) -> int:
                reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
                return int(reply.status)

            serving = health_pb2.HealthCheckResponse.SERVING
            assert await status("") == serving and await status(LIVENESS_SERVICE) == serving
            await set_serving(server, serving=False)
            assert await status("") == health_pb2.HealthCheckResponse.NOT_SERVING
            assert await status("kittest.Echo") == health_pb2.HealthCheckResponse.NOT_SERVING
            assert await status(LIVENESS_SERVICE) == serving
            assert PROCESS_HEALTH.live and not PROCESS_HEALTH.ready
    finally:
        await server.stop(None)
