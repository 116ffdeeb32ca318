"""gzip for text answers (JSON, the OpenAPI document, HTML pages, scripts, styles) when the
client accepts it.

Only a *whole* answer is compressed: one that the application hands over in a single body
message. A streamed answer (its first body message says ``more_body``) passes through as it
comes, chunk by chunk, and so does every ``text/event-stream`` (MCP's streamable HTTP may answer
with one) and every WebSocket: compressing them would hold events back or cost a deflate per
frame for nothing (the feed turns per-message deflate off for the same reason,
``server.py``). A long-poll ``Lease`` answers one whole JSON body when it is done waiting, so it
is compressed like any other answer, without being held any longer.

Hand-written rather than Starlette's ``GZipMiddleware``: that one compresses streamed answers
chunk by chunk (holding each response start until the first chunk), decides by a list of
excluded types rather than the text types we mean, and reads ``gzip;q=0`` as accepting gzip.

The answer keeps its ``ETag`` (the assets revalidate with it; a weakened one would never match).
"""

from __future__ import annotations

import gzip

import anyio.to_thread
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COMPRESSIBLE_TYPES", "MINIMUM_SIZE", "GzipText", "accepts_gzip"]

MINIMUM_SIZE = 1024
"""Bodies smaller than this go as they are: a packet or two, which gzip would hardly shrink."""

COMPRESSIBLE_TYPES = frozenset(
    {
        "application/json",
        "application/javascript",
        "text/javascript",
        "text/css",
        "text/html",
        "text/plain",
        "image/svg+xml",
    }
)
_LEVEL = 6  # zlib's default: most of level 9's ratio at a fraction of its CPU
# A body this large is compressed in a worker thread: inline it would hold the event loop.
_THREAD_MINIMUM = 256 * 1024


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` value accepts gzip: ``gzip`` with q > 0, or, when gzip
    is not named, ``*`` with q > 0."""
    qualities: dict[str, float] = {}
    for part in accept_encoding.split(","):
        coding, _, params = part.partition(";")
        quality = 1.0
        name, _, value = params.partition("=")
        if name.strip().lower() == "q":
            try:
                quality = float(value)
            except ValueError:
                quality = 0.0  # not a q-value: not a clear yes
        qualities.setdefault(coding.strip().lower(), quality)
    return qualities.get("gzip", qualities.get("*", 0.0)) > 0


class GzipText:
    """ASGI middleware: gzip whole text answers of :data:`MINIMUM_SIZE` bytes or more."""

    def __init__(self, app: ASGIApp, minimum_size: int = MINIMUM_SIZE) -> None:
        self.app = app
        self.minimum_size = minimum_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "HEAD":
            await self.app(scope, receive, send)
            return
        await _Responder(send, self.minimum_size, _accepts(scope)).run(self.app, scope, receive)


def _accepts(scope: Scope) -> bool:
    return accepts_gzip(",".join(Headers(scope=scope).getlist("accept-encoding")))


class _Responder:
    """One answer: its start held until the first body message shows whether it is whole."""

    def __init__(self, send: Send, minimum_size: int, gzip_accepted: bool) -> None:
        self.send = send
        self.minimum_size = minimum_size
        self.gzip_accepted = gzip_accepted
        self.start: Message | None = None
        self.passing = False

    async def run(self, app: ASGIApp, scope: Scope, receive: Receive) -> None:
        await app(scope, receive, self.on_send)

    async def on_send(self, message: Message) -> None:
        if self.passing:
            await self.send(message)
        elif message["type"] == "http.response.start":
            if _compressible(message):
                self.start = message
            else:
                self.passing = True
                await self.send(message)
        elif message["type"] == "http.response.body" and self.start is not None:
            start, self.start = self.start, None
            self.passing = True
            await self._first_body(start, message)
        else:
            await self.send(message)

    async def _first_body(self, start: Message, message: Message) -> None:
        body: bytes = message.get("body", b"")
        if message.get("more_body", False) or len(body) < self.minimum_size:
            # Streamed (or small): as it comes.
            await self.send(start)
            await self.send(message)
            return
        start = {**start, "headers": list(start.get("headers", []))}
        headers = MutableHeaders(raw=start["headers"])
        headers.add_vary_header("Accept-Encoding")
        if self.gzip_accepted:
            if len(body) >= _THREAD_MINIMUM:
                body = await anyio.to_thread.run_sync(_compress, body)
            else:
                body = _compress(body)
            headers["Content-Encoding"] = "gzip"
            headers["Content-Length"] = str(len(body))
            message = {**message, "body": body}
        await self.send(start)
        await self.send(message)


def _compress(body: bytes) -> bytes:
    return gzip.compress(body, compresslevel=_LEVEL, mtime=0)


def _compressible(start: Message) -> bool:
    headers = Headers(raw=start.get("headers", []))
    status = int(start["status"])
    if status < 200 or status in (204, 206, 304) or "content-encoding" in headers:
        return False
    if "no-transform" in headers.get("cache-control", "").lower():
        return False
    media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
    return media_type in COMPRESSIBLE_TYPES
