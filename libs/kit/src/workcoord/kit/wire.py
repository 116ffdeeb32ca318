"""What workcoord's processes agree on over the wire, defined once.

The gRPC metadata keys of a caller's credential, the trailer that carries a rich error status,
the generated modules of the v1 API, and the work counters of a maintenance report.
:func:`bearer_secret` is the one parse of an ``Authorization`` value (the gateway's, for HTTP
headers, and the coordinator's, for call metadata, so both read the same credential from the
same text); :func:`call_credentials` is the one reader of a caller's credential from call
metadata; :func:`bearer_metadata` is how a process sends one.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

import workcoord.api.v1 as api_v1
from workcoord.kit.errors import Unauthenticated

__all__ = [
    "API_PACKAGE",
    "AUTHORIZATION_KEY",
    "CSRF_KEY",
    "MAINTENANCE_COUNTERS",
    "MAINTENANCE_STEPS",
    "MAX_SECRET_CHARS",
    "SESSION_KEY",
    "STATUS_DETAILS_KEY",
    "CallCredentials",
    "api_modules",
    "bearer_metadata",
    "bearer_secret",
    "call_credentials",
]

API_PACKAGE = "workcoord.api.v1"
"""The protobuf package (and Python package) of the v1 contract."""

AUTHORIZATION_KEY = "authorization"
"""``Bearer <secret>``: an admin or user token, a work key, or the recovery service key."""

SESSION_KEY = "x-workcoord-session"
"""A browser session's secret; the gateway forwards it from its HttpOnly session cookie."""

CSRF_KEY = "x-workcoord-csrf"
"""The browser session's CSRF token, required on every state-changing call made with a session."""

STATUS_DETAILS_KEY = "grpc-status-details-bin"
"""The trailer holding the serialized ``google.rpc.Status`` (ErrorInfo, BadRequest)."""

MAINTENANCE_COUNTERS = (
    "expired_attempts",
    "requeued",
    "dead_lettered",
    "escalated",
    "evicted_workers",
    "pending_actions_attempted",
    "pending_actions_succeeded",
    "tickets_synced",
)
"""The work counters of a ``MaintenanceReport``, in the order the recovery pass log line names
them: the coordinator fills these fields and the recovery service sums them per kind."""

MAINTENANCE_STEPS = ("close_tickets", "sync_tickets")
"""The steps of a pass that can fail while the rest of it runs (``StepFailure.step``): ticket
closures and ticket state sync, which call a tracker. The recovery service counts per step."""

MAX_SECRET_CHARS = 4096
"""The longest bearer secret accepted. Ours are under 80 characters; the bound keeps an
``Authorization`` value within what gRPC metadata carries (8 KiB), so a credential the gateway
accepts always reaches the coordinator."""

Metadata = Iterable[tuple[str, str | bytes]]
_CREDENTIAL_KEYS = frozenset({AUTHORIZATION_KEY, SESSION_KEY, CSRF_KEY})
# RFC 9110 credentials: a scheme, one or more blanks, a token; blanks around the value are not
# part of it. The secret is visible ASCII, so it is the same bytes on HTTP and in gRPC metadata.
_BEARER = re.compile(r"[ \t]*([A-Za-z]+)[ \t]+([!-~]+)[ \t]*", re.ASCII)
_MALFORMED = (
    "Authorization must be 'Bearer <secret>', the secret 1 to "
    f"{MAX_SECRET_CHARS} visible ASCII characters"
)


@dataclass(frozen=True)
class CallCredentials:
    """What a call presented: a bearer secret and/or a browser session with its CSRF token."""

    bearer: str | None = None
    session: str | None = None
    csrf: str | None = None


def bearer_secret(authorization: str) -> str:
    """The secret of an ``Authorization`` value ``Bearer <secret>``.

    The scheme is matched in any case and may be followed by any number of spaces or tabs;
    blanks around the value are ignored. The secret is 1 to :data:`MAX_SECRET_CHARS` visible
    ASCII characters with no blank inside. Anything else (another scheme, no secret, a
    non-ASCII or oversized value) raises UNAUTHENTICATED: a present but malformed credential is
    refused, never ignored, so it can never fall back to a browser session.
    """
    # Bounded before matching: a 100 KB header is refused without being scanned.
    found = (
        _BEARER.fullmatch(authorization) if len(authorization) <= MAX_SECRET_CHARS + 64 else None
    )
    if found is None or found[1].lower() != "bearer" or len(found[2]) > MAX_SECRET_CHARS:
        raise Unauthenticated(_MALFORMED)
    return found[2]


def call_credentials(metadata: Metadata | None) -> CallCredentials:
    """The credentials in a call's metadata (the first value of each key counts).

    An ``authorization`` value is read by :func:`bearer_secret`: one that is not a well-formed
    ``Bearer <secret>`` is refused (UNAUTHENTICATED) rather than ignored.
    """
    values: dict[str, str] = {}
    for key, value in metadata or ():
        if key in _CREDENTIAL_KEYS and key not in values:
            # Undecodable bytes become U+FFFD, which no credential contains.
            values[key] = value.decode(errors="replace") if isinstance(value, bytes) else value
    authorization = values.get(AUTHORIZATION_KEY)
    bearer = bearer_secret(authorization) if authorization is not None else None
    return CallCredentials(
        bearer=bearer,
        session=values.get(SESSION_KEY) or None,
        csrf=values.get(CSRF_KEY) or None,
    )


def bearer_metadata(secret: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``secret`` as a bearer credential."""
    return ((AUTHORIZATION_KEY, f"Bearer {secret}"),)


@functools.cache
def api_modules() -> tuple[ModuleType, ...]:
    """Every generated message module of the v1 API (``workcoord.api.v1.*_pb2``), by name.

    Found by listing the package, so a new proto file needs no edit here; importing them all
    also completes the default descriptor pool.
    """
    names = sorted(
        info.name for info in pkgutil.iter_modules(api_v1.__path__) if info.name.endswith("_pb2")
    )
    return tuple(importlib.import_module(f"{API_PACKAGE}.{name}") for name in names)
