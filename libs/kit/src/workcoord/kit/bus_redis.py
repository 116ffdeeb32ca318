"""The production :class:`~workcoord.kit.bus.NotificationBus`: one Redis stream per work
coordinator (``XADD … MAXLEN ~``), read by one background ``XREAD BLOCK`` task per process.
Listeners in the publishing process are woken directly, without a Redis round trip; the reader
skips the entries its own process wrote, so nobody sees a notification twice (see
:mod:`workcoord.kit.bus` for the semantics both buses share)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from workcoord.kit import metrics
from workcoord.kit.bus import (
    Notification,
    ReadySignal,
    Subscription,
    _LocalFanout,
    _LocalListener,
    _LocalReadySignal,
    _LocalSubscription,
    _log,
)

_FAILURE_LOG_INTERVAL = 10.0
_COOLDOWN_SECONDS = 1.0


class _RedisFanout(_LocalFanout):
    """Local fan-out that also tells the Redis reader which streams to watch."""

    def __init__(self, bus: RedisStreamBus) -> None:
        super().__init__()
        self._bus = bus

    async def register(self, listener: _LocalListener) -> None:
        if not self.watched(listener.coordinator_id):
            # Find where the stream ends *before* registering: every entry after it is ours to
            # deliver, and local publishes from here on reach us directly.
            await self._bus.watch(listener.coordinator_id)
        await super().register(listener)

    async def unregister(self, listener: _LocalListener) -> None:
        await super().unregister(listener)
        if not self.watched(listener.coordinator_id):
            self._bus.unwatch(listener.coordinator_id)


class RedisStreamBus:
    """A bus over Redis Streams: ``{stream_prefix}{coordinator_id}``, trimmed to ~``maxlen``."""

    def __init__(
        self,
        redis_url: str,
        stream_prefix: str = "workcoord:notify:",
        maxlen: int = 10_000,
        *,
        block_ms: int = 5_000,
        control_prefix: str = "workcoord:bus-control:",
    ) -> None:
        self._url = redis_url
        self._prefix = stream_prefix
        self._maxlen = maxlen
        self._block_ms = block_ms
        self.instance_id = uuid.uuid4().hex
        self._control_key = f"{control_prefix}{self.instance_id}"
        # Short timeouts on the command connection: publish runs on the request path.
        self._commands = aioredis.Redis.from_url(
            redis_url, decode_responses=True, socket_connect_timeout=1.0, socket_timeout=2.0
        )
        # The reader blocks in XREAD, so its socket timeout must outlast the BLOCK.
        self._reader_client = aioredis.Redis.from_url(
            redis_url,
            decode_responses=True,
            socket_connect_timeout=1.0,
            socket_timeout=block_ms / 1000 + 5.0,
        )
        self._fanout = _RedisFanout(self)
        # Stream key → last entry id handled; None until the stream's end could be read.
        self._cursors: dict[str, str | None] = {}
        self._control_cursor = "0-0"
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._down_until = 0.0
        self._last_failure_log = float("-inf")
        # The XADD published last (the next one waits for it; close sends it first).
        self._sending: asyncio.Future[None] | None = None

    def stream_key(self, coordinator_id: str) -> str:
        """The Redis stream carrying ``coordinator_id``'s notifications."""
        return f"{self._prefix}{coordinator_id}"

    async def publish(self, note: Notification) -> None:
        """Wake local subscribers now, then XADD for other processes; never raises.

        A notification that may ready work returns once Redis has it; a log-only one (a grant,
        a Start: only feeds and outbox senders read it) returns at once, its XADD sent behind
        the call. Either way the XADDs of this process go out in publish order (each waits
        for the one before), so a reader never sees a later revision first."""
        self._fanout.deliver(note)
        if self._closed or self._in_cooldown():
            return
        sending = asyncio.ensure_future(self._send(note, self._sending))
        self._sending = sending
        if not note.log_only:
            await sending

    async def _send(self, note: Notification, before: asyncio.Future[None] | None) -> None:
        """XADD ``note`` after the XADD of the notification published before it (if any)."""
        if before is not None and not before.done():
            # Waits without raising what it raised, and without cancelling it if we are.
            await asyncio.wait([before])
        fields = {
            "revision": str(note.revision),
            "classes": ",".join(sorted(note.worker_classes)),
            "source": self.instance_id,
        }
        if note.log_only:
            # Only when set: an entry without it reads as before (empty classes: any class).
            fields["log_only"] = "1"
        try:
            await self._commands.xadd(
                self.stream_key(note.coordinator_id),
                fields,  # type: ignore[arg-type]  # redis' stub wants a dict of its own alias
                maxlen=self._maxlen,
                approximate=True,
            )
        except (RedisError, OSError) as exc:
            metrics.BUS_PUBLISH_FAILURES.inc()
            self._failed("publish", exc)

    def subscribe(self, coordinator_id: str) -> Subscription:
        """A subscription to ``coordinator_id`` (enter it to start receiving)."""
        if self._closed:
            raise RuntimeError("the bus is closed")
        return _LocalSubscription(self._fanout, coordinator_id)

    def ready_signal(self, coordinator_id: str, *worker_classes: str) -> ReadySignal:
        """The wake-up of ``worker_classes`` in ``coordinator_id`` (enter it to listen)."""
        if self._closed:
            raise RuntimeError("the bus is closed")
        return _LocalReadySignal(self._fanout, coordinator_id, worker_classes)

    async def close(self) -> None:
        """Stop the reader, drop the control stream, close the connections."""
        self._closed = True
        if self._sending is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._sending  # a log-only XADD still on its way
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        with contextlib.suppress(RedisError, OSError):
            await self._commands.delete(self._control_key)
        await self._commands.aclose()
        await self._reader_client.aclose()

    # --- called by the fan-out ----------------------------------------------------------------

    async def watch(self, coordinator_id: str) -> None:
        """Start reading ``coordinator_id``'s stream from its current end."""
        key = self.stream_key(coordinator_id)
        if key in self._cursors:
            return
        end = await self._stream_end(key)
        # A concurrent watch of the same stream may have won; its earlier end is the safe one.
        self._cursors.setdefault(key, end)
        self._ensure_reader()
        await self._wake_reader()

    def unwatch(self, coordinator_id: str) -> None:
        """Stop reading ``coordinator_id``'s stream (the reader notices on its next turn)."""
        self._cursors.pop(self.stream_key(coordinator_id), None)

    # --- internals ------------------------------------------------------------------------------

    async def _stream_end(self, key: str) -> str | None:
        # The newest entry's id, never "$": "$" would skip what is published between now and
        # the reader's next XREAD.
        if self._in_cooldown():
            return None
        try:
            newest = await self._commands.xrevrange(key, count=1)
        except (RedisError, OSError) as exc:
            self._failed("subscribe", exc)
            return None
        return str(newest[0][0]) if newest else "0-0"

    async def _wake_reader(self) -> None:
        # The reader also watches a stream of its own; an entry there ends its XREAD BLOCK so it
        # picks up the new stream at once instead of after the block times out.
        if self._in_cooldown():
            return
        try:
            await self._commands.xadd(
                self._control_key,
                {"wake": "1"},
                maxlen=16,
                approximate=False,
            )
        except (RedisError, OSError) as exc:
            self._failed("subscribe", exc)

    def _ensure_reader(self) -> None:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(
                self._read_forever(), name=f"workcoord-bus-reader-{self.instance_id[:8]}"
            )

    async def _read_forever(self) -> None:
        backoff = 0.05
        while not self._closed:
            try:
                await self._read_once()
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis trouble must never kill the reader
                self._failed("read", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    async def _read_once(self) -> None:
        for key, cursor in list(self._cursors.items()):
            if cursor is None:
                self._cursors[key] = await self._resolve_end(key)
        streams: dict[Any, Any] = {self._control_key: self._control_cursor}
        streams.update({k: c for k, c in self._cursors.items() if c is not None})
        response = await self._reader_client.xread(streams, count=500, block=self._block_ms)
        self._down_until = 0.0
        for key, entries in _stream_entries(response):
            if key == self._control_key:
                if entries:
                    self._control_cursor = entries[-1][0]
                continue
            self._handle(key, entries)

    async def _resolve_end(self, key: str) -> str:
        newest = await self._reader_client.xrevrange(key, count=1)
        return str(newest[0][0]) if newest else "0-0"

    def _handle(self, key: str, entries: list[tuple[str, dict[str, str]]]) -> None:
        cursor = self._cursors.get(key)
        if cursor is None:
            return  # unwatched meanwhile
        coordinator_id = key[len(self._prefix) :]
        for entry_id, fields in entries:
            # Only move forward: a response to an older XREAD must not replay entries.
            if not _id_after(entry_id, cursor):
                continue
            cursor = entry_id
            if fields.get("source") == self.instance_id:
                continue  # delivered locally when it was published
            note = _parse(coordinator_id, fields)
            if note is not None:
                self._fanout.deliver(note)
        self._cursors[key] = cursor

    def _in_cooldown(self) -> bool:
        return time.monotonic() < self._down_until

    def _failed(self, what: str, exc: BaseException) -> None:
        now = time.monotonic()
        self._down_until = now + _COOLDOWN_SECONDS
        if now - self._last_failure_log >= _FAILURE_LOG_INTERVAL:
            self._last_failure_log = now
            _log.warning(
                "notification bus: Redis %s failed (%s: %s); subscribers fall back to polling",
                what,
                type(exc).__name__,
                exc,
            )


def _stream_entries(response: Any) -> Iterable[tuple[str, list[tuple[str, dict[str, str]]]]]:
    # RESP2 answers [[key, [(id, fields), …]], …]; RESP3 answers {key: [[id, fields], …]}.
    if not response:
        return []
    pairs = response.items() if isinstance(response, dict) else response
    result = []
    for key, entries in pairs:
        result.append((str(key), [(str(entry_id), dict(fields)) for entry_id, fields in entries]))
    return result


def _parse(coordinator_id: str, fields: dict[str, str]) -> Notification | None:
    try:
        revision = int(fields.get("revision", ""))
    except ValueError:
        _log.warning("notification bus: ignoring a malformed entry for %s", coordinator_id)
        return None
    classes = frozenset(c for c in fields.get("classes", "").split(",") if c)
    return Notification(coordinator_id, revision, classes, log_only=fields.get("log_only") == "1")


def _id_after(entry_id: str, cursor: str) -> bool:
    def parts(stream_id: str) -> tuple[int, int]:
        millis, _, seq = stream_id.partition("-")
        return int(millis), int(seq or 0)

    return parts(entry_id) > parts(cursor)
