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
from typing import Any, Protocol

from workcoord.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError
from workcoord.cli.runtime import load_settings, wait_for_signal
from workcoord.kit.logging import configure_logging
from workcoord.kit.metrics import start_metrics_server
from workcoord.kit.settings import (
    CommonSettings,
    CoordinatorSettings,
    GatewaySettings,
    RecoverySettings,
)
from workcoord.kit.startup import StartupError

__all__ = ["import_attribute", "register", "run_service"]


class _Running(Protocol):
    async def stop(self) -> None: ...


_Start = Callable[[Any], Awaitable[_Running]]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve coordinator|recovery|gateway``."""
    serve = commands.add_parser("serve", help="run one service (production)")
    sub = serve.add_subparsers(dest="service", metavar="SERVICE", required=True)
    sub.add_parser("coordinator", help="the gRPC coordinator (needs DATABASE_URL)").set_defaults(
        handler=_coordinator
    )
    sub.add_parser(
        "recovery", help="the recovery service (needs WORKCOORD_SERVICE_KEY)"
    ).set_defaults(handler=_recovery)
    sub.add_parser("gateway", help="REST, WebSocket, web UI and MCP").set_defaults(handler=_gateway)


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
        running = await start(settings)
        try:
            await wait_for_signal()
        finally:
            await running.stop()

    try:
        start_metrics_server(getattr(settings, "metrics_port", None), what=f"{name} metrics")
        asyncio.run(run())
    except StartupError as exc:
        raise CliError(f"workcoord serve {name}: {exc}", EXIT_ERROR) from None
    return EXIT_OK


def _coordinator(args: argparse.Namespace) -> int:
    settings = load_settings(
        "workcoord serve coordinator", CoordinatorSettings, required=("database_url",)
    )
    start: _Start = import_attribute(
        "workcoord.coordinator.server", "start_coordinator", "workcoord-coordinator"
    )
    return run_service("coordinator", start, settings)


def _recovery(args: argparse.Namespace) -> int:
    settings = load_settings(
        "workcoord serve recovery", RecoverySettings, required=("service_key",)
    )
    start: _Start = import_attribute(
        "workcoord.recovery.server", "start_recovery", "workcoord-recovery"
    )
    return run_service("recovery", start, settings)


def _gateway(args: argparse.Namespace) -> int:
    settings = load_settings("workcoord serve gateway", GatewaySettings)
    start: _Start = import_attribute(
        "workcoord.gateway.server", "start_gateway", "workcoord-gateway"
    )
    return run_service("gateway", start, settings)
