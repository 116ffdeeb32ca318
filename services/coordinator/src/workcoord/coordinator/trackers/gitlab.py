"""GitLab issues as a ticket tracker (REST API v4; gitlab.com or a self-managed instance).

Keys look like ``group/subgroup/project#12`` (the project's full path and the issue's iid).
Requests carry ``PRIVATE-TOKEN: <token>``. A closure is ``PUT …/issues/:iid`` with
``state_event=close``; states are read in pages of 100 by ``iids[]``, following ``X-Next-Page``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from workcoord.coordinator.domain.tickets import TrackerError

from ._http import TrackerHttp

_KEY = re.compile(
    r"(?P<project>[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}(?:/[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}){1,20})#(?P<iid>[1-9][0-9]{0,9})"
)
_PAGE = 100
_STATES = {"opened": "OPEN", "closed": "CLOSED"}


def parse_key(key: str) -> tuple[str, int]:
    """``group/proj#12`` → ("group/proj", 12); raises TrackerError otherwise."""
    match = _KEY.fullmatch(key)
    if match is None or ".." in match["project"]:
        raise TrackerError(f"not a GitLab issue key (group/project#iid): {key!r}")
    return match["project"], int(match["iid"])


def _error_text(body: Any) -> str:
    # {"message": "401 Unauthorized"}, {"message": {"state_event": [...]}}, {"error": "…"}
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error") or "")
    return ""


def _state(key: str, issue: Any) -> str:
    state = _STATES.get(str(issue.get("state", "")) if isinstance(issue, dict) else "")
    if state is None:
        raise TrackerError(f"GitLab gave an unknown state for {key}")
    return state


class GitLabIssues:
    """Reads and closes GitLab issues."""

    name = "gitlab"

    def __init__(
        self,
        token: str,
        base_url: str = "https://gitlab.com",
        *,
        allowed_hosts: Collection[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        base = base_url.rstrip("/")
        if not base.endswith("/api/v4"):
            base += "/api/v4"
        self._http = TrackerHttp(
            "GitLab",
            base,
            {"PRIVATE-TOKEN": token, "Accept": "application/json"},
            [token],
            _error_text,
            allowed_hosts=allowed_hosts,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def get_state(self, key: str) -> str:
        project, iid = parse_key(key)
        issue = await self._http.call_object(
            "GET", f"/projects/{quote(project, safe='')}/issues/{iid}"
        )
        return _state(key, issue)

    async def get_states(self, keys: Sequence[str]) -> dict[str, str]:
        by_project: dict[str, dict[int, str]] = {}
        for key in keys:
            project, iid = parse_key(key)
            by_project.setdefault(project, {})[iid] = key
        states: dict[str, str] = {}
        for project, wanted in by_project.items():
            iids = sorted(wanted)
            for start in range(0, len(iids), _PAGE):
                chunk = iids[start : start + _PAGE]
                page: str | None = "1"
                while page:
                    params = [("iids[]", str(i)) for i in chunk]
                    params += [("per_page", str(_PAGE)), ("page", page), ("scope", "all")]
                    body, headers = await self._http.call(
                        "GET", f"/projects/{quote(project, safe='')}/issues", params=params
                    )
                    if not isinstance(body, list):
                        raise TrackerError("GitLab answered with an unexpected shape")
                    for issue in body:
                        found = issue.get("iid") if isinstance(issue, dict) else None
                        if isinstance(found, int) and found in wanted:
                            states[wanted[found]] = _state(wanted[found], issue)
                    page = headers.get("x-next-page") or None
        return states

    async def close(self, key: str) -> None:
        project, iid = parse_key(key)
        await self._http.call_object(
            "PUT",
            f"/projects/{quote(project, safe='')}/issues/{iid}",
            json={"state_event": "close"},
        )
