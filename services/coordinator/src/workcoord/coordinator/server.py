"""Start and stop the coordinator: storage, the notification bus, the engine and the gRPC server."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.storage.migrate import SchemaMismatch, check_schema
from workcoord.coordinator.storage.sql import SqlStore, make_engine
from workcoord.coordinator.trackers import trackers_from_settings
from workcoord.coordinator.transport.gate import CallGate
from workcoord.coordinator.transport.servicers import SERVICES, build_servicer
from workcoord.kit.bus import NotificationBus, bus_from_url
from workcoord.kit.clock import Clock, clock_from_env
from workcoord.kit.grpc_server import (
    TlsSettings,
    bound_port,
    build_server,
    serve_until_signal,
    start_server,
)
from workcoord.kit.logging import configure_logging
from workcoord.kit.metrics import start_metrics_server
from workcoord.kit.settings import CoordinatorSettings, SettingsError, load
from workcoord.kit.status import ErrorInterceptor
from workcoord.kit.telemetry import configure_tracing
from workcoord.kit.validation import prepare
from workcoord.kit.wire import API_PACKAGE, api_modules

_log = logging.getLogger("workcoord.coordinator")


@dataclass
class RunningCoordinator:
    """A started coordinator: its bound address and what to close on stop."""

    address: str
    server: grpc.aio.Server
    engine: Engine
    store: SqlStore
    bus: NotificationBus

    async def stop(self, grace: float = 5.0) -> None:
        await self.server.stop(grace)
        await self.close_resources()

    async def close_resources(self) -> None:
        await self.engine.drain()
        for tracker in self.engine.trackers.values():
            close = getattr(tracker, "aclose", None)
            if close is not None:
                await close()
        await self.bus.close()
        await self.store.close()


async def start_coordinator(
    settings: CoordinatorSettings, *, clock: Clock | None = None
) -> RunningCoordinator:
    """Check the schema, open storage and the bus, and serve the coordinator's gRPC services."""
    if not settings.database_url:
        raise SettingsError(["DATABASE_URL: is required"])
    try:
        await check_schema(settings.database_url)
    except SchemaMismatch as exc:
        raise SettingsError([f"DATABASE_URL: {exc}"]) from exc
    clock = clock or clock_from_env()
    store = SqlStore(make_engine(settings.database_url), clock)
    bus = bus_from_url(settings.redis_url)
    service_key = settings.service_key.get_secret_value() if settings.service_key else None
    github_token = settings.github_token.get_secret_value() if settings.github_token else None
    trackers = trackers_from_settings(github_token, settings.github_api_url)
    engine = Engine(store, bus, clock, service_key=service_key, trackers=trackers)
    try:
        if settings.bootstrap_admin_token is not None:
            await engine.bootstrap_admin(settings.bootstrap_admin_token.get_secret_value())
        prepare_rules()
        tracing = configure_tracing("workcoord-coordinator", settings.otel_enabled)
        tls = TlsSettings.from_settings(settings)
        server = build_server(
            [
                (add, build_servicer(servicer_class, engine, settings))
                for add, servicer_class, _name in SERVICES
            ],
            [f"{API_PACKAGE}.{name}" for _add, _cls, name in SERVICES],
            settings.listen_coordinator,
            # One interceptor authenticates and validates every call (the gate), and answers
            # every error with its google.rpc.Status.
            [ErrorInterceptor(CallGate(engine).check_for), *tracing.server_interceptors],
            tls=tls,
        )
        await start_server(server)
    except BaseException:
        await bus.close()
        await store.close()
        raise
    host = settings.listen_coordinator.rpartition(":")[0]
    address = f"{host}:{bound_port(server)}"
    _log.info("coordinator serving on %s (%s)", address, store.dialect)
    return RunningCoordinator(address=address, server=server, engine=engine, store=store, bus=bus)


def prepare_rules() -> None:
    """Compile the field-rule tables of every message once, at start-up (a bad pattern in the
    contract fails here, not on the first request)."""
    for module in api_modules():
        for message in module.DESCRIPTOR.message_types_by_name.values():
            prepare(message)


async def serve(settings: CoordinatorSettings, *, stop: asyncio.Event | None = None) -> None:
    """Run until SIGINT/SIGTERM (or ``stop``), then shut down cleanly."""
    running = await start_coordinator(settings)
    await serve_until_signal([running.server], on_stop=running.close_resources, stop=stop)


def main(argv: Sequence[str] | None = None) -> int:
    """``workcoord serve coordinator``: settings from the environment; exit 2 if they are bad."""
    del argv
    try:
        settings = load(CoordinatorSettings, required=["database_url"])
    except SettingsError as exc:
        print(f"workcoord serve coordinator: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, json=settings.log_json)
    start_metrics_server(settings.metrics_port)
    try:
        asyncio.run(serve(settings))
    except SettingsError as exc:
        print(f"workcoord serve coordinator: {exc}", file=sys.stderr)
        return 2
    return 0
