"""``workcoord serve coordinator|recovery|gateway``: one production service per process.

Settings come from the environment only (``DATABASE_URL``, ``REDIS_URL``, ``WORKCOORD_*``);
bad configuration is reported with every offending variable and exit code 2. Anything else that
stops a service from starting (a busy port, a database schema this release cannot run on) is
one line on stderr and exit code 1. The services are imported lazily so the CLI works where
only the client is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from workcoord.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError
from workcoord.cli.runtime import load_settings, stop_on_signals
from workcoord.kit import heap
from workcoord.kit.logging import configure_logging
from workcoord.kit.metrics import start_metrics_server
from workcoord.kit.settings import (
    CommonSettings,
    CoordinatorSettings,
    GatewaySettings,
    RecoverySettings,
)
from workcoord.kit.startup import StartupError

__all__ = ["import_attribute", "register", "run_service", "service_starter"]


class _Running(Protocol):
    @property
    def address(self) -> str: ...

    async def stop(self) -> None: ...


_Start = Callable[[Any], Awaitable[_Running]]


@dataclass(frozen=True)
class _Service:
    """Where a service's ``start_*`` function lives and what it needs to start."""

    help: str
    module: str
    function: str
    package: str  # the distribution that ships it
    settings: type[CommonSettings]
    required: tuple[str, ...] = ()


_SERVICES = {
    "coordinator": _Service(
        "the gRPC coordinator (needs DATABASE_URL)",
        "workcoord.coordinator.server",
        "start_coordinator",
        "workcoord-coordinator",
        CoordinatorSettings,
        ("database_url",),
    ),
    "recovery": _Service(
        "the recovery service (needs WORKCOORD_SERVICE_KEY)",
        "workcoord.recovery.server",
        "start_recovery",
        "workcoord-recovery",
        RecoverySettings,
        ("service_key",),
    ),
    "gateway": _Service(
        "REST, WebSocket, web UI and MCP",
        "workcoord.gateway.server",
        "start_gateway",
        "workcoord-gateway",
        GatewaySettings,
    ),
}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve coordinator|recovery|gateway``."""
    serve = commands.add_parser("serve", help="run one service (production)")
    sub = serve.add_subparsers(dest="service", metavar="SERVICE", required=True)
    for name, service in _SERVICES.items():
        sub.add_parser(name, help=service.help).set_defaults(handler=_serve)


def service_starter(name: str) -> _Start:
    """The ``start_*`` function of service ``name`` (``coordinator``, ``recovery``,
    ``gateway``), imported now; a :class:`CliError` (exit 2) if it is not installed."""
    service = _SERVICES[name]
    start: _Start = import_attribute(service.module, service.function, service.package)
    return start


def import_attribute(module: str, name: str, package: str) -> Any:
    """``module.name``, imported now; a :class:`CliError` (exit 2) naming the package if absent."""
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        raise CliError(
            f"{module} is not available ({exc}); install {package}", EXIT_USAGE
        ) from None
    try:
        return getattr(loaded, name)
    except AttributeError:
        raise CliError(f"{module} has no {name}; is {package} up to date?", EXIT_USAGE) from None


def run_service(name: str, start: _Start, settings: CommonSettings) -> int:
    """Log, expose metrics, start the service, run until SIGINT/SIGTERM, stop it cleanly."""
    configure_logging(settings.log_level, json=settings.log_json)

    async def run() -> None:
        # Handlers first: a signal while the service starts (or right after it says it
        # serves) stops it cleanly once started.
        with stop_on_signals() as stopping:
            running = await start(settings)
            heap.settle()  # what start-up built lives as long as the process: never walk it again
            try:
                await stopping.wait()
            finally:
                await running.stop()

    try:
        start_metrics_server(getattr(settings, "metrics_port", None), what=f"{name} metrics")
        asyncio.run(run())
    except StartupError as exc:
        raise CliError(f"workcoord serve {name}: {exc}", EXIT_ERROR) from None
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    name = args.service
    service = _SERVICES[name]
    settings = load_settings(f"workcoord serve {name}", service.settings, required=service.required)
    return run_service(name, service_starter(name), settings)
