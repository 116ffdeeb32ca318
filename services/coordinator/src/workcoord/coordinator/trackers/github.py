"""GitHub Issues as a ticket tracker (REST over httpx; GitHub Enterprise via the base URL).

Keys look like ``owner/repo#12``. The token comes from configuration and never appears in an
error, a log line or an event.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import httpx

from workcoord.coordinator.domain.tickets import TrackerError

_KEY = re.compile(
    r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/(?P<repo>[A-Za-z0-9._-]{1,100})#(?P<number>[1-9][0-9]{0,9})"
)


def parse_key(key: str) -> tuple[str, str, int]:
    """``owner/repo#12`` → ("owner", "repo", 12); raises TrackerError otherwise."""
    match = _KEY.fullmatch(key)
    if match is None:
        raise TrackerError(f"not a GitHub issue key (owner/repo#number): {key!r}")
    return match["owner"], match["repo"], int(match["number"])


class GitHubIssues:
    """Reads and closes GitHub issues."""

    name = "github"

    def __init__(
        self,
        token: str,
        base_url: str = "https://api.github.com",
        *,
        timeout_seconds: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._token = token
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "workcoord",
            },
            timeout=timeout_seconds,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def get_state(self, key: str) -> str:
        owner, repo, number = parse_key(key)
        body = await self._call("GET", f"/repos/{owner}/{repo}/issues/{number}", None)
        state = str(body.get("state", "")).lower()
        if state not in ("open", "closed"):
            raise TrackerError(f"GitHub gave an unknown state for {key}")
        return state.upper()

    async def close(self, key: str) -> None:
        owner, repo, number = parse_key(key)
        await self._call(
            "PATCH",
            f"/repos/{owner}/{repo}/issues/{number}",
            {"state": "closed", "state_reason": "completed"},
        )

    async def _call(self, method: str, path: str, payload: dict[str, Any] | None) -> dict[str, Any]:
        try:
            response = await self._client.request(method, path, json=payload)
        except httpx.HTTPError as exc:
            raise TrackerError(f"GitHub unreachable: {type(exc).__name__}") from exc
        if response.status_code >= 300:
            message = ""
            with contextlib.suppress(ValueError, AttributeError):  # not JSON, or not an object
                message = str(response.json().get("message", ""))
            if self._token:
                # A proxy may echo the credential it was shown: never let it into an error.
                message = message.replace(self._token, "[redacted]")
            message = message[:200]
            raise TrackerError(f"GitHub answered {response.status_code}: {message}".rstrip(": "))
        try:
            body = response.json()
        except ValueError as exc:
            raise TrackerError("GitHub answered with something other than JSON") from exc
        if not isinstance(body, dict):
            raise TrackerError("GitHub answered with an unexpected shape")
        return body
