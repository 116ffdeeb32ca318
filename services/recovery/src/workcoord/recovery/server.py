"""The recovery process: its gRPC server (health + reflection) and the background loop.

``start_recovery`` is what ``workcoord dev`` embeds next to the coordinator and the gateway;
``main`` is ``workcoord serve recovery``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc.aio

from workcoord.api.v1 import (
    admin_pb2_grpc,
    maintenance_pb2_grpc,
    recovery_pb2,
    recovery_pb2_grpc,
)
from workcoord.kit.clock import Clock, clock_from_env
from workcoord.kit.grpc_server import (
    TlsSettings,
    bound_port,
    build_server,
    client_channel,
    serve_until_signal,
    set_serving,
    start_server,
)
from workcoord.kit.rpc_observer import RpcObserver
from workcoord.kit.service_main import serve_main
from workcoord.kit.settings import RecoverySettings, SettingsError
from workcoord.kit.status import ErrorInterceptor
from workcoord.kit.telemetry import configure_tracing
from workcoord.recovery.mailer import Mailer, SmtpConfig, SmtpSender
from workcoord.recovery.recoverer import Recoverer, SleepFunction
from workcoord.recovery.servicer import RecoveryServicer
from workcoord.recovery.webhook_sender import WebhookSender

__all__ = ["RunningRecovery", "main", "serve", "start_recovery"]

_log = logging.getLogger(__name__)

RECOVERY_SERVICE_NAME = recovery_pb2.DESCRIPTOR.services_by_name["RecoveryService"].full_name


@dataclass(kw_only=True, eq=False)
class RunningRecovery:
    """A started recovery service: ``address`` is the bound ``host:port``; ``stop()`` ends it."""

    address: str
    server: grpc.aio.Server
    channel: grpc.aio.Channel
    """To the coordinator; closed once the loop has stopped."""
    recoverer: Recoverer
    loop_task: asyncio.Task[None]
    _stopped: bool = field(default=False, init=False)

    async def stop(self, grace: float = 5.0) -> None:
        """Stop serving (in-flight calls get ``grace`` seconds), then the loop; idempotent."""
        if self._stopped:
            return
        await set_serving(self.server, serving=False)
        await self.server.stop(grace)
        await self.stop_background()

    async def stop_background(self) -> None:
        """Stop the loop, give leadership up, close the coordinator channel; idempotent.

        Runs after the server has stopped, since in-flight ``Maintain`` calls use the channel.
        """
        if self._stopped:
            return
        self._stopped = True
        self.loop_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.loop_task
        await self.recoverer.release_leadership()
        await self.channel.close()


async def start_recovery(
    settings: RecoverySettings,
    *,
    clock: Clock | None = None,
    sleep: SleepFunction | None = None,
) -> RunningRecovery:
    """Start the recovery gRPC server and its background loop.

    ``settings.listen_recovery`` may ask for port 0; the bound address is ``.address``.
    Raises :class:`SettingsError` when no service key is configured.
    """
    if settings.service_key is None or not settings.service_key.get_secret_value():
        raise SettingsError(["WORKCOORD_SERVICE_KEY: is required"])
    tls = TlsSettings.from_settings(settings)
    tracing = configure_tracing("workcoord-recovery", settings.otel_enabled)
    channel = client_channel(
        settings.coordinator_address, tls, interceptors=tracing.client_interceptors
    )
    maintenance = maintenance_pb2_grpc.MaintenanceServiceStub(channel)
    admin = admin_pb2_grpc.AdminServiceStub(channel)
    smtp = SmtpConfig.from_settings(settings)
    mailer = None
    if smtp is not None:
        mailer = Mailer(
            maintenance,
            service_key=settings.service_key.get_secret_value(),
            send=SmtpSender(smtp).send,
            sender=smtp.sender,
            public_url=settings.public_url,
            interval_seconds=settings.smtp_interval_seconds,
        )
    recoverer = Recoverer(
        maintenance,
        service_key=settings.service_key.get_secret_value(),
        interval_seconds=settings.recovery_interval_seconds,
        leadership_seconds=settings.recovery_leadership_seconds,
        clock=clock or clock_from_env(),
        sleep=sleep,
        mailer=mailer,
        webhook_sender=WebhookSender(
            maintenance,
            service_key=settings.service_key.get_secret_value(),
            public_url=settings.public_url,
        ),
    )
    servicer = RecoveryServicer(recoverer, maintenance, admin)
    try:
        server = build_server(
            [(recovery_pb2_grpc.add_RecoveryServiceServicer_to_server, servicer)],
            [RECOVERY_SERVICE_NAME],
            settings.listen_recovery,
            [*tracing.server_interceptors, RpcObserver(), ErrorInterceptor()],
            tls=tls,
            what="recovery gRPC",
        )
        await start_server(server)
    except BaseException:
        await channel.close()
        raise
    host = settings.listen_recovery.rpartition(":")[0]
    address = f"{host}:{bound_port(server)}"
    loop_task = asyncio.create_task(recoverer.run(), name="workcoord-recovery-loop")
    _log.info(
        "recovery %s serving on %s, coordinator %s, every %ss, leadership lease %ss, mail %s",
        recoverer.replica_id,
        address,
        settings.coordinator_address,
        settings.recovery_interval_seconds,
        recoverer.leadership_seconds,
        f"via {smtp.host}:{smtp.port}" if smtp is not None else "off",
    )
    return RunningRecovery(
        address=address,
        server=server,
        channel=channel,
        recoverer=recoverer,
        loop_task=loop_task,
    )


async def serve(settings: RecoverySettings, *, stop: asyncio.Event | None = None) -> None:
    """Run the recovery service until SIGINT/SIGTERM (or ``stop``), then shut down cleanly."""
    running = await start_recovery(settings)
    await serve_until_signal([running.server], on_stop=running.stop_background, stop=stop)


def main(argv: Sequence[str] | None = None) -> int:
    """``workcoord serve recovery``: settings from the environment; exit 2 if they are bad."""
    del argv  # configuration comes from the environment only
    return serve_main("recovery", RecoverySettings, ["service_key"], serve)
