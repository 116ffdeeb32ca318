"""``workcoord dev``: all three services in one process on loopback, state in a local folder.

SQLite in ``$WORKCOORD_STATE_DIR`` (default ``./.workcoord``, mode 0700), the in-process bus,
a bootstrap admin token and the service key kept in the folder (mode 0600) so restarts keep
them (lease tokens are derived from the service key: a Lease retried across a restart gets the
same ones). The folder's lock (``<state>/lock``) is held for the whole run, so a
second ``dev`` or a ``db restore`` on the same folder is refused. Migrations run first (an
existing database is backed up before it is migrated). Stops gateway → recovery → coordinator.
A busy port or a database this release cannot run on is one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import SecretStr

from workcoord.api.v1 import session_pb2, session_pb2_grpc
from workcoord.cli.common import EXIT_OK, EXIT_USAGE, CliError, parse_positive_seconds
from workcoord.cli.db import DATABASE_FILE, upgrade_database
from workcoord.cli.runtime import stop_on_signals
from workcoord.cli.serve import service_starter
from workcoord.cli.state_lock import hold_state_lock
from workcoord.client.client import WorkcoordClient
from workcoord.kit.errors import WorkcoordError
from workcoord.kit.logging import configure_logging, json_logs_from_env
from workcoord.kit.secrets import ADMIN_TOKEN_PREFIX, SERVICE_KEY_PREFIX, new_secret
from workcoord.kit.settings import CoordinatorSettings, GatewaySettings, RecoverySettings
from workcoord.kit.startup import StartupError

__all__ = [
    "ADMIN_TOKEN_FILE",
    "DATABASE_FILE",
    "READY_LINE",
    "SERVICE_KEY_FILE",
    "DevOptions",
    "DevState",
    "coordinator_settings",
    "database_url_for",
    "gateway_settings",
    "load_or_create_admin_token",
    "load_or_create_service_key",
    "prepare_state",
    "prepare_state_dir",
    "recovery_settings",
    "register",
    "resolve_state_dir",
    "serve_dev",
]

STATE_DIR_ENV = "WORKCOORD_STATE_DIR"
BOOTSTRAP_TOKEN_ENV = "WORKCOORD_BOOTSTRAP_ADMIN_TOKEN"  # noqa: S105  # a variable name
DEFAULT_STATE_DIR = ".workcoord"
ADMIN_TOKEN_FILE = "admin-token"  # noqa: S105  # a file name
SERVICE_KEY_FILE = "service-key"  # a file name
READY_LINE = "workcoord dev: ready"
LOOPBACK = "127.0.0.1"

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DevOptions:
    """What the flags chose."""

    state_dir: str | None = None
    coordinator_port: int = 50051
    recovery_port: int = 50052
    gateway_port: int = 8080
    recovery_interval_seconds: float = 15.0
    print_config_json: bool = False


@dataclass(frozen=True)
class DevState:
    """The prepared state folder."""

    state_dir: Path
    database_url: str
    admin_token: str
    admin_token_source: str  # "environment", "state folder" or "generated"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dev``."""
    dev = commands.add_parser(
        "dev", help="run everything embedded on loopback (SQLite, in-process bus)"
    )
    dev.add_argument(
        "--state-dir",
        default=None,
        help=f"state folder (env {STATE_DIR_ENV}, default ./{DEFAULT_STATE_DIR})",
    )
    dev.add_argument("--coordinator-port", type=_port, default=50051)
    dev.add_argument("--recovery-port", type=_port, default=50052)
    dev.add_argument("--gateway-port", type=_port, default=8080)
    dev.add_argument(
        "--recovery-interval",
        type=parse_positive_seconds,
        default=15.0,
        metavar="SECONDS",
        help="seconds between recovery passes (default %(default)s)",
    )
    dev.add_argument(
        "--print-config-json",
        action="store_true",
        help="also print one JSON line with the addresses, folder and token before 'ready'",
    )
    dev.add_argument("--log-level", default="INFO")
    dev.set_defaults(handler=_dev)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range: {value}")
    return value


def resolve_state_dir(
    flag: str | None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Path:
    """``--state-dir``, else ``$WORKCOORD_STATE_DIR``, else ``./.workcoord``; absolute."""
    source = env if env is not None else os.environ
    chosen = flag or source.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR
    path = Path(chosen).expanduser()
    return path if path.is_absolute() else (cwd or Path.cwd()) / path


def prepare_state_dir(path: Path) -> Path:
    """Create the folder (mode 0700) or tighten an existing one to 0700; its resolved path."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.is_dir():
        raise CliError(f"state folder {path} is not a directory", EXIT_USAGE)
    # It holds the database and the admin token: nobody else may read it.
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        path.chmod(0o700)
    return path.resolve()


def database_url_for(state_dir: Path) -> str:
    """``sqlite+aiosqlite:///<abs path>/workcoord.db``."""
    return f"sqlite+aiosqlite:///{(state_dir / DATABASE_FILE).resolve()}"


def load_or_create_admin_token(
    state_dir: Path, env: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The bootstrap admin token and where it came from.

    ``$WORKCOORD_BOOTSTRAP_ADMIN_TOKEN`` wins (and is not written down); else the token kept in
    ``<state>/admin-token``; else a new one, written there with mode 0600.
    """
    source = env if env is not None else os.environ
    from_env = source.get(BOOTSTRAP_TOKEN_ENV, "").strip()
    if from_env:
        return from_env, "environment"
    kept = _kept_secret(state_dir / ADMIN_TOKEN_FILE)
    if kept:
        return kept, "state folder"
    token = new_secret(ADMIN_TOKEN_PREFIX)
    _write_private(state_dir / ADMIN_TOKEN_FILE, token + "\n")
    return token, "generated"


def load_or_create_service_key(state_dir: Path) -> str:
    """The service key of the embedded coordinator and recovery service: the one kept in
    ``<state>/service-key``, else a new one written there with mode 0600. Kept, not drawn per
    run, because lease tokens are derived from it: a Lease retried with its request id after a
    restart then answers the same tokens."""
    kept = _kept_secret(state_dir / SERVICE_KEY_FILE)
    if kept:
        return kept
    key = new_secret(SERVICE_KEY_PREFIX)
    _write_private(state_dir / SERVICE_KEY_FILE, key + "\n")
    return key


def _kept_secret(path: Path) -> str:
    """The secret kept in ``path`` ("" if none), its mode tightened to 0600 if loosened."""
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""
    if kept and stat.S_IMODE(path.stat().st_mode) != 0o600:
        path.chmod(0o600)
    return kept


def _write_private(path: Path, text: str) -> None:
    # Create with 0600 from the start (no window where the secret is world-readable), then
    # replace atomically so a crash never leaves a half-written token.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise


def prepare_state(options: DevOptions, env: Mapping[str, str] | None = None) -> DevState:
    """Folder, database URL and admin token for a dev run."""
    state_dir = prepare_state_dir(resolve_state_dir(options.state_dir, env))
    token, token_source = load_or_create_admin_token(state_dir, env)
    return DevState(
        state_dir=state_dir,
        database_url=database_url_for(state_dir),
        admin_token=token,
        admin_token_source=token_source,
    )


def coordinator_settings(state: DevState, port: int, service_key: str) -> CoordinatorSettings:
    """The embedded coordinator: SQLite, in-process bus (no Redis), loopback."""
    return CoordinatorSettings(
        database_url=state.database_url,
        redis_url=None,
        listen_coordinator=f"{LOOPBACK}:{port}",
        bootstrap_admin_token=SecretStr(state.admin_token),
        service_key=SecretStr(service_key),
        metrics_port=None,
        # Tracker connections may reach trackers (or fakes) on this machine.
        webhook_allowed_hosts=[LOOPBACK],
    )


def recovery_settings(
    coordinator_address: str, port: int, service_key: str, interval_seconds: float
) -> RecoverySettings:
    """The embedded recovery service, pointed at the coordinator's bound address."""
    return RecoverySettings(
        listen_recovery=f"{LOOPBACK}:{port}",
        coordinator_address=coordinator_address,
        service_key=SecretStr(service_key),
        recovery_interval_seconds=interval_seconds,
        metrics_port=None,
    )


def gateway_settings(coordinator_address: str, recovery_address: str, port: int) -> GatewaySettings:
    """The embedded gateway, in front of the two gRPC services."""
    return GatewaySettings(
        listen_gateway=f"{LOOPBACK}:{port}",
        coordinator_address=coordinator_address,
        recovery_address=recovery_address,
        metrics_port=None,
    )


def _http_url(address: str) -> str:
    return address if address.startswith(("http://", "https://")) else f"http://{address}"


async def serve_dev(
    options: DevOptions,
    state: DevState,
    *,
    out: TextIO | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Start coordinator → recovery → gateway, announce them, wait for a signal (or ``stop``),
    then stop gateway → recovery → coordinator."""
    stream = out or sys.stdout
    start_coordinator = service_starter("coordinator")
    start_recovery = service_starter("recovery")
    start_gateway = service_starter("gateway")
    service_key = load_or_create_service_key(state.state_dir)
    async with contextlib.AsyncExitStack() as services:
        coordinator = await start_coordinator(
            coordinator_settings(state, options.coordinator_port, service_key)
        )
        services.push_async_callback(_stop, "coordinator", coordinator)
        recovery = await start_recovery(
            recovery_settings(
                coordinator.address,
                options.recovery_port,
                service_key,
                options.recovery_interval_seconds,
            )
        )
        services.push_async_callback(_stop, "recovery", recovery)
        gateway = await start_gateway(
            gateway_settings(coordinator.address, recovery.address, options.gateway_port)
        )
        services.push_async_callback(_stop, "gateway", gateway)

        gateway_url = _http_url(gateway.address)
        config: dict[str, Any] = {
            "gateway_url": gateway_url,
            "openapi_url": f"{gateway_url}/v1/openapi.json",
            "mcp_url": f"{gateway_url}/mcp",
            "coordinator_address": coordinator.address,
            "recovery_address": recovery.address,
            "state_dir": str(state.state_dir),
            "database_url": state.database_url,
            "admin_token": state.admin_token,
        }
        code = await _login_code(coordinator.address, state.admin_token)
        if code:
            config["login_url"] = f"{gateway_url}/login?code={code}"
        with stop_on_signals(stop) as stopping:
            _announce(config, state, options, stream)
            await stopping.wait()
        print("workcoord dev: stopping", file=stream, flush=True)


async def _login_code(address: str, admin_token: str) -> str:
    """A one-time login code for the web UI (``""`` if the coordinator cannot mint one)."""
    try:
        async with WorkcoordClient(address, admin_token) as client:
            stub = session_pb2_grpc.SessionServiceStub(client.channel)
            made = await stub.CreateLoginCode(session_pb2.CreateLoginCodeRequest(), timeout=5)
    except (WorkcoordError, OSError) as err:
        _log.warning("no login URL: %s", err.reason if isinstance(err, WorkcoordError) else err)
        return ""
    return str(made.code)


async def _stop(name: str, running: Any) -> None:
    try:
        await running.stop()
    except Exception:  # keep stopping the others
        _log.exception("stopping the %s failed", name)


def _announce(config: dict[str, Any], state: DevState, options: DevOptions, out: TextIO) -> None:
    lines = [
        f"gateway            {config['gateway_url']}",
        f"OpenAPI            {config['openapi_url']}",
        f"MCP (agents)       {config['mcp_url']}",
        f"coordinator gRPC   {config['coordinator_address']}",
        f"recovery gRPC      {config['recovery_address']}",
        f"state folder       {config['state_dir']}",
        f"admin token        {state.admin_token}  ({state.admin_token_source})",
        *(
            [f"web UI login       {config['login_url']}  (one-time, 10 minutes)"]
            if config.get("login_url")
            else []
        ),
        "",
        f"use it:  export WORKCOORD_ADDRESS={config['coordinator_address']} "
        "WORKCOORD_TOKEN=<admin token>; workcoord admin orgs list",
        f"web UI:  open {config['gateway_url']}/ (sign in with the one-time login URL above)",
    ]
    print("\n".join(lines), file=out)
    if options.print_config_json:
        print(json.dumps(config, sort_keys=True), file=out)
    print(READY_LINE, file=out, flush=True)


def _dev(args: argparse.Namespace) -> int:
    options = DevOptions(
        state_dir=args.state_dir,
        coordinator_port=args.coordinator_port,
        recovery_port=args.recovery_port,
        gateway_port=args.gateway_port,
        recovery_interval_seconds=args.recovery_interval,
        print_config_json=args.print_config_json,
    )
    try:
        configure_logging(args.log_level, json=json_logs_from_env())
    except ValueError as exc:  # a malformed WORKCOORD_LOG_JSON
        raise CliError(f"workcoord dev: {exc}", EXIT_USAGE) from None
    state = prepare_state(options)
    try:
        with hold_state_lock(state.state_dir):
            print(f"migrating {state.state_dir / DATABASE_FILE} …", file=sys.stderr, flush=True)
            saved = upgrade_database(state.database_url)
            if saved is not None:
                print(f"backed up the database to {saved}", file=sys.stderr, flush=True)
            asyncio.run(serve_dev(options, state))
    except StartupError as exc:
        raise CliError(f"workcoord dev: {exc}") from None
    return EXIT_OK
