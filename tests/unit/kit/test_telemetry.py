from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent import futures
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from prometheus_client import REGISTRY

from workcoord.kit import metrics, telemetry


def test_tracing_disabled_returns_no_interceptors() -> None:
    tracing = telemetry.configure_tracing("kittest", enabled=False)
    assert list(tracing.server_interceptors) == [] and list(tracing.client_interceptors) == []


def test_exporters_come_from_the_environment() -> None:
    assert telemetry.exporter_names({}) is None
    assert telemetry.exporter_names({"OTEL_TRACES_EXPORTER": "none"}) == ()
    assert telemetry.exporter_names({"OTEL_TRACES_EXPORTER": "Console, otlp,console"}) == (
        "console",
        "otlp",
    )
    with pytest.raises(ValueError, match="unknown exporter zipkin"):
        telemetry.exporter_names({"OTEL_TRACES_EXPORTER": "zipkin"})


_TRACE_ONE_SPAN = """
import logging, sys
from opentelemetry import trace
from workcoord.kit.logging import configure_logging
from workcoord.kit.telemetry import configure_tracing

configure_logging("INFO", json=True, stream=sys.stderr)
tracing = configure_tracing("kittest", enabled=False)
assert tracing.enabled, "an exporter in OTEL_TRACES_EXPORTER turns tracing on"
with trace.get_tracer("kittest").start_as_current_span("one span"):
    logging.getLogger("kittest").info("inside")
tracing.provider.shutdown()
"""


def _run_traced(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "WORKCOORD_"))}
    return subprocess.run(
        [sys.executable, "-c", _TRACE_ONE_SPAN],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_console_exporter_prints_one_json_span_per_line() -> None:
    result = _run_traced({"OTEL_TRACES_EXPORTER": "console"})
    spans = [json.loads(line) for line in result.stdout.splitlines()]
    assert [span["name"] for span in spans] == ["one span"]
    logged = [json.loads(line) for line in result.stderr.splitlines() if '"inside"' in line]
    trace_id = spans[0]["context"]["trace_id"].removeprefix("0x")
    assert logged[0]["trace_id"] == trace_id


def test_otlp_exporter_sends_spans_to_the_collector() -> None:
    received: list[str] = []
    done = threading.Event()

    class Collector(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    received.extend(span.name for span in scope_spans.spans)
            done.set()
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        Collector(), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        _run_traced(
            {
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            }
        )
        assert done.wait(30)
    finally:
        server.stop(None)
    assert received == ["one span"]


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
