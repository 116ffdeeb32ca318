"""Traces join up: one REST call is one trace from the gateway's server span through the gRPC
client and server spans to the coordinator's SQL statements on PostgreSQL, and one recovery
pass is one trace down to the SQL of every coordinator it maintained. Spans are recorded in
memory from the process's tracer provider (the services run in-process, tracing on)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import SpanKind
from pydantic import SecretStr

from tests.support.harness import TestClock
from workcoord.coordinator.server import RunningCoordinator, start_coordinator
from workcoord.gateway.server import RunningGateway, start_gateway
from workcoord.kit.settings import CoordinatorSettings, GatewaySettings, RecoverySettings
from workcoord.kit.telemetry import configure_tracing
from workcoord.recovery.server import RunningRecovery, start_recovery

pytestmark = [pytest.mark.pg]


class Recorder(SpanProcessor):
    """Keeps the spans that end while it records (the provider outlives this test)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self.recording = False
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        if self.recording:
            with self._lock:
                self.spans.append(span)

    def trace_of(self, root: ReadableSpan) -> list[ReadableSpan]:
        trace_id = root.context.trace_id
        return [s for s in self.spans if s.context.trace_id == trace_id]


@dataclass
class Traced:
    coordinator: RunningCoordinator
    recovery: RunningRecovery
    gateway: RunningGateway
    admin: httpx.AsyncClient
    recorder: Recorder


@pytest.fixture
async def traced(pg_url: str) -> AsyncIterator[Traced]:
    tracing = configure_tracing("workcoord-tests", enabled=True)
    assert tracing.enabled
    recorder = Recorder()
    tracing.provider.add_span_processor(recorder)
    admin_token, service_key = f"wcadm_{secrets.token_hex(16)}", f"wcsvc_{secrets.token_hex(16)}"
    coordinator = await start_coordinator(
        CoordinatorSettings(
            database_url=pg_url,
            listen_coordinator="127.0.0.1:0",
            bootstrap_admin_token=SecretStr(admin_token),
            service_key=SecretStr(service_key),
            otel_enabled=True,
        ),
        clock=TestClock(),
    )
    recovery = await start_recovery(
        RecoverySettings(
            listen_recovery="127.0.0.1:0",
            coordinator_address=coordinator.address,
            service_key=SecretStr(service_key),
            recovery_interval_seconds=3600,
            otel_enabled=True,
        )
    )
    gateway = await start_gateway(
        GatewaySettings(
            listen_gateway="127.0.0.1:0",
            coordinator_address=coordinator.address,
            recovery_address=recovery.address,
            otel_enabled=True,
        )
    )
    admin = httpx.AsyncClient(
        base_url=f"http://{gateway.address}",
        headers={"Authorization": f"Bearer {admin_token}"},
        timeout=30.0,
    )
    try:
        yield Traced(coordinator, recovery, gateway, admin, recorder)
    finally:
        recorder.recording = False
        await admin.aclose()
        await gateway.stop()
        await recovery.stop(0)
        await coordinator.stop(0)


def _parent(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next((s for s in spans if s.context.span_id == span.parent.span_id), None)


def _descends(span: ReadableSpan, ancestor: ReadableSpan, spans: Sequence[ReadableSpan]) -> bool:
    current: ReadableSpan | None = span
    while current is not None:
        if current.context.span_id == ancestor.context.span_id:
            return True
        current = _parent(current, spans)
    return False


def _sql(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get("db.system") == "postgresql"]


async def test_a_rest_call_is_one_trace_from_gateway_to_database(traced: Traced) -> None:
    traced.recorder.recording = True
    response = await traced.admin.get("/v1/orgs")
    assert response.status_code == 200, response.text
    traced.recorder.recording = False

    [http] = [
        s
        for s in traced.recorder.spans
        if s.kind == SpanKind.SERVER and "/v1/orgs" in str(dict(s.attributes or {}).values())
    ]
    assert http.parent is None  # the request started the trace
    spans = traced.recorder.trace_of(http)
    [client] = [s for s in spans if s.kind == SpanKind.CLIENT and "ListOrgs" in s.name]
    [server] = [s for s in spans if s.kind == SpanKind.SERVER and "ListOrgs" in s.name]
    assert _descends(client, http, spans)
    assert _parent(server, spans) is client  # context crossed the gRPC hop
    statements = _sql(spans)
    assert statements, [s.name for s in spans]
    assert all(_descends(statement, server, spans) for statement in statements)
    assert all(_descends(span, http, spans) for span in spans)


async def test_a_recovery_pass_is_one_trace(traced: Traced) -> None:
    for slug in ("trace-a", "trace-b"):
        slug = f"{slug}-{secrets.token_hex(3)}"
        created = await traced.admin.post("/v1/orgs", json={"slug": slug, "displayName": slug})
        assert created.status_code == 200, created.text
        made = await traced.admin.post(
            "/v1/work-coordinators",
            json={
                "scope": "ORG",
                "digestOwner": "ops@acme.test",
                "orgSlug": slug,
                "displayName": slug,
            },
        )
        assert made.status_code == 200, made.text

    traced.recorder.recording = True
    await traced.recovery.recoverer.run_pass()
    traced.recorder.recording = False

    passes = [s for s in traced.recorder.spans if s.name == "recovery pass"]
    assert len(passes) == 1 and passes[0].parent is None
    spans = traced.recorder.trace_of(passes[0])
    maintained = [s for s in spans if s.kind == SpanKind.SERVER and "RunMaintenance" in s.name]
    assert len(maintained) >= 2  # the two coordinators above (others may exist in this database)
    assert [s for s in spans if s.kind == SpanKind.SERVER and "ListMaintenanceTargets" in s.name]
    for server in maintained:
        client = _parent(server, spans)
        assert client is not None and client.kind == SpanKind.CLIENT
        assert _parent(client, spans) is passes[0]
        assert any(_descends(statement, server, spans) for statement in _sql(spans))
    assert all(_descends(span, passes[0], spans) for span in spans)


async def test_http_spans_are_named_by_route_template(traced: Traced) -> None:
    traced.recorder.recording = True
    await traced.admin.get("/v1/orgs/acme-7f3a")
    await traced.admin.post("/v1/work-coordinators/wc-9d2e/leases", json={"workerId": "w1"})
    await traced.admin.get("/v1/no-such-thing/ln-42")
    traced.recorder.recording = False

    servers = [s for s in traced.recorder.spans if s.kind == SpanKind.SERVER and s.parent is None]
    names = {s.name for s in servers}
    assert {
        "GET /v1/orgs/{orgSlug}",
        "POST /v1/work-coordinators/{coordinatorId}/leases",
        "GET",  # no route: the method alone
    } <= names, names
    assert not [n for n in names if "acme-7f3a" in n or "wc-9d2e" in n or "ln-42" in n]
    [leases] = [s for s in servers if s.name.startswith("POST")]
    routes = (leases.attributes or {}).get("http.route")
    assert routes == "/v1/work-coordinators/{coordinatorId}/leases"
