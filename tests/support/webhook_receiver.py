"""A local webhook receiver for tests and B9: a minimal HTTP/1.1 server on 127.0.0.1:0 (asyncio
streams, keep-alive) that records each POST (its headers, body and arrival time) and answers
with the status its ``answer`` says (200 unless told otherwise; ``None``: hold the request
unanswered until the receiver stops, as a receiver that hangs)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

__all__ = ["Receipt", "ThreadedReceiver", "WebhookReceiver"]


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


class ThreadedReceiver:
    """A :class:`WebhookReceiver` on its own event loop in a thread, for synchronous tests (the
    browser tests): ``with ThreadedReceiver(answer) as receiver: receiver.url …``."""

    def __init__(self, answer: Callable[[int], int | None] = lambda _n: 200) -> None:
        self._answer = answer
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._receiver: WebhookReceiver | None = None

    def __enter__(self) -> Self:
        self._thread.start()

        async def start() -> WebhookReceiver:
            receiver = WebhookReceiver(self._answer)
            await receiver.__aenter__()
            return receiver

        self._receiver = asyncio.run_coroutine_threadsafe(start(), self._loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        receiver = self._receiver

        async def stop() -> None:
            if receiver is not None:
                await receiver.__aexit__()
            # Connections still open (kept alive) end here, not with the loop closed under them.
            current = asyncio.current_task()
            tasks = [task for task in asyncio.all_tasks() if task is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    @property
    def url(self) -> str:
        assert self._receiver is not None
        return self._receiver.url

    @property
    def receipts(self) -> list[Receipt]:
        assert self._receiver is not None
        return list(self._receiver.receipts)

    def wait_for(self, count: int, timeout: float = 60.0) -> list[Receipt]:
        """The first ``count`` receipts, once they have arrived (generous timeout)."""
        assert self._receiver is not None
        waiting = self._receiver.wait_for(count, timeout)
        return asyncio.run_coroutine_threadsafe(waiting, self._loop).result(timeout + 5)
