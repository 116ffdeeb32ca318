from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from workcoord.kit import metrics, telemetry


def test_tracing_disabled_returns_no_interceptors() -> None:
    tracing = telemetry.configure_tracing("kittest", enabled=False)
    assert list(tracing.server_interceptors) == [] and list(tracing.client_interceptors) == []


def test_tracing_without_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    tracing = telemetry.configure_tracing("kittest")
    assert len(tracing.server_interceptors) == 1
    assert len(tracing.client_interceptors) >= 1
    assert tracing.exporting is False  # the OTLP exporter package is not installed
    assert telemetry.configure_tracing("other") is tracing


def test_metrics_server_only_when_configured() -> None:
    assert metrics.start_metrics_server(None) is False
    metrics.BUS_PUBLISH_FAILURES.inc(0)
    assert REGISTRY.get_sample_value("workcoord_bus_publish_failures_total") is not None


async def test_trace_context_travels_over_grpc() -> None:
    import grpc
    import grpc.aio
    from opentelemetry import trace

    from workcoord.kit.errors import NotFound
    from workcoord.kit.grpc_server import TlsSettings, bound_port, build_server, client_channel
    from workcoord.kit.status import ErrorInterceptor, error_from_rpc

    tracing = telemetry.configure_tracing("kittest")

    async def trace_id(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return format(trace.get_current_span().get_span_context().trace_id, "032x").encode()

    async def missing(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        raise NotFound("no such lane")

    def add(servicer: object, server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "kittest.Trace",
                    {
                        "Id": grpc.unary_unary_rpc_method_handler(trace_id),
                        "Missing": grpc.unary_unary_rpc_method_handler(missing),
                    },
                ),
            )
        )

    server = build_server(
        [(add, None)],
        ["kittest.Trace"],
        "127.0.0.1:0",
        [*tracing.server_interceptors, ErrorInterceptor()],
        tls=TlsSettings(),
    )
    await server.start()
    try:
        async with client_channel(
            f"127.0.0.1:{bound_port(server)}", TlsSettings(), tracing.client_interceptors
        ) as channel:
            tracer = trace.get_tracer("kittest")
            with tracer.start_as_current_span("client") as span:
                call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                    "/kittest.Trace/Id"
                )
                got = await call(b"")
                expected = format(span.get_span_context().trace_id, "032x")
            assert got.decode() == expected
            missing_call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                "/kittest.Trace/Missing"
            )
            try:
                await missing_call(b"")
            except grpc.aio.AioRpcError as exc:
                err = error_from_rpc(exc)
            assert isinstance(err, NotFound) and err.message == "no such lane"
    finally:
        await server.stop(None)
