"""Run the gateway: uvicorn, served programmatically in an asyncio task.

The owner of the process (``workcoord serve gateway``, ``workcoord dev``, tests) keeps the
signals: uvicorn's own handlers are disabled, and the owner calls :meth:`RunningGateway.stop`.

The application's middleware (tracing, the access log, metrics, compression, …) is its
pipeline, assembled with it (:mod:`workcoord.gateway.pipeline`); below it, uvicorn's protocol
applies the connection limits of :mod:`workcoord.gateway.guard`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
import sys
from collections.abc import Generator
from dataclasses import dataclass

import uvicorn

from workcoord.gateway.access_log import AccessLog
from workcoord.gateway.app import build_app
from workcoord.gateway.guard import ConnectionLimits, effective_max_connections, guarded_protocol
from workcoord.gateway.upstream import Upstreams
from workcoord.kit.logging import configure_logging
from workcoord.kit.settings import GatewaySettings, SettingsError, load
from workcoord.kit.startup import AddressInUse, StartupError, split_address

__all__ = ["AccessLog", "RunningGateway", "main", "start_gateway"]

_log = logging.getLogger(__name__)

_STARTUP_POLL_SECONDS = 0.01
_KEEP_ALIVE_SECONDS = 65
_WS_MAX_INCOMING_BYTES = 64 * 1024


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers (the embedding process owns them)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@dataclass
class RunningGateway:
    """A gateway serving in the background of the current event loop."""

    address: str
    """The bound ``host:port`` (the real port when the settings asked for port 0)."""
    _server: uvicorn.Server
    _task: asyncio.Task[None]

    async def stop(self) -> None:
        """Finish in-flight requests, close the upstream channels, and return."""
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def wait(self) -> None:
        """Return when the server stops (by :meth:`stop` or a failure)."""
        await asyncio.shield(self._task)


async def start_gateway(
    settings: GatewaySettings, channels: Upstreams | None = None
) -> RunningGateway:
    """Bind ``settings.listen_gateway`` and serve the gateway until :meth:`RunningGateway.stop`.

    Raises :class:`~workcoord.kit.startup.StartupError` when the address cannot be bound
    (:class:`~workcoord.kit.startup.AddressInUse` when another process listens there) or
    cannot start at all.
    """
    host, port = split_address(settings.listen_gateway)
    sock = _bind(host, port, settings.listen_gateway)
    limits = ConnectionLimits(
        header_timeout_seconds=settings.gateway_header_timeout_seconds,
        body_timeout_seconds=settings.gateway_body_timeout_seconds,
        max_connections=effective_max_connections(settings.gateway_max_connections),
    )
    config = uvicorn.Config(
        build_app(settings, channels),
        host=host,
        port=port,
        # httptools with the header/body deadlines and the connection cap (guard.py).
        http=guarded_protocol(limits),
        log_config=None,
        lifespan="on",
        access_log=False,
        server_header=False,
        # X-Forwarded-Proto/-For only from the configured proxies (an Ingress's pods).
        proxy_headers=True,
        forwarded_allow_ips=list(settings.trusted_proxies),
        # Feed clients send nothing the gateway reads; a large incoming message is abuse.
        ws_max_size=_WS_MAX_INCOMING_BYTES,
        # Compressing every feed frame once per socket cost the gateway more CPU than anything
        # else with 200 subscribers (B4); frames are small deltas.
        ws_per_message_deflate=False,
        # An idle keep-alive connection is closed by its client, not by us: HTTP clients keep
        # them 5 s (httpx) and load balancers up to 60 s, and a gateway that closed first
        # (uvicorn's default is 5 s) raced their next request on it ("server disconnected
        # without sending a response", a 502 behind a load balancer).
        timeout_keep_alive=_KEEP_ALIVE_SECONDS,
        ssl_certfile=str(settings.tls_cert_file) if settings.tls_cert_file else None,
        ssl_keyfile=str(settings.tls_key_file) if settings.tls_key_file else None,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="workcoord-gateway")
    while not server.started:
        if task.done():
            sock.close()
            error = task.exception() if not task.cancelled() else None
            # e.g. an unreadable TLS certificate: one line, like every start-up failure.
            raise StartupError(f"the gateway failed to start: {error}") from error
        await asyncio.sleep(_STARTUP_POLL_SECONDS)
    bound_host, bound_port = sock.getsockname()[:2]
    address = f"[{bound_host}]:{bound_port}" if ":" in bound_host else f"{bound_host}:{bound_port}"
    _log.info("gateway serving on %s", address)
    return RunningGateway(address=address, _server=server, _task=task)


def _bind(host: str, port: int, address: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: accepted sockets inherit the proto, and asyncio only sets
    # TCP_NODELAY when it is IPPROTO_TCP; with 0, Nagle + delayed ACK add ~40 ms per response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # Listen now, not when uvicorn starts: a port another process listens on must fail
        # here (bind alone can succeed beside a listener bound to another local address).
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUse(address, "gateway HTTP") from None
        raise StartupError(f"cannot listen on {address} (gateway HTTP): {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


async def _serve_until_signalled(settings: GatewaySettings) -> None:
    running = await start_gateway(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    signalled = asyncio.create_task(stop.wait())
    stopped = asyncio.create_task(running.wait())
    await asyncio.wait([signalled, stopped], return_when=asyncio.FIRST_COMPLETED)
    signalled.cancel()
    stopped.cancel()
    await running.stop()


def main() -> int:
    """Entry point: read ``WORKCOORD_*`` settings and serve until SIGINT/SIGTERM."""
    try:
        settings = load(GatewaySettings)
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    configure_logging(settings.log_level, json=settings.log_json)
    try:
        asyncio.run(_serve_until_signalled(settings))
    except StartupError as exc:
        print(f"workcoord serve gateway: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
