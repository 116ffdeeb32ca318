"""What stops a service from starting, said in one line.

A service that cannot start must say why in one line and exit non-zero, never log a traceback
or, worse, keep running half-bound. :class:`StartupError` is that line; the command line
(``workcoord serve …``, ``workcoord dev``) prints it and exits 1. :func:`ensure_bindable`
checks a listen address before a server takes it, so "address already in use" is reported by
us instead of as gRPC's C-core log noise.
"""

from __future__ import annotations

import errno
import random
import socket
import threading

__all__ = ["AddressInUse", "StartupError", "ensure_bindable", "free_port", "split_address"]


class StartupError(Exception):
    """The service cannot start; the message is one line saying why and what to do."""


class AddressInUse(StartupError):
    """Another process already listens on the address this service was told to use."""

    def __init__(self, address: str, what: str) -> None:
        self.address = address
        super().__init__(f"cannot listen on {address} ({what}): the address is already in use")


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) as ``(host, port)``; the host without brackets."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def ensure_bindable(address: str, what: str) -> None:
    """Raise :class:`AddressInUse` if something listens on ``address`` already.

    Port 0 (any free port) always passes. The probe uses ``SO_REUSEADDR`` like the servers do,
    so a port in TIME_WAIT after a restart is free, while a live listener is not; servers
    themselves never set ``SO_REUSEPORT``, so the answer holds when they bind a moment later.
    """
    host, port = split_address(address)
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    wildcard = host in ("", "0.0.0.0", "::")  # noqa: S104 - checking, not binding
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host or "0.0.0.0", port))  # noqa: S104
            probe.listen(1)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise AddressInUse(address, what) from None
            raise StartupError(f"cannot listen on {address} ({what}): {exc.strerror}") from None
    if wildcard and family == socket.AF_INET and socket.has_ipv6:
        # gRPC binds the IPv6 wildcard (dual stack) for 0.0.0.0: a listener on [::] counts too.
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe6:
            probe6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe6.bind(("::", port))
                probe6.listen(1)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise AddressInUse(address, what) from None
                # No IPv6 on this host: the IPv4 probe above is the whole answer.


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago (for tests, benchmarks and checks that
    start servers; another process may still take it before they bind).

    The port lies below the kernel's ephemeral range, so no outgoing connection of this host
    takes it as its local port before the server binds, and one process never gets the same port
    twice (checks start several clusters side by side in threads).
    """
    low, high = _FREE_RANGE
    with _HANDED_OUT_LOCK:
        for _ in range(500):
            port = random.randint(low, high)
            if port in _HANDED_OUT:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
            _HANDED_OUT.add(port)
            return port
    raise StartupError(f"no free port between {low} and {high} on {host}")


def _ephemeral_low() -> int:
    """The first port the kernel hands to outgoing connections (Linux; 32768 elsewhere)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_EPHEMERAL_LOW = _ephemeral_low()
_FREE_RANGE = (max(1024, _EPHEMERAL_LOW - 12000), _EPHEMERAL_LOW - 1)
_HANDED_OUT: set[int] = set()
_HANDED_OUT_LOCK = threading.Lock()
