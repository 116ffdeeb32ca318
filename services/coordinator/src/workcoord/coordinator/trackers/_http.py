"""What the tracker adapters share: one HTTP client per connection (short timeouts, no
redirects, bounded bodies), the outbound address check, and turning an answer into JSON or a
:class:`~workcoord.coordinator.domain.tickets.TrackerError` that never carries the credential.

Rate limits: a 429 (or a 403 whose ``x-ratelimit-remaining`` is ``0``, as GitHub sends) raises
:class:`~workcoord.coordinator.domain.tickets.TrackerRateLimited` with the wait the tracker
named (``Retry-After`` seconds or HTTP date, else ``x-ratelimit-reset`` / ``RateLimit-Reset``
epoch seconds), so the pending action waits at least that long.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from workcoord.coordinator.domain.outbound import OutboundRefused, check_outbound
from workcoord.coordinator.domain.tickets import TrackerError, TrackerRateLimited

__all__ = ["MAX_BODY_BYTES", "TIMEOUT", "TrackerHttp", "retry_after_seconds"]

TIMEOUT = httpx.Timeout(5.0)  # connect and read, as security.md asks of outbound calls
MAX_BODY_BYTES = 1 << 20
DEFAULT_RATE_LIMIT_WAIT = 60.0
ErrorText = Callable[[Any], str]


def retry_after_seconds(headers: httpx.Headers, now: float | None = None) -> float | None:
    """The wait a rate-limited answer names, in seconds (None when it names none)."""
    now = time.time() if now is None else now
    value = headers.get("retry-after")
    if value:
        with contextlib.suppress(ValueError):
            return max(0.0, float(value))
        with contextlib.suppress(TypeError, ValueError):
            return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    for name in ("x-ratelimit-reset", "ratelimit-reset"):
        value = headers.get(name)
        if value:
            with contextlib.suppress(ValueError):
                return max(0.0, float(value) - now)
    return None


class TrackerHttp:
    """One connection's HTTP client: ``call`` answers JSON or raises TrackerError."""

    def __init__(
        self,
        service: str,
        base_url: str,
        headers: dict[str, str],
        secrets: Collection[str],
        error_text: ErrorText,
        *,
        allowed_hosts: Collection[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.service = service
        self.base_url = base_url.rstrip("/")
        self._secrets = [s for s in secrets if s]
        self._error_text = error_text
        # None: the operator's own URL (the installation-wide token): not checked.
        self._allowed_hosts = allowed_hosts
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers={"User-Agent": "workcoord", **headers},
            timeout=TIMEOUT,
            follow_redirects=False,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def redact(self, text: str) -> str:
        """``text`` without any of the connection's secrets (a proxy may echo them)."""
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return text

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        params: Any = None,
    ) -> tuple[Any, httpx.Headers]:
        """The JSON body (``None`` for 204) and headers of a successful answer."""
        if self._allowed_hosts is not None:
            try:
                await check_outbound(self.base_url, self._allowed_hosts)
            except OutboundRefused as exc:
                raise TrackerError(f"{self.service} address refused: {exc}") from exc
        try:
            response = await self._client.request(method, path, json=json, params=params)
        except httpx.HTTPError as exc:
            raise TrackerError(f"{self.service} unreachable: {type(exc).__name__}") from exc
        if len(response.content) > MAX_BODY_BYTES:
            raise TrackerError(f"{self.service} answered with a body over {MAX_BODY_BYTES} bytes")
        status = response.status_code
        if status >= 300:
            message = ""
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                message = self._error_text(response.json())
            message = self.redact(message)[:200]
            text = f"{self.service} answered {status}: {message}".rstrip(": ")
            limited = status == 429 or (
                status == 403 and response.headers.get("x-ratelimit-remaining") == "0"
            )
            if limited:
                wait = retry_after_seconds(response.headers)
                raise TrackerRateLimited(text, DEFAULT_RATE_LIMIT_WAIT if wait is None else wait)
            raise TrackerError(text)
        if status == 204 or not response.content:
            return None, response.headers
        try:
            return response.json(), response.headers
        except ValueError as exc:
            raise TrackerError(f"{self.service} answered with something other than JSON") from exc

    async def call_object(
        self, method: str, path: str, *, json: dict[str, Any] | None = None, params: Any = None
    ) -> dict[str, Any]:
        body, _headers = await self.call(method, path, json=json, params=params)
        if not isinstance(body, dict):
            raise TrackerError(f"{self.service} answered with an unexpected shape")
        return body
