"""Injected time: every service reads the clock through a :class:`Clock`, so tests never sleep.

:class:`OffsetFileClock` is an end-to-end test seam: with ``WORKCOORD_TEST_CLOCK_FILE`` set, a
service's clock runs ahead by the number of seconds written in that file, so a test can expire
leases in separate service processes by writing a number instead of waiting.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

__all__ = [
    "TEST_CLOCK_ENV",
    "Clock",
    "ManualClock",
    "OffsetFileClock",
    "SystemClock",
    "clock_from_env",
]

TEST_CLOCK_ENV = "WORKCOORD_TEST_CLOCK_FILE"

_log = logging.getLogger(__name__)


class Clock(Protocol):
    """Wall-clock time (timezone-aware UTC) and a monotonic reading for measuring intervals."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never goes backwards."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to; for tests."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _require_aware(start or datetime(2026, 1, 1, tzinfo=UTC))
        self._monotonic = 1000.0

    def now(self) -> datetime:
        """The time last set."""
        return self._now

    def monotonic(self) -> float:
        """Moves together with :meth:`advance` (but not with :meth:`set`)."""
        return self._monotonic

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (forwards or backwards, like a wall clock can)."""
        self._now = _require_aware(when)

    def advance(self, delta: float | timedelta) -> datetime:
        """Move forward by ``delta`` (seconds or a timedelta); returns the new time."""
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        if seconds < 0:
            raise ValueError("a ManualClock only advances; use set() to go back")
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds
        return self._now


class OffsetFileClock:
    """A base clock plus an offset in seconds read from a file, re-read on every reading (or at
    most every ``refresh_seconds``, when given): a test that rewrites the file needs no settling
    time before the next reading sees it.

    A missing, empty or malformed file means offset 0. :meth:`monotonic` includes the offset
    too (so timers fire after a jump) but never goes backwards.
    """

    def __init__(
        self, path: str | Path, base: Clock | None = None, refresh_seconds: float = 0.0
    ) -> None:
        self._path = Path(path)
        self._base = base or SystemClock()
        self._refresh_seconds = refresh_seconds
        self._offset = 0.0
        self._read_at: float | None = None
        self._last_monotonic = float("-inf")
        self._lock = threading.Lock()

    def offset(self) -> float:
        """The current offset in seconds."""
        with self._lock:
            real = self._base.monotonic()
            if self._read_at is None or real - self._read_at >= self._refresh_seconds:
                # A tiny synchronous read, only in tests.
                self._offset = self._read_offset()
                self._read_at = real
            return self._offset

    def now(self) -> datetime:
        """Base time plus the offset."""
        return self._base.now() + timedelta(seconds=self.offset())

    def monotonic(self) -> float:
        """Base monotonic reading plus the offset, clamped so it never decreases."""
        value = self._base.monotonic() + self.offset()
        with self._lock:
            self._last_monotonic = max(self._last_monotonic, value)
            return self._last_monotonic

    def _read_offset(self) -> float:
        try:
            text = self._path.read_text().strip()
        except FileNotFoundError:
            return 0.0
        except OSError as exc:
            _log.warning("cannot read test clock file %s: %s", self._path, exc)
            return self._offset
        if not text:
            return 0.0
        try:
            return float(text)
        except ValueError:
            _log.warning("test clock file %s holds no number", self._path)
            return self._offset


def clock_from_env(env: Mapping[str, str] | None = None) -> Clock:
    """The system clock, or an :class:`OffsetFileClock` if ``WORKCOORD_TEST_CLOCK_FILE`` is set."""
    path = (env if env is not None else os.environ).get(TEST_CLOCK_ENV)
    if path:
        _log.warning("test clock active: time is offset by the seconds in %s", path)
        return OffsetFileClock(path)
    return SystemClock()


def _require_aware(when: datetime) -> datetime:
    if when.tzinfo is None:
        raise ValueError("clock times must be timezone-aware")
    return when.astimezone(UTC)
