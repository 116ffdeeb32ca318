"""The SSRF rules of outbound calls and the one HTTP request of a delivery.

A URL is checked when it is set (:func:`check_url`) and again at each connection
(:func:`resolve_allowed`): https only, and no loopback, link-local, private, reserved or
metadata address, unless the operator lists the host in ``WORKCOORD_WEBHOOK_ALLOWED_HOSTS``
(then any http(s) URL of that host is allowed). Redirects are not followed, timeouts are
5 s (connect and read) and at most :data:`MAX_RESPONSE_BYTES` of an answer are read.

A plain-http connection is made to the address that was checked (the URL's host is kept for
the ``Host`` header), so a name that re-resolves in between is not followed; an https
connection resolves the name again in the HTTP client (known gap: a name re-resolving to a
private address within that window is not caught, though TLS still has to verify for it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

ALLOWED_HOSTS_ENV = "WORKCOORD_WEBHOOK_ALLOWED_HOSTS"
TIMEOUT_SECONDS = 5.0
MAX_URL_LENGTH = 2048
MAX_RESPONSE_BYTES = 64 * 1024
# Cloud metadata endpoints that are not link-local (AWS's IPv6 one is a ULA).
_METADATA = frozenset({ipaddress.ip_address("fd00:ec2::254")})


class RefusedUrl(ValueError):
    """A URL the SSRF rules refuse (the message says why; it names no secret)."""


def allowed_hosts(value: str | None) -> frozenset[str]:
    """The hosts of ``WORKCOORD_WEBHOOK_ALLOWED_HOSTS`` (comma-separated, case-insensitive)."""
    return frozenset(h.strip().lower().strip("[]") for h in (value or "").split(",") if h.strip())


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL: its scheme, host and port, and whether the operator listed the host."""

    url: str
    scheme: str
    host: str
    port: int
    listed: bool


def check_url(url: str, allowed: Iterable[str]) -> Target:
    """Check ``url`` as it is set (no name resolution): raises :class:`RefusedUrl`."""
    if len(url) > MAX_URL_LENGTH:
        raise RefusedUrl(f"url: at most {MAX_URL_LENGTH} characters")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise RefusedUrl("url: must be an absolute https URL")
    if parts.username or parts.password:
        raise RefusedUrl("url: must not carry credentials")
    listed = host in set(allowed)
    if not listed and parts.scheme != "https":
        raise RefusedUrl(f"url: must be https (or its host listed in {ALLOWED_HOSTS_ENV})")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise RefusedUrl("url: the port is not valid") from exc
    if not listed:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            _require_public(literal)
        elif host == "localhost" or host.endswith((".localhost", ".internal", ".local")):
            raise RefusedUrl("url: the host is local")
    return Target(url, parts.scheme, host, port, listed)


def _require_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if (
        address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
        or address in _METADATA
    ):
        raise RefusedUrl("url: the host resolves to a loopback, link-local or private address")


async def resolve_allowed(target: Target) -> str:
    """At connection time: resolve the host and refuse it if any address is not public
    (unless listed); the address to connect to."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise RefusedUrl("url: the host does not resolve") from exc
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    if not addresses:
        raise RefusedUrl("url: the host does not resolve")
    if not target.listed:
        for address in addresses:
            _require_public(address)
    return str(addresses[0])


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one try of a delivery went: a 2xx answer succeeded; anything else is retried.
    ``refused``: the SSRF rules refused the URL or its address (no connection was made)."""

    succeeded: bool
    response_code: int = 0
    error: str = ""
    seconds: float = 0.0
    refused: bool = False


async def post(
    client: httpx.AsyncClient, target: Target, headers: dict[str, str], body: bytes
) -> Outcome:
    """POST ``body`` to ``target`` once: the address is checked now, no redirect is followed
    and the answer is read up to :data:`MAX_RESPONSE_BYTES`."""
    started = time.perf_counter()
    try:
        address = await resolve_allowed(target)
    except RefusedUrl as exc:
        return Outcome(False, error=str(exc), seconds=time.perf_counter() - started, refused=True)
    url = httpx.URL(target.url)
    connect_host = f"[{address}]" if ":" in address else address
    request_url = url.copy_with(host=connect_host.strip("[]")) if target.scheme == "http" else url
    try:
        async with client.stream(
            "POST",
            request_url,
            content=body,
            headers={**headers, "host": url.netloc.decode()},
            follow_redirects=False,
            timeout=httpx.Timeout(TIMEOUT_SECONDS),
        ) as response:
            read = 0
            async for chunk in response.aiter_bytes():
                read += len(chunk)
                if read >= MAX_RESPONSE_BYTES:
                    break
            code = response.status_code
    except httpx.HTTPError as exc:
        return Outcome(False, error=type(exc).__name__, seconds=time.perf_counter() - started)
    seconds = time.perf_counter() - started
    if 200 <= code < 300:
        return Outcome(True, code, seconds=seconds)
    return Outcome(False, code, error=f"HTTP {code}", seconds=seconds)
