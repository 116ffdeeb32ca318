"""OpenTelemetry tracing: a TracerProvider per service and gRPC interceptors that carry context.

Spans are exported over OTLP only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set *and* an OTLP
exporter package is installed (it is not a dependency of the kit: deployments that want export
add it). Everything here is failure-tolerant: tracing trouble never stops a service.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

__all__ = ["Tracing", "configure_tracing"]

_log = logging.getLogger(__name__)

_OTLP_EXPORTERS = (
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
)


@dataclass(frozen=True)
class Tracing:
    """What :func:`configure_tracing` set up: interceptors to pass to grpc.aio."""

    server_interceptors: Sequence[Any] = field(default_factory=tuple)
    client_interceptors: Sequence[Any] = field(default_factory=tuple)
    provider: Any = None
    exporting: bool = False


_configured: Tracing | None = None


def configure_tracing(service_name: str, enabled: bool = True) -> Tracing:
    """Install a TracerProvider for ``service_name`` and return the gRPC interceptors.

    Safe to call more than once per process (the provider is global; the first call wins, as
    in embedded mode where three services share one process). Returns empty interceptors if
    tracing is disabled or cannot be set up.
    """
    global _configured
    if not enabled:
        return Tracing()
    if _configured is not None:
        return _configured
    try:
        from opentelemetry.instrumentation.grpc import (
            aio_client_interceptors,
            aio_server_interceptor,
        )
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
        exporter = _otlp_exporter()
        if exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        _configured = Tracing(
            server_interceptors=(
                aio_server_interceptor(tracer_provider=provider),  # type: ignore[no-untyped-call]
            ),
            client_interceptors=tuple(
                aio_client_interceptors(tracer_provider=provider)  # type: ignore[no-untyped-call]
            ),
            provider=provider,
            exporting=exporter is not None,
        )
    except Exception:
        _log.warning("tracing disabled: set-up failed", exc_info=True)
        return Tracing()
    return _configured


def _otlp_exporter() -> Any:
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    for module_name in _OTLP_EXPORTERS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        # The exporter reads its endpoint, headers and TLS settings from the OTEL_* variables.
        return module.OTLPSpanExporter()
    _log.warning(
        "OTEL_EXPORTER_OTLP_ENDPOINT is set but no OTLP exporter package is installed; "
        "spans are not exported"
    )
    return None
