"""gRPC plumbing shared by the services: server construction, shutdown, client channels.

Every server gets ``grpc.health.v1`` health checking, server reflection (``v1`` and
``v1alpha``), 4 MiB message limits, keepalive settings that match :func:`client_channel`, and
TLS (mutual when a client CA is given) from ``WORKCOORD_TLS_*`` - insecure on loopback otherwise.
A server never shares its port: ``SO_REUSEPORT`` is off, and a port in use is a
:class:`~workcoord.kit.startup.AddressInUse` before gRPC is asked to bind.

Health has two meanings. The overall service ``""`` and each named service report readiness
(the coordinator turns them NOT_SERVING while its database is unreachable);
:data:`LIVENESS_SERVICE` reports only that the process serves gRPC at all, for liveness probes
that must not restart a pod because a dependency is down.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from workcoord.kit.metrics import PROCESS_HEALTH
from workcoord.kit.settings import CommonSettings
from workcoord.kit.startup import StartupError, ensure_bindable

__all__ = [
    "LIVENESS_SERVICE",
    "MAX_MESSAGE_BYTES",
    "REFLECTION_V1_SERVICE",
    "TlsSettings",
    "bound_port",
    "build_server",
    "client_channel",
    "health_servicer",
    "serve_until_signal",
    "set_live",
    "set_serving",
    "start_server",
]

_log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 4 * 1024 * 1024
LIVENESS_SERVICE = "liveness"
"""Health service name that stays SERVING from start to shutdown (for liveness probes)."""
REFLECTION_V1_SERVICE = "grpc.reflection.v1.ServerReflection"

# Long-poll Lease calls and Watch streams sit idle for a minute; pings keep NATs and proxies from
# dropping them. The server must accept pings that often or it answers GOAWAY (too_many_pings).
_KEEPALIVE_MS = 30_000
_SERVER_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", _KEEPALIVE_MS),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", _KEEPALIVE_MS // 2),
    ("grpc.http2.max_pings_without_data", 0),
    # gRPC sets SO_REUSEPORT by default: a second server on a busy port would then start
    # silently and take half the connections. Off, a busy port fails to bind.
    ("grpc.so_reuseport", 0),
]
_CLIENT_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", _KEEPALIVE_MS),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # Services start together and restart often (rolling deploys): reconnect within a couple
    # of seconds instead of gRPC's default backoff of up to two minutes.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]

AddServicerFn = Callable[[Any, grpc.aio.Server], None]

_ports: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_health: weakref.WeakKeyDictionary[Any, health.aio.HealthServicer] = weakref.WeakKeyDictionary()
_service_names: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()
_started: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(frozen=True)
class TlsSettings:
    """Certificate paths; all None means plaintext.

    Server: ``cert_file`` + ``key_file``, plus ``client_ca_file`` to require client certificates
    (mutual TLS). Client: ``ca_file`` (else ``client_ca_file``) verifies the server, and
    ``cert_file`` + ``key_file`` are presented when set.
    """

    cert_file: Path | None = None
    key_file: Path | None = None
    client_ca_file: Path | None = None
    ca_file: Path | None = None

    @classmethod
    def from_settings(cls, settings: CommonSettings) -> TlsSettings:
        """The TLS files named by a service's validated settings."""
        return cls(
            cert_file=settings.tls_cert_file,
            key_file=settings.tls_key_file,
            client_ca_file=settings.tls_client_ca_file,
            ca_file=settings.tls_ca_file,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TlsSettings:
        """Read ``WORKCOORD_TLS_{CERT,KEY,CLIENT_CA,CA}_FILE``."""
        source = env if env is not None else os.environ

        def path(name: str) -> Path | None:
            value = source.get(f"WORKCOORD_TLS_{name}_FILE")
            return Path(value) if value else None

        return cls(path("CERT"), path("KEY"), path("CLIENT_CA"), path("CA"))

    @property
    def server_enabled(self) -> bool:
        """Whether a server should listen with TLS."""
        return self.cert_file is not None and self.key_file is not None

    @property
    def client_enabled(self) -> bool:
        """Whether a client should connect with TLS."""
        return (self.ca_file or self.client_ca_file) is not None or self.server_enabled

    def server_credentials(self) -> grpc.ServerCredentials:
        """Server credentials; client certificates are required when a client CA is set."""
        assert self.cert_file is not None and self.key_file is not None
        client_ca = self.client_ca_file.read_bytes() if self.client_ca_file else None
        return grpc.ssl_server_credentials(
            [(self.key_file.read_bytes(), self.cert_file.read_bytes())],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Channel credentials verifying the server and presenting our certificate if any."""
        ca = self.ca_file or self.client_ca_file
        return grpc.ssl_channel_credentials(
            root_certificates=ca.read_bytes() if ca else None,
            private_key=self.key_file.read_bytes() if self.key_file else None,
            certificate_chain=self.cert_file.read_bytes() if self.cert_file else None,
        )


def build_server(
    servicers: Sequence[tuple[AddServicerFn, Any]],
    service_names: Sequence[str],
    listen: str,
    interceptors: Sequence[Any] = (),
    *,
    tls: TlsSettings | None = None,
    what: str = "gRPC",
) -> grpc.aio.Server:
    """A grpc.aio server with the servicers, health, reflection, bound to ``listen``.

    ``what`` names the server in start-up errors (``cannot listen on … (coordinator gRPC)``);
    a busy address raises :class:`~workcoord.kit.startup.AddressInUse`, any other bind failure
    :class:`~workcoord.kit.startup.StartupError`.

    ``servicers`` pairs each generated ``add_XxxServicer_to_server`` with its servicer;
    ``service_names`` are their full names (``workcoord.api.v1.LaneService``), all reported
    SERVING. ``tls`` defaults to :meth:`TlsSettings.from_env`. The bound port (useful with port
    0) is :func:`bound_port`; the health servicer is :func:`health_servicer`.
    """
    ensure_bindable(listen, what)
    server = grpc.aio.server(interceptors=list(interceptors), options=_SERVER_OPTIONS)
    for add, servicer in servicers:
        add(servicer, server)
    health_service = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_service, server)
    _add_reflection(
        [
            *service_names,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
            REFLECTION_V1_SERVICE,
        ],
        server,
    )
    tls = tls if tls is not None else TlsSettings.from_env()
    try:
        if tls.server_enabled:
            port = server.add_secure_port(listen, tls.server_credentials())
        else:
            port = server.add_insecure_port(listen)
    except RuntimeError:
        # Taken between our check and gRPC's bind, or an address gRPC cannot resolve.
        port = 0
    if port == 0:
        raise StartupError(f"cannot listen on {listen} ({what}): gRPC could not bind it")
    _ports[server] = port
    _health[server] = health_service
    # The aio health servicer's set() is a coroutine, so the names are reported SERVING by
    # start_server() once there is a loop to run it on.
    _service_names[server] = ("", *service_names)
    return server


def _add_reflection(service_names: Sequence[str], server: grpc.aio.Server) -> None:
    """Reflection under both names: ``v1alpha`` (grpcio-reflection's) and ``v1``.

    grpcio-reflection only ships v1alpha, while current grpcurl and Postman ask v1 first. The
    two protocols are the same messages under another package, so the same servicer answers
    both; v1's descriptor (renamed from v1alpha's) joins the default pool so that reflection
    can also describe itself.
    """
    servicer = reflection.aio.ReflectionServicer(service_names)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    _register_reflection_v1_descriptor()
    method = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                REFLECTION_V1_SERVICE, {"ServerReflectionInfo": method}
            ),
        )
    )


def _register_reflection_v1_descriptor() -> None:
    pool = descriptor_pool.Default()
    try:
        pool.FindServiceByName(REFLECTION_V1_SERVICE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    old, new = proto.package, REFLECTION_V1_SERVICE.rpartition(".")[0]
    proto.package = new
    proto.name = proto.name.replace("v1alpha", "v1")

    def rename(type_name: str) -> str:
        return type_name.replace(f".{old}.", f".{new}.")

    for message in proto.message_type:
        for message_field in message.field:
            if message_field.type_name:
                message_field.type_name = rename(message_field.type_name)
    for service in proto.service:
        for rpc in service.method:
            rpc.input_type = rename(rpc.input_type)
            rpc.output_type = rename(rpc.output_type)
    pool.Add(proto)


def bound_port(server: grpc.aio.Server) -> int:
    """The port :func:`build_server` bound (the real one when ``listen`` asked for port 0)."""
    return _ports[server]


def health_servicer(server: grpc.aio.Server) -> health.aio.HealthServicer:
    """The health servicer :func:`build_server` installed, to report NOT_SERVING etc."""
    return _health[server]


async def start_server(server: grpc.aio.Server) -> None:
    """Start ``server`` (once) and report every service SERVING."""
    if server not in _started:
        await server.start()
        _started.add(server)
        await set_live(server, live=True)
    await set_serving(server, serving=True)


async def set_serving(server: grpc.aio.Server, *, serving: bool) -> None:
    """Report every service of ``server`` (and the overall "" service) SERVING or NOT_SERVING."""
    status = (
        health_pb2.HealthCheckResponse.SERVING
        if serving
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )
    for name in _service_names.get(server, ("",)):
        await _health[server].set(name, status)
    PROCESS_HEALTH.ready = serving


async def set_live(server: grpc.aio.Server, *, live: bool) -> None:
    """Report :data:`LIVENESS_SERVICE` SERVING (from start) or NOT_SERVING (at shutdown)."""
    status = (
        health_pb2.HealthCheckResponse.SERVING
        if live
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )
    await _health[server].set(LIVENESS_SERVICE, status)
    PROCESS_HEALTH.live = live


async def serve_until_signal(
    servers: Sequence[grpc.aio.Server],
    on_stop: Callable[[], Awaitable[None]] | None = None,
    *,
    grace_seconds: float = 10.0,
    stop: asyncio.Event | None = None,
) -> None:
    """Start ``servers`` (if :func:`start_server` has not), wait for SIGINT/SIGTERM or ``stop``,
    then shut down cleanly.

    Shutdown order: report NOT_SERVING (so load balancers drain), stop the servers letting
    in-flight calls finish within the grace period, then run ``on_stop`` (close the bus and the
    database pool, which in-flight calls may still need).
    """
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
        except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
            pass
    try:
        for server in servers:
            await start_server(server)
        await stop.wait()
        _log.info("shutting down")
        for server in servers:
            await set_serving(server, serving=False)
            await set_live(server, live=False)
        await asyncio.gather(*(server.stop(grace_seconds) for server in servers))
        if on_stop is not None:
            await on_stop()
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def client_channel(
    address: str,
    tls: TlsSettings | None = None,
    interceptors: Sequence[Any] = (),
) -> grpc.aio.Channel:
    """A channel for service-to-service calls, with keepalive and 4 MiB message limits.

    ``tls`` defaults to :meth:`TlsSettings.from_env`; plaintext when nothing is configured.
    """
    tls = tls if tls is not None else TlsSettings.from_env()
    if tls.client_enabled:
        return grpc.aio.secure_channel(
            address,
            tls.channel_credentials(),
            options=_CLIENT_OPTIONS,
            interceptors=list(interceptors) or None,
        )
    return grpc.aio.insecure_channel(
        address, options=_CLIENT_OPTIONS, interceptors=list(interceptors) or None
    )
