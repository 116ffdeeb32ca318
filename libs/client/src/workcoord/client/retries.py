"""Retrying the coordinator's transient answers: exponential backoff with jitter.

A transient answer is one a later identical call may not get: the server unreachable or
restarting (``UNAVAILABLE``, ``CANCELLED`` by the server), a deadline that passed, or a
transaction aborted by contention (``ABORTED``). ``LEASE_LOST`` is also ``ABORTED`` but is
final: the lease is gone and the worker must stop, so it is never retried.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from workcoord.kit.errors import Code, LeaseLost, WorkcoordError

__all__ = ["Backoff", "RetryClock", "call_with_retries", "is_transient", "new_request_id"]

_T = TypeVar("_T")

_TRANSIENT_CODES = frozenset(
    {Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.ABORTED, Code.CANCELLED}
)


def new_request_id() -> str:
    """A fresh random request id (128 bits, hex): the same id on every retry of one intended
    call lets the server answer a retry instead of doing the work twice."""
    return secrets.token_hex(16)


def is_transient(err: WorkcoordError) -> bool:
    """Whether the same call may succeed later (never for ``LEASE_LOST``)."""
    if isinstance(err, LeaseLost) or err.reason == LeaseLost.reason:
        return False
    return err.code in _TRANSIENT_CODES


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays of ``initial * multiplier**n`` seconds, capped at ``maximum``, each scaled by a
    random factor in ``[1 - jitter, 1 + jitter]`` so a fleet does not retry in step."""

    initial: float = 0.2
    multiplier: float = 2.0
    maximum: float = 10.0
    jitter: float = 0.5

    def delay(self, retry: int, uniform: Callable[[float, float], float]) -> float:
        """The pause before retry number ``retry`` (0-based)."""
        base = min(self.maximum, self.initial * self.multiplier ** min(retry, 64))
        return max(0.0, base * uniform(1.0 - self.jitter, 1.0 + self.jitter))


@dataclass(frozen=True, slots=True)
class RetryClock:
    """Time as the retry loop sees it; tests replace ``sleep`` and ``uniform``."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    uniform: Callable[[float, float], float] = random.uniform


async def call_with_retries(
    call: Callable[[], Awaitable[_T]],
    *,
    backoff: Backoff,
    until: float | None = None,
    clock: RetryClock | None = None,
    on_retry: Callable[[WorkcoordError, float], None] | None = None,
    retry_also: Callable[[WorkcoordError], bool] | None = None,
) -> _T:
    """Await ``call()``, calling it again after transient errors with backoff.

    Stops retrying (re-raising the last error) once the next attempt would start after
    ``until`` (a ``clock.monotonic`` reading; None retries for as long as it takes).
    ``retry_also`` widens what counts as transient (e.g. ``WORKER_FENCED`` for a lease
    request). ``on_retry(error, delay)`` is told before each pause.
    """
    clock = clock or RetryClock()
    retry = 0
    while True:
        try:
            return await call()
        except WorkcoordError as err:
            if not (is_transient(err) or (retry_also is not None and retry_also(err))):
                raise
            delay = backoff.delay(retry, clock.uniform)
            if until is not None and clock.monotonic() + delay >= until:
                raise
            if on_retry is not None:
                on_retry(err, delay)
            await clock.sleep(delay)
            retry += 1
