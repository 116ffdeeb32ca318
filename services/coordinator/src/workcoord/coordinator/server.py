"""Start and stop the coordinator: storage, the notification bus, the engine and the gRPC server.

Besides serving, a running coordinator samples the queue for its metrics
(:class:`~workcoord.coordinator.metrics.QueueSampler`) and watches its database: while the
database does not answer, gRPC health reports NOT_SERVING (so Kubernetes takes the replica out
of its Service and the gateway's ``/readyz`` fails), and SERVING again once it answers. The
``liveness`` health service stays SERVING throughout: a database outage must not restart pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
import sqlalchemy as sa

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.engine.paging import install_page_token_key
from workcoord.coordinator.metrics import (
    MeteredStore,
    QueueSampler,
    observe_feed_frame,
    watch_pool,
)
from workcoord.coordinator.oidc import verifier_from_settings
from workcoord.coordinator.sql_tracing import trace_statements
from workcoord.coordinator.storage.migrate import check_schema
from workcoord.coordinator.storage.sql import SqlStore, make_engine
from workcoord.coordinator.trackers import adapter_factory, trackers_from_settings
from workcoord.coordinator.transport.gate import CallGate
from workcoord.coordinator.transport.servicers import SERVICES, build_servicer
from workcoord.coordinator.transport.view_wire import ViewWireInterceptor
from workcoord.coordinator.webhooks.sender import make_sender
from workcoord.kit.bus import NotificationBus, bus_from_url
from workcoord.kit.clock import Clock, clock_from_env
from workcoord.kit.errors import AlreadyExists
from workcoord.kit.grpc_server import (
    TlsSettings,
    bound_port,
    build_server,
    serve_until_signal,
    set_serving,
    start_server,
)
from workcoord.kit.metrics import FEED_SUBSCRIBERS
from workcoord.kit.rpc_observer import RpcObserver
from workcoord.kit.service_main import serve_main
from workcoord.kit.settings import CoordinatorSettings, SettingsError
from workcoord.kit.status import ErrorInterceptor
from workcoord.kit.telemetry import configure_tracing
from workcoord.kit.validation import prepare
from workcoord.kit.wire import API_PACKAGE, api_modules

_log = logging.getLogger("workcoord.coordinator")

WATCH_METHOD = f"/{API_PACKAGE}.FeedService/Watch"
# How often the database is pinged for readiness, and how long one ping may take: within the
# readiness probe's period (5 s) so that an outage shows at the next probe or the one after.
DATABASE_CHECK_SECONDS = 2.0
DATABASE_CHECK_TIMEOUT_SECONDS = 3.0


@dataclass
class RunningCoordinator:
    """A started coordinator: its bound address and what to close on stop."""

    address: str
    server: grpc.aio.Server
    engine: Engine
    store: SqlStore
    bus: NotificationBus
    background: list[asyncio.Task[None]] = field(default_factory=list)
    sampler: QueueSampler | None = None

    async def stop(self, grace: float = 5.0) -> None:
        await self.server.stop(grace)
        await self.close_resources()

    async def close_resources(self) -> None:
        for task in self.background:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.sampler is not None:
            await self.sampler.stop()
        await self.engine.drain()
        # The webhook sender's bus subscriptions and HTTP client, before the bus closes.
        await self.engine.webhooks.aclose()
        for tracker in self.engine.trackers.values():
            close = getattr(tracker, "aclose", None)
            if close is not None:
                await close()
        await self.bus.close()
        await self.store.close()


async def start_coordinator(
    settings: CoordinatorSettings, *, clock: Clock | None = None
) -> RunningCoordinator:
    """Check the schema, open storage and the bus, and serve the coordinator's gRPC services.

    Raises :class:`~workcoord.kit.startup.StartupError` (one line) when the database schema is
    not one this release runs on, or the listen address is taken.
    """
    if not settings.database_url:
        raise SettingsError(["DATABASE_URL: is required"])
    await check_schema(settings.database_url)
    clock = clock or clock_from_env()
    tracing = configure_tracing("workcoord-coordinator", settings.otel_enabled)
    database = make_engine(settings.database_url)
    if tracing.enabled:
        trace_statements(database, tracing.provider)
    watch_pool(database)
    store = SqlStore(database, clock)
    bus = bus_from_url(settings.redis_url)
    service_key = settings.service_key.get_secret_value() if settings.service_key else None
    github_token = settings.github_token.get_secret_value() if settings.github_token else None
    trackers = trackers_from_settings(github_token, settings.github_api_url)
    # One verifier (one JWKS cache) for browser sign-in's id_tokens and MCP's access tokens.
    oidc = verifier_from_settings(
        settings.oidc_issuer, settings.oidc_client_id, clock, settings.oidc_audience
    )
    engine = Engine(
        MeteredStore(store),
        bus,
        clock,
        service_key=service_key,
        trackers=trackers,
        tracker_factory=adapter_factory(settings.webhook_allowed_hosts),
        outbound_allowed_hosts=settings.webhook_allowed_hosts,
        access_tokens=oidc,
    )
    engine.webhooks.make_sender = make_sender
    try:
        await _install_page_token_key(store)
        await engine.load_lease_token_key()
        if settings.bootstrap_admin_token is not None:
            await _bootstrap_admin(engine, settings.bootstrap_admin_token.get_secret_value())
        prepare_rules()
        tls = TlsSettings.from_settings(settings)
        server = build_server(
            [
                (add, build_servicer(servicer_class, engine, settings))
                for add, servicer_class, _name in SERVICES
            ],
            [f"{API_PACKAGE}.{name}" for _add, _cls, name in SERVICES],
            settings.listen_coordinator,
            # Tracing outermost, so the access line and error logs carry the trace id; the
            # error interceptor runs the gate (authentication and validation of every call)
            # and answers every error with its google.rpc.Status. Innermost, an unchanged view
            # goes out as the bytes it was serialized to last time.
            [
                *tracing.server_interceptors,
                RpcObserver(
                    open_streams={WATCH_METHOD: FEED_SUBSCRIBERS},
                    on_response={WATCH_METHOD: observe_feed_frame},
                ),
                ErrorInterceptor(CallGate(engine).check_for),
                ViewWireInterceptor(),
            ],
            tls=tls,
            what="coordinator gRPC",
        )
        await start_server(server)
    except BaseException:
        await bus.close()
        await store.close()
        raise
    sampler = QueueSampler(store, settings.metrics_sample_seconds, clock)
    sampler.start()
    watcher = asyncio.create_task(
        _watch_database(store, server), name="workcoord-database-readiness"
    )
    host = settings.listen_coordinator.rpartition(":")[0]
    address = f"{host}:{bound_port(server)}"
    _log.info("coordinator serving on %s (%s)", address, store.dialect)
    return RunningCoordinator(
        address=address,
        server=server,
        engine=engine,
        store=store,
        bus=bus,
        background=[watcher],
        sampler=sampler,
    )


async def _install_page_token_key(store: SqlStore) -> None:
    """Sign page tokens with the installation's key, so every replica reads every other's."""
    async with store.write() as tx:
        key = await tx.installation_secret("page-token", secrets.token_hex(32))
    install_page_token_key(bytes.fromhex(key))


async def _bootstrap_admin(engine: Engine, token: str) -> None:
    try:
        await engine.credentials.bootstrap_admin(token)
    except AlreadyExists:
        # Replicas starting together on a fresh database race to create the same admin; the
        # loser's second try finds the winner's (bootstrap_admin is idempotent).
        await engine.credentials.bootstrap_admin(token)


async def database_answers(store: SqlStore) -> bool:
    """Whether the database answers ``SELECT 1`` within the check's time limit."""
    try:
        async with (
            asyncio.timeout(DATABASE_CHECK_TIMEOUT_SECONDS),
            store.engine.connect() as connection,
        ):
            await connection.execute(sa.text("SELECT 1"))
    except asyncio.CancelledError:
        raise
    except Exception:
        return False
    return True


async def _watch_database(
    store: SqlStore, server: grpc.aio.Server, interval: float = DATABASE_CHECK_SECONDS
) -> None:
    serving = True
    while True:
        await asyncio.sleep(interval)
        answers = await database_answers(store)
        if answers != serving:
            serving = answers
            await set_serving(server, serving=serving)
            if serving:
                _log.info("database answers again: serving")
            else:
                _log.warning("database does not answer: reporting NOT_SERVING until it does")


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
    return serve_main("coordinator", CoordinatorSettings, ["database_url"], serve)
