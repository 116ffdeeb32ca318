"""GitHub Issues as a ticket tracker (REST over httpx; GitHub Enterprise via the base URL).

Keys look like ``owner/repo#12``. Requests carry ``Authorization: Bearer <token>``; the token
never appears in an error, a log line or an event. GitHub's REST API has no read of several
issues by number, so :meth:`GitHubIssues.get_states` reads them one by one.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

import httpx

from workcoord.coordinator.domain.tickets import TrackerError, TrackerRateLimited

from ._http import TrackerHttp

_KEY = re.compile(
    r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/(?P<repo>[A-Za-z0-9._-]{1,100})#(?P<number>[1-9][0-9]{0,9})"
)


def parse_key(key: str) -> tuple[str, str, int]:
    """``owner/repo#12`` → ("owner", "repo", 12); raises TrackerError otherwise."""
    match = _KEY.fullmatch(key)
    if match is None:
        raise TrackerError(f"not a GitHub issue key (owner/repo#number): {key!r}")
    return match["owner"], match["repo"], int(match["number"])


def _error_text(body: Any) -> str:
    return str(body.get("message", ""))  # {"message": "Bad credentials", "documentation_url": …}


class GitHubIssues:
    """Reads and closes GitHub issues."""

    name = "github"

    def __init__(
        self,
        token: str,
        base_url: str = "https://api.github.com",
        *,
        allowed_hosts: Collection[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = TrackerHttp(
            "GitHub",
            base_url,
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
            [token],
            _error_text,
            allowed_hosts=allowed_hosts,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def get_state(self, key: str) -> str:
        owner, repo, number = parse_key(key)
        body = await self._http.call_object("GET", f"/repos/{owner}/{repo}/issues/{number}")
        state = str(body.get("state", "")).lower()
        if state not in ("open", "closed"):
            raise TrackerError(f"GitHub gave an unknown state for {key}")
        return state.upper()

    async def get_states(self, keys: Sequence[str]) -> dict[str, str]:
        """One read per issue; an issue GitHub refuses is left out, unless every one is (a bad
        token, an outage): then that error is raised. A rate limit is raised at once."""
        states: dict[str, str] = {}
        last: TrackerError | None = None
        for key in keys:
            try:
                states[key] = await self.get_state(key)
            except TrackerRateLimited:
                raise
            except TrackerError as exc:
                last = exc
        if last is not None and not states:
            raise last
        return states

    async def close(self, key: str) -> None:
        owner, repo, number = parse_key(key)
        await self._http.call_object(
            "PATCH",
            f"/repos/{owner}/{repo}/issues/{number}",
            json={"state": "closed", "state_reason": "completed"},
        )
