"""OpenTelemetry tracing: one TracerProvider per process and the gRPC interceptors that carry
context between services.

Tracing is on when ``WORKCOORD_OTEL_ENABLED`` is true or ``OTEL_TRACES_EXPORTER`` names an
exporter (``OTEL_SDK_DISABLED=true`` turns it off whatever else says). Exporters come from
``OTEL_TRACES_EXPORTER``, a comma-separated list of ``otlp`` (gRPC; endpoint, headers and TLS
from the standard ``OTEL_EXPORTER_OTLP_*`` variables), ``console`` (one JSON span per line on
stdout) and ``none``; unset, it is ``otlp`` when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and
none otherwise (spans are still made, so logs carry trace ids and context still propagates).
Service-specific instrumentation (the gateway's ASGI middleware, the coordinator's SQLAlchemy
engine) is installed by the services with :attr:`Tracing.provider`. Tracing trouble never stops
a service: a failed set-up is logged and tracing is off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

__all__ = ["Tracing", "configure_tracing", "current_tracing", "exporter_names"]

_log = logging.getLogger(__name__)

_KNOWN_EXPORTERS = ("otlp", "console", "none")


@dataclass(frozen=True)
class Tracing:
    """What :func:`configure_tracing` set up: interceptors to pass to grpc.aio, the provider."""

    server_interceptors: Sequence[Any] = field(default_factory=tuple)
    client_interceptors: Sequence[Any] = field(default_factory=tuple)
    provider: Any = None
    exporters: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        """Whether spans are made at all."""
        return self.provider is not None

    @property
    def exporting(self) -> bool:
        """Whether spans leave the process."""
        return bool(self.exporters)


_configured: Tracing | None = None


def exporter_names(env: dict[str, str] | None = None) -> tuple[str, ...] | None:
    """The exporters ``OTEL_TRACES_EXPORTER`` asks for; None when it is unset.

    Raises ``ValueError`` for a name this build does not provide.
    """
    source = env if env is not None else os.environ
    raw = source.get("OTEL_TRACES_EXPORTER", "").strip()
    if not raw:
        return None
    names = tuple(dict.fromkeys(n.strip().lower() for n in raw.split(",") if n.strip()))
    unknown = [n for n in names if n not in _KNOWN_EXPORTERS]
    if unknown:
        raise ValueError(
            f"OTEL_TRACES_EXPORTER: unknown exporter {', '.join(unknown)} "
            f"(known: {', '.join(_KNOWN_EXPORTERS)})"
        )
    return tuple(n for n in names if n != "none")


def current_tracing() -> Tracing:
    """The process's tracing set-up (empty when tracing is off or not configured yet)."""
    return _configured or Tracing()


def configure_tracing(service_name: str, enabled: bool = True) -> Tracing:
    """Install a TracerProvider for ``service_name`` and return the gRPC interceptors.

    ``enabled`` is ``WORKCOORD_OTEL_ENABLED``; an exporter named in ``OTEL_TRACES_EXPORTER``
    enables tracing too; a caller with tracing off gets no interceptors even if another part of
    the process traces. Safe to call more than once per process: the provider is global and
    the first call that enables tracing wins (``workcoord dev`` runs three services in one
    process, named after the first).
    """
    global _configured
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return Tracing()
    try:
        requested = exporter_names()
    except ValueError as exc:
        _log.warning("tracing disabled: %s", exc)
        return Tracing()
    if not enabled and not requested:
        return Tracing()
    if _configured is not None:
        return _configured
    if requested is None:
        requested = ("otlp",) if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") else ()
    try:
        _configured = _set_up(service_name, requested)
    except Exception:
        _log.warning("tracing disabled: set-up failed", exc_info=True)
        return Tracing()
    return _configured


def _set_up(service_name: str, exporters: tuple[str, ...]) -> Tracing:
    from opentelemetry.instrumentation.grpc import (
        aio_client_interceptors,
        aio_server_interceptor,
    )
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (read by Resource.create) win over ours.
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME", service_name)})
    provider = TracerProvider(resource=resource)
    for name in exporters:
        if name == "console":
            # One line per span, written as it ends: what someone watching a terminal wants.
            provider.add_span_processor(
                SimpleSpanProcessor(ConsoleSpanExporter(formatter=_one_line))
            )
        else:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _log.info("tracing on (%s), exporting to %s", service_name, ", ".join(exporters) or "nothing")
    return Tracing(
        server_interceptors=(
            aio_server_interceptor(tracer_provider=provider),  # type: ignore[no-untyped-call]
        ),
        client_interceptors=tuple(
            aio_client_interceptors(tracer_provider=provider)  # type: ignore[no-untyped-call]
        ),
        provider=provider,
        exporters=exporters,
    )


def _one_line(span: Any) -> str:
    return str(span.to_json(indent=None)) + os.linesep
