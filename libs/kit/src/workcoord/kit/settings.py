"""Configuration from the environment, validated once at start-up.

Variables are ``WORKCOORD_*`` plus ``DATABASE_URL`` and ``REDIS_URL`` (the usual names of a
container platform).
:func:`load` turns pydantic's validation error into :class:`SettingsError`, whose message lists
every bad variable by its environment name. Secrets are ``SecretStr`` so they never print.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, ValidationError
from pydantic import model_validator as _model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = [
    "CommonSettings",
    "CoordinatorSettings",
    "GatewaySettings",
    "ListenAddress",
    "RecoverySettings",
    "SettingsError",
    "load",
]

ENV_PREFIX = "WORKCOORD_"


def _check_address(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:50051")
    return value


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def _check_url(schemes: tuple[str, ...]) -> AfterValidator:
    def check(value: str | None) -> str | None:
        if value is not None and value.split("://", 1)[0] not in schemes:
            raise ValueError(f"must be a URL with scheme {' or '.join(schemes)}")
        return value

    return AfterValidator(check)


def _split_list(value: Any) -> Any:
    """A list setting from the environment: a JSON array, or comma-separated."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


def _check_networks(values: list[str]) -> list[str]:
    for value in values:
        if value == "*":
            continue
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ValueError(
                f"{value!r} is not an IP address or network (e.g. 10.0.0.0/8), nor *"
            ) from None
    return values


def _check_origins(values: list[str]) -> list[str]:
    origins: list[str] = []
    for value in values:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise ValueError(f"{value!r} is not an origin like https://workcoord.example.com")
        if parts.query or parts.fragment or "@" in parts.netloc:
            raise ValueError(f"{value!r} is not an origin like https://workcoord.example.com")
        origins.append(f"{parts.scheme}://{parts.netloc}".lower())
    return origins


_CELL_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")


def _check_cells(values: list[str]) -> list[str]:
    names: set[str] = set()
    for value in values:
        name, sep, addresses = value.partition("=")
        coordinator, slash, recovery = addresses.partition("/")
        if not sep or not slash or not _CELL_NAME.fullmatch(name):
            raise ValueError(
                f"{value!r} is not a cell like a=COORDINATOR_HOST:PORT/RECOVERY_HOST:PORT "
                "(name: lower-case letters, digits, '-')"
            )
        _check_address(coordinator)
        _check_address(recovery)
        if name in names:
            raise ValueError(f"cell {name!r} is named twice")
        names.add(name)
    return values


ListenAddress = Annotated[str, AfterValidator(_check_address)]
"""``HOST:PORT`` (port 0 binds an ephemeral port)."""

LogLevel = Annotated[
    Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], BeforeValidator(_upper)
]


class CommonSettings(BaseSettings):
    """Settings every service reads."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        case_sensitive=False,
        extra="ignore",
        # An empty variable means "not set", the usual reading in shells and manifests.
        env_ignore_empty=True,
        validate_default=True,
    )

    log_level: LogLevel = "INFO"
    log_json: bool = False
    otel_enabled: bool = False
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    tls_ca_file: Path | None = None

    @_model_validator(mode="after")
    def _tls_files(self) -> CommonSettings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError(
                "WORKCOORD_TLS_CERT_FILE and WORKCOORD_TLS_KEY_FILE must be set together"
            )
        for name in ("tls_cert_file", "tls_key_file", "tls_client_ca_file", "tls_ca_file"):
            path: Path | None = getattr(self, name)
            if path is not None and not path.is_file():
                raise ValueError(f"{ENV_PREFIX}{name.upper()}: no such file: {path}")
        return self


class CoordinatorSettings(CommonSettings):
    """The coordinator: owns the database and publishes notifications."""

    database_url: Annotated[
        str | None,
        _check_url(("postgresql", "postgresql+asyncpg", "sqlite", "sqlite+aiosqlite")),
    ] = Field(default=None, validation_alias="DATABASE_URL")
    redis_url: Annotated[str | None, _check_url(("redis", "rediss", "unix"))] = Field(
        default=None, validation_alias="REDIS_URL"
    )
    listen_coordinator: ListenAddress = "127.0.0.1:50051"
    bootstrap_admin_token: SecretStr | None = None
    service_key: SecretStr | None = None
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    # Seconds between samples of queue depth and class usage for the metrics (one query per
    # work coordinator each time; scrapes read the last sample).
    metrics_sample_seconds: float = Field(default=10.0, ge=1, le=3600)
    # Ticket trackers: GitHub Issues (a token enables it; the base URL points at Enterprise).
    github_token: SecretStr | None = None
    github_api_url: Annotated[str, _check_url(("http", "https"))] = "https://api.github.com"
    # Hosts outbound calls (tracker connections) may reach although they are loopback or
    # private, and over http (tests and ``workcoord dev`` list 127.0.0.1).
    webhook_allowed_hosts: Annotated[list[str], NoDecode, BeforeValidator(_split_list)] = Field(
        default_factory=list
    )
    # The live feed: seconds between pings (and authority re-checks), and the backstop poll of
    # the event log when no notification arrives (a lost one, or Redis away).
    feed_ping_seconds: float = Field(default=15.0, gt=0, le=3600)
    feed_poll_seconds: float = Field(default=1.0, gt=0, le=60)
    # OpenID Connect (the gateway runs the browser flow; the coordinator verifies the id_token
    # against this issuer's keys and this client id). Unset: OIDC login is off. With it set,
    # the issuer's access tokens (JWTs) authenticate users' MCP calls too: their ``aud`` must
    # name ``oidc_audience`` (the resource, e.g. ``https://gateway.example/mcp``), default the
    # client id.
    oidc_issuer: Annotated[str | None, _check_url(("http", "https"))] = None
    oidc_client_id: str | None = None
    oidc_audience: str | None = None


class RecoverySettings(CommonSettings):
    """The recovery service: drives maintenance passes on a clock."""

    listen_recovery: ListenAddress = "127.0.0.1:50052"
    coordinator_address: ListenAddress = "127.0.0.1:50051"
    service_key: SecretStr | None = None
    recovery_interval_seconds: float = Field(default=15.0, ge=0.05)
    # How long a leader killed without releasing keeps the standby waiting, at most.
    recovery_leadership_seconds: int = Field(default=15, ge=3, le=300)
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    # Mail to the digest owners (unset URL: no mail): smtp://host:587 (STARTTLS) or
    # smtps://host:465 (TLS from the first byte); the password is read from a file (a mounted
    # Secret) at each connection, so a rotated one is used without a restart.
    smtp_url: Annotated[str | None, _check_url(("smtp", "smtps"))] = None
    smtp_username: str | None = None
    smtp_password_file: Path | None = None
    smtp_from: str = "workcoord <workcoord@localhost>"
    smtp_interval_seconds: float = Field(default=30.0, ge=0.05, le=3600)
    # Where people open the pages (links in mail): https://workcoord.example.com
    public_url: Annotated[str | None, _check_url(("http", "https"))] = None

    @_model_validator(mode="after")
    def _smtp(self) -> RecoverySettings:
        if self.smtp_url is not None:
            parts = urlsplit(self.smtp_url)
            if not parts.hostname or parts.username or parts.path not in ("", "/"):
                raise ValueError(
                    f"{ENV_PREFIX}SMTP_URL: must be smtp://HOST[:PORT] or smtps://HOST[:PORT] "
                    f"(credentials go in {ENV_PREFIX}SMTP_USERNAME and _SMTP_PASSWORD_FILE)"
                )
        # Read only to log in: a deployment may mount an empty (optional) Secret without mail.
        password = self.smtp_password_file
        if self.smtp_url and self.smtp_username and password is not None and not password.is_file():
            raise ValueError(
                f"{ENV_PREFIX}SMTP_PASSWORD_FILE: no such file: {self.smtp_password_file}"
            )
        return self


class GatewaySettings(CommonSettings):
    """The gateway: REST, WebSocket, web UI and MCP in front of the gRPC services."""

    listen_gateway: ListenAddress = "127.0.0.1:8080"
    coordinator_address: ListenAddress = "127.0.0.1:50051"
    recovery_address: ListenAddress = "127.0.0.1:50052"
    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    request_timeout_seconds: float = Field(default=30.0, gt=0)
    # OpenID Connect login (authorization-code flow with PKCE): the provider's issuer, this
    # client's registration, and the public URL of ``/login/oidc/callback``. Unset: off.
    oidc_issuer: Annotated[str | None, _check_url(("http", "https"))] = None
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None
    oidc_redirect_url: Annotated[str | None, _check_url(("http", "https"))] = None
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    # What an unauthenticated client may hold: a request's headers must arrive within the header
    # timeout of its first byte (or of the connection opening), its body within the body timeout
    # of its headers (else 408 and the connection closes); past the connection cap a new
    # connection is answered 503 at once (the cap is lowered to fit the open-file limit).
    gateway_header_timeout_seconds: float = Field(default=10.0, gt=0, le=3600)
    gateway_body_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    gateway_max_connections: int = Field(default=10_000, ge=1, le=1_000_000)
    # Open WebSocket feeds one credential (a bearer token or a session) may hold on one gateway;
    # the next is closed with 1013 and a reason naming the limit.
    gateway_max_feeds_per_credential: int = Field(default=256, ge=1, le=100_000)
    # Peers whose X-Forwarded-Proto / X-Forwarded-For are believed (IPs or CIDR networks; "*"
    # for any): behind an Ingress that terminates TLS, its pods' network, so that cookies get
    # ``Secure`` and the client address is the real one.
    trusted_proxies: Annotated[
        list[str], NoDecode, BeforeValidator(_split_list), AfterValidator(_check_networks)
    ] = Field(default_factory=lambda: ["127.0.0.1", "::1"])
    # The origins a browser page of this gateway is served from (``https://host[:port]``); a
    # cookie-authenticated WebSocket must come from one. Unset: the request's own scheme and
    # Host.
    public_origins: Annotated[
        list[str], NoDecode, BeforeValidator(_split_list), AfterValidator(_check_origins)
    ] = Field(default_factory=list)
    # Cells (docs/cells.md): ``NAME=COORDINATOR/RECOVERY`` entries (HOST:PORT each), the first
    # the home cell; with them the gateway routes each request to its work coordinator's cell,
    # read from the directory table in ``cell_directory_url``. Unset: one cell, the
    # coordinator_address and recovery_address above.
    cells: Annotated[
        list[str], NoDecode, BeforeValidator(_split_list), AfterValidator(_check_cells)
    ] = Field(default_factory=list)
    cell_directory_url: Annotated[str | None, _check_url(("postgresql", "postgresql+asyncpg"))] = (
        None
    )

    @_model_validator(mode="after")
    def _cell_directory(self) -> GatewaySettings:
        if self.cells and self.cell_directory_url is None:
            raise ValueError(
                f"{ENV_PREFIX}CELLS needs {ENV_PREFIX}CELL_DIRECTORY_URL (the directory's database)"
            )
        return self


class SettingsError(Exception):
    """Configuration is missing or malformed; the message names every bad variable."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid configuration:\n" + "\n".join(f"  {line}" for line in problems))


_S = TypeVar("_S", bound=CommonSettings)


def load(cls: type[_S], *, required: Iterable[str] = ()) -> _S:
    """Read and validate ``cls`` from the environment, or raise :class:`SettingsError`.

    ``required`` names fields that are optional in general but needed by this process, e.g.
    ``load(CoordinatorSettings, required=["database_url"])`` for a production coordinator.
    """
    try:
        settings = cls()
    except ValidationError as exc:
        raise SettingsError([_describe(cls, error) for error in exc.errors()]) from None
    missing = [
        f"{env_name(cls, name)}: is required"
        for name in required
        if getattr(settings, name) is None
    ]
    if missing:
        raise SettingsError(missing)
    return settings


def env_name(cls: type[CommonSettings], field_name: str) -> str:
    """The environment variable that sets ``field_name`` of ``cls``."""
    field = cls.model_fields.get(field_name)
    if field is not None and isinstance(field.validation_alias, str):
        return field.validation_alias
    return f"{ENV_PREFIX}{field_name.upper()}"


def _describe(cls: type[CommonSettings], error: Any) -> str:
    location = error.get("loc") or ()
    message = str(error.get("msg", "invalid"))
    if not location:
        # Model-level checks (e.g. the TLS pair) name their variables themselves.
        return message.removeprefix("Value error, ")
    head = str(location[0])
    name = head if head in _aliases(cls) else env_name(cls, head)
    message = message.removeprefix("Value error, ")
    field = cls.model_fields.get(head)
    secret = field is not None and "SecretStr" in str(field.annotation)
    if secret or error.get("type") == "missing" or "input" not in error:
        return f"{name}: {message}"
    return f"{name}: {message} (got {error['input']!r})"


def _aliases(cls: type[CommonSettings]) -> set[str]:
    return {
        field.validation_alias
        for field in cls.model_fields.values()
        if isinstance(field.validation_alias, str)
    }
