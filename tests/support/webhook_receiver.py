"""A local webhook receiver for tests and B9: a minimal HTTP/1.1 server on 127.0.0.1:0 (asyncio
streams, keep-alive) that records each POST (its headers, body and arrival time) and answers
with the status its ``answer`` says (200 unless told otherwise; ``None``: hold the request
unanswered until the receiver stops, as a receiver that hangs)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

__all__ = ["Receipt", "WebhookReceiver"]


@dataclass(frozen=True, slots=True)
class Receipt:
    path: str
    headers: dict[str, str]
    body: bytes
    monotonic: float


@dataclass
class WebhookReceiver:
    """``answer(n)`` gives the status of the ``n``-th request (0-based)."""

    answer: Callable[[int], int | None] = lambda _n: 200
    receipts: list[Receipt] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _hold: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hook"

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._hold.set()
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def wait_for(self, count: int, timeout: float = 30.0) -> list[Receipt]:  # noqa: ASYNC109
        """The first ``count`` receipts, once they have arrived (generous timeout)."""
        async with asyncio.timeout(timeout), self._arrived:
            await self._arrived.wait_for(lambda: len(self.receipts) >= count)
        return self.receipts[:count]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                _method, path, _version = line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                n = len(self.receipts)
                async with self._arrived:
                    self.receipts.append(Receipt(path, headers, body, time.monotonic()))
                    self._arrived.notify_all()
                status = self.answer(n)
                if status is None:
                    await self._hold.wait()
                    return
                writer.write(f"HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\nok".encode())
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            writer.close()
