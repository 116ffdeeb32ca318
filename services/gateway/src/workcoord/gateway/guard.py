"""Connection limits under uvicorn's HTTP protocol: what a client may hold before it has even
been authenticated.

uvicorn reads a request's headers and body for as long as the client cares to send them, and
accepts every connection the kernel hands it, so a few thousand half-sent requests hold every
file descriptor of a gateway. :func:`guarded_protocol` is uvicorn's httptools protocol with:

- a **header deadline**: the request line and headers must arrive within
  ``header_timeout_seconds`` of the connection opening (or of a kept-alive connection's next
  request starting), else ``408`` and the connection closes;
- a **body deadline**: a request's whole body must arrive within ``body_timeout_seconds`` of its
  headers, else ``408`` (when no answer has started) and the connection closes, and the
  application reading it sees the client gone;
- a **header size limit**: 64 KiB for a request's whole head (request line and every header
  together, however the bytes arrive), else ``431`` and the connection closes;
- a WebSocket handshake whose head the WebSocket parser would not read (a line over 8 KiB,
  over 128 headers) is answered ``431`` at once: that parser drops it without an answer, which
  would leave the client waiting and its connection held;
- a **connection cap**: with ``max_connections`` connections open (HTTP and WebSocket), a new
  one is answered ``503`` and closed at once, so its descriptor is freed immediately.

Refusals are logged at WARNING; the rate limit of :mod:`workcoord.kit.logging` keeps a flood of
them to a few lines and a count.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from websockets.http11 import MAX_LINE_LENGTH as _WS_MAX_LINE
from websockets.http11 import MAX_NUM_HEADERS as _WS_MAX_HEADERS

__all__ = ["ConnectionLimits", "effective_max_connections", "guarded_protocol"]

_log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 64 * 1024
# Descriptors kept for everything but client sockets: upstream channels, logs, Redis, …
_FD_RESERVE = 128


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits one gateway applies to its client connections."""

    header_timeout_seconds: float
    body_timeout_seconds: float
    max_connections: int


def effective_max_connections(wanted: int) -> int:
    """``wanted``, raising the process's open-file limit to fit it when allowed, else as many
    connections as the limit leaves room for (logged once)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + _FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return wanted
    room = max(1, soft - _FD_RESERVE)
    _log.warning(
        "WORKCOORD_GATEWAY_MAX_CONNECTIONS=%d does not fit the open-file limit (%d): "
        "capping client connections at %d",
        wanted,
        soft,
        room,
    )
    return room


def _answer(status: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


_REFUSED = _answer(b"503 Service Unavailable")
_TIMED_OUT = _answer(b"408 Request Timeout")
_HEADERS_TOO_LARGE = _answer(b"431 Request Header Fields Too Large")


class _HeadTooLarge(Exception):
    """A request's head grew past :data:`MAX_HEADER_BYTES` while being parsed."""


def guarded_protocol(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol class with ``limits`` applied (pass it as ``http=``)."""

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        _refused = False
        _reading_headers = False
        # Two lower bounds of the head's size, either of which refuses it past the limit: the
        # bytes received while the head was incomplete (a header trickled in over many reads
        # is buffered by the parser before any callback sees it), and the parsed parts (a head
        # that arrives whole in one read is never incomplete after it).
        _header_bytes = 0
        _head_parts_bytes = 0
        _head_too_large = False
        _longest_line = 0
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.connections) >= limits.max_connections:
                self._refused = True
                _log.warning(
                    "connection refused: %d client connections open (the limit)",
                    limits.max_connections,
                )
                transport.write(_REFUSED)
                transport.close()
                return
            super().connection_made(transport)
            self._expect_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            super().data_received(data)
            # Counted after parsing: a chunk that completed the headers may carry body bytes,
            # which are not the headers' (the body deadline and size limit are theirs).
            if self._reading_headers:
                self._header_bytes += len(data)
                if self._header_bytes > MAX_HEADER_BYTES:
                    self._give_up(_HEADERS_TOO_LARGE, "request headers larger than 64 KiB")

        def on_url(self, url: bytes) -> None:
            self._count_head(len(url))
            super().on_url(url)
            # The request line as uvicorn hands it on: "GET " + url + " HTTP/1.1\r\n".
            self._longest_line = max(self._longest_line, len(self.url) + 20)

        def on_header(self, name: bytes, value: bytes) -> None:
            # As sent: the name, ": ", the value and CRLF.
            line = len(name) + len(value) + 4
            self._count_head(line)
            self._longest_line = max(self._longest_line, line)
            super().on_header(name, value)

        def _count_head(self, size: int) -> None:
            self._head_parts_bytes += size
            if self._head_parts_bytes > MAX_HEADER_BYTES:
                self._head_too_large = True
                # Raised inside the parser, this stops it before the request reaches the
                # application; uvicorn then answers through send_400_response.
                raise _HeadTooLarge

        def send_400_response(self, msg: str) -> None:
            if self._head_too_large:
                self._give_up(_HEADERS_TOO_LARGE, "request headers larger than 64 KiB")
                return
            super().send_400_response(msg)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if not self._reading_headers:
                # A kept-alive connection's next request: its headers get a fresh deadline.
                self._expect_headers()

        def on_headers_complete(self) -> None:
            self._reading_headers = False
            self._disarm()
            super().on_headers_complete()
            cycle = self.cycle
            upgrading = self.parser.should_upgrade() and self._should_upgrade()
            if not upgrading and cycle is not None and cycle.more_body:
                self._arm(limits.body_timeout_seconds, self._body_timed_out)

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def handle_websocket_upgrade(self) -> None:
            self._disarm()
            if self._longest_line > _WS_MAX_LINE or len(self.headers) > _WS_MAX_HEADERS:
                self._give_up(_HEADERS_TOO_LARGE, "WebSocket handshake headers too large")
                return
            super().handle_websocket_upgrade()

        def _expect_headers(self) -> None:
            self._reading_headers = True
            self._header_bytes = 0
            self._head_parts_bytes = 0
            self._longest_line = 0
            self._arm(limits.header_timeout_seconds, self._headers_timed_out)

        def _arm(self, seconds: float, callback: Any) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, callback)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _headers_timed_out(self) -> None:
            self._deadline = None
            if self._reading_headers:
                self._give_up(_TIMED_OUT, "request headers not received in time")

        def _body_timed_out(self) -> None:
            self._deadline = None
            cycle = self.cycle
            if cycle is None or not cycle.more_body:
                return
            answer = _TIMED_OUT if not cycle.response_started else None
            # The application reading the body sees the client gone.
            cycle.disconnected = True
            cycle.message_event.set()
            self._give_up(answer, "request body not received in time")

        def _give_up(self, answer: bytes | None, why: str) -> None:
            self._disarm()
            self._reading_headers = False
            transport = self.transport
            if transport is None or transport.is_closing():
                return
            _log.warning("closing a client connection: %s", why)
            if answer is not None:
                transport.write(answer)
            transport.close()

    return GuardedHttpToolsProtocol
