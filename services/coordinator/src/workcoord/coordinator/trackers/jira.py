"""Jira (Cloud REST API v3) as a ticket tracker.

Keys look like ``PROJ-123``. The connection's credential is ``email:api-token``, sent as HTTP
basic authentication. A closure moves the issue through the transition that leads to the
connection's done status (by name, e.g. ``Done``); an issue already in that status, or in any
status of the ``done`` category, reads as ``CLOSED`` and closing it again does nothing. States
are read in pages with the enhanced JQL search (``POST /rest/api/3/search/jql``, following
``nextPageToken``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Collection, Sequence
from typing import Any

import httpx

from workcoord.coordinator.domain.tickets import TrackerError, TrackerRateLimited

from ._http import TrackerHttp

_KEY = re.compile(r"[A-Z][A-Z0-9_]{0,49}-[1-9][0-9]{0,9}")
_PAGE = 100


def parse_key(key: str) -> str:
    if _KEY.fullmatch(key) is None:
        raise TrackerError(f"not a Jira issue key (PROJ-123): {key!r}")
    return key


def _error_text(body: Any) -> str:
    # {"errorMessages": ["Issue does not exist or you do not have permission to see it."],
    #  "errors": {"field": "message"}}
    if not isinstance(body, dict):
        return ""
    messages = [str(m) for m in body.get("errorMessages") or []]
    errors = body.get("errors")
    if isinstance(errors, dict):
        messages += [f"{k}: {v}" for k, v in errors.items()]
    return "; ".join(messages) or str(body.get("message", ""))


class JiraIssues:
    """Reads Jira issues and transitions them to the done status."""

    name = "jira"

    def __init__(
        self,
        credential: str,
        base_url: str,
        done_status: str = "Done",
        *,
        allowed_hosts: Collection[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        email, colon, token = credential.partition(":")
        if not colon or not email or not token:
            raise TrackerError("a Jira credential is email:api-token")
        basic = base64.b64encode(credential.encode()).decode()
        self.done_status = done_status or "Done"
        self._http = TrackerHttp(
            "Jira",
            base_url,
            {"Authorization": f"Basic {basic}", "Accept": "application/json"},
            [credential, token, basic],
            _error_text,
            allowed_hosts=allowed_hosts,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _state(self, key: str, issue: Any) -> str:
        status = (issue.get("fields") or {}).get("status") if isinstance(issue, dict) else None
        if not isinstance(status, dict) or "name" not in status:
            raise TrackerError(f"Jira gave no status for {key}")
        category = (status.get("statusCategory") or {}).get("key")
        done = str(status["name"]).casefold() == self.done_status.casefold() or category == "done"
        return "CLOSED" if done else "OPEN"

    async def get_state(self, key: str) -> str:
        parse_key(key)
        issue = await self._http.call_object(
            "GET", f"/rest/api/3/issue/{key}", params={"fields": "status"}
        )
        return self._state(key, issue)

    async def get_states(self, keys: Sequence[str]) -> dict[str, str]:
        try:
            return await self._search_states(keys)
        except TrackerRateLimited:
            raise
        except TrackerError:
            # Jira refuses a whole search (400) when one key no longer exists: read one by one.
            states: dict[str, str] = {}
            for key in keys:
                try:
                    states[key] = await self.get_state(key)
                except TrackerRateLimited:
                    raise
                except TrackerError:
                    continue
            return states

    async def _search_states(self, keys: Sequence[str]) -> dict[str, str]:
        wanted = sorted({parse_key(k) for k in keys})
        states: dict[str, str] = {}
        for start in range(0, len(wanted), _PAGE):
            chunk = wanted[start : start + _PAGE]
            query: dict[str, Any] = {
                "jql": f"key in ({', '.join(chunk)})",
                "fields": ["status"],
                "maxResults": _PAGE,
            }
            while True:
                body = await self._http.call_object("POST", "/rest/api/3/search/jql", json=query)
                for issue in body.get("issues") or []:
                    key = issue.get("key") if isinstance(issue, dict) else None
                    if key in chunk:
                        states[key] = self._state(key, issue)
                token = body.get("nextPageToken")
                if body.get("isLast", True) or not token:
                    break
                query["nextPageToken"] = token
        return states

    async def close(self, key: str) -> None:
        if await self.get_state(key) == "CLOSED":
            return
        body = await self._http.call_object("GET", f"/rest/api/3/issue/{key}/transitions")
        wanted = self.done_status.casefold()
        for transition in body.get("transitions") or []:
            target = (transition.get("to") or {}).get("name", "")
            if str(target).casefold() == wanted:
                await self._http.call(
                    "POST",
                    f"/rest/api/3/issue/{key}/transitions",
                    json={"transition": {"id": str(transition.get("id", ""))}},
                )
                return
        raise TrackerError(f"Jira has no transition of {key} to the status {self.done_status!r}")
