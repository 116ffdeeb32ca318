"""One OpenTelemetry span per SQL statement, a child of the RPC span that issued it.

Written by hand (some thirty lines on SQLAlchemy's cursor events) rather than with
opentelemetry-instrumentation-sqlalchemy: that instrumentor is a process-wide singleton that
instruments the first engine it is given and ignores later ones, while tests and embedded runs
start several coordinators, each with its own engine, in one process. Spans carry the statement
text with its placeholders, never the bound values (which may hold secrets' hashes or inputs).
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from sqlalchemy import event
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["trace_statements"]

_SPAN_ATTRIBUTE = "_workcoord_span"


def trace_statements(engine: AsyncEngine, provider: trace.TracerProvider) -> None:
    """Make every statement ``engine`` runs a client span (``SELECT``, ``INSERT`` …)."""
    tracer = provider.get_tracer("workcoord.coordinator.sql")
    sync_engine = engine.sync_engine
    system = "postgresql" if engine.dialect.name == "postgresql" else engine.dialect.name
    database = engine.url.database or ""

    @event.listens_for(sync_engine, "before_cursor_execute")
    def _start(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
        span = tracer.start_span(
            f"{verb} {database}".strip(),
            kind=SpanKind.CLIENT,
            attributes={
                "db.system": system,
                "db.name": database,
                "db.statement": statement,
            },
        )
        if context is not None:
            setattr(context, _SPAN_ATTRIBUTE, span)
        else:  # no execution context to carry it: a zero-length span still shows the call
            span.end()

    @event.listens_for(sync_engine, "after_cursor_execute")
    def _end(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        span = getattr(context, _SPAN_ATTRIBUTE, None)
        if span is not None:
            span.end()
            setattr(context, _SPAN_ATTRIBUTE, None)

    @event.listens_for(sync_engine, "handle_error")
    def _failed(exception_context: ExceptionContext) -> None:
        context = exception_context.execution_context
        span = getattr(context, _SPAN_ATTRIBUTE, None)
        if span is not None:
            span.set_status(
                Status(StatusCode.ERROR, type(exception_context.original_exception).__name__)
            )
            span.end()
            setattr(context, _SPAN_ATTRIBUTE, None)
