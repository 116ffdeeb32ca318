"""The outbound address check of tracker (and webhook) URLs: https only, and no loopback,
link-local, private or metadata address unless the operator lists the host in
``WORKCOORD_WEBHOOK_ALLOWED_HOSTS``. Checked when a URL is set (its shape) and again at each
connection (what its name resolves to now)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Collection
from urllib.parse import urlsplit

__all__ = ["OutboundRefused", "check_outbound", "check_outbound_shape"]


class OutboundRefused(ValueError):
    """The URL may not be called; the message says why (safe to show)."""


def _host(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        _ = parts.port  # a bad port raises here
    except ValueError as exc:
        raise OutboundRefused("not a URL") from exc
    if not host:
        raise OutboundRefused("not a URL with a host")
    if parts.username or parts.password:
        raise OutboundRefused("a URL may not carry credentials")
    return host.lower()


def check_outbound_shape(url: str, allowed_hosts: Collection[str]) -> None:
    """Refuse what can be refused without resolving: a scheme other than https (http only
    for an allowed host), credentials in the URL, or an IP literal that is not public."""
    host = _host(url)
    allowed = host in {h.lower() for h in allowed_hosts}
    scheme = urlsplit(url).scheme
    if scheme != "https" and not (allowed and scheme == "http"):
        raise OutboundRefused("must be an https URL")
    if allowed:
        return
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return
    _check_address(address)


async def check_outbound(url: str, allowed_hosts: Collection[str]) -> None:
    """:func:`check_outbound_shape`, then every address the host resolves to must be public."""
    check_outbound_shape(url, allowed_hosts)
    host = _host(url)
    if host in {h.lower() for h in allowed_hosts}:
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise OutboundRefused(f"{host} does not resolve") from exc
    for info in infos:
        _check_address(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]))


def _check_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if (
        address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    ):
        raise OutboundRefused(f"{address} is not a public address")
