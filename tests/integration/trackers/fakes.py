"""Local fakes of the GitLab (REST v4) and Jira (Cloud REST v3) endpoints the adapters use.

Each is a real HTTP server on 127.0.0.1 (a ``ThreadingHTTPServer`` in a daemon thread) that
checks its service's authentication header (GitLab ``PRIVATE-TOKEN``, Jira basic
``email:token``), answers with that service's JSON shapes and error bodies (GitLab
``{"message": "401 Unauthorized"}``, Jira ``{"errorMessages": [...], "errors": {}}``), pages
lists as the service does (GitLab ``X-Next-Page``, Jira ``nextPageToken``/``isLast``), and can
be told to rate-limit the next requests (429 with ``Retry-After``). Every call is recorded.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["Call", "FakeGitLab", "FakeJira", "running"]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


Answer = tuple[int, Any, dict[str, str]]


@dataclass
class _Fake:
    """What both fakes share: the server, the call log and the rate-limit switch."""

    calls: list[Call] = field(default_factory=list)
    _rate_limits: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def rate_limit_next(self, count: int, retry_after: int) -> None:
        """Answer the next ``count`` requests 429 with ``Retry-After: retry_after``."""
        with self._lock:
            self._rate_limits.extend([retry_after] * count)

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def answer(self, call: Call) -> Answer:
        raise NotImplementedError

    def rate_limited(self) -> Answer:
        raise NotImplementedError

    def handle(self, call: Call) -> Answer:
        with self._lock:
            self.calls.append(call)
            limited = self._rate_limits.pop(0) if self._rate_limits else None
        if limited is not None:
            status, body, headers = self.rate_limited()
            return status, body, {**headers, "Retry-After": str(limited)}
        with self._lock:
            return self.answer(call)

    def start(self) -> None:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = _Server(("127.0.0.1", 0), Handler)
        server = self._server
        threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), daemon=True
        ).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


# ---------------------------------------------------------------------------- GitLab

_GL_ISSUE = re.compile(r"/api/v4/projects/(?P<project>[^/]+)/issues/(?P<iid>[0-9]+)")
_GL_ISSUES = re.compile(r"/api/v4/projects/(?P<project>[^/]+)/issues")


@dataclass
class FakeGitLab(_Fake):
    """GitLab issues: ``GET``/``PUT /api/v4/projects/:id/issues/:iid`` and the list by
    ``iids[]`` (``per_page``/``page``, ``X-Next-Page``). ``tokens`` maps each accepted
    token to the projects it may reach (another project answers 404, as GitLab does)."""

    tokens: dict[str, set[str]] = field(default_factory=dict)
    issues: dict[tuple[str, int], str] = field(default_factory=dict)
    max_per_page: int = 100  # GitLab's own cap

    def add_issue(self, key: str, state: str = "opened") -> None:
        project, _, iid = key.partition("#")
        with self._lock:
            self.issues[(project, int(iid))] = state

    def state(self, key: str) -> str:
        project, _, iid = key.partition("#")
        with self._lock:
            return self.issues[(project, int(iid))]

    def rate_limited(self) -> Answer:
        return 429, {"message": "429 Too Many Requests"}, {"RateLimit-Remaining": "0"}

    def _issue_json(self, project: str, iid: int) -> dict[str, Any]:
        return {
            "id": 5000 + iid,
            "iid": iid,
            "project_id": 77,
            "title": f"Issue {iid}",
            "state": self.issues[(project, iid)],
            "web_url": f"https://gitlab.test/{project}/-/issues/{iid}",
        }

    def answer(self, call: Call) -> Answer:
        token = call.headers.get("private-token", "")
        if token not in self.tokens:
            return 401, {"message": "401 Unauthorized"}, {}
        one = _GL_ISSUE.fullmatch(call.path)
        many = _GL_ISSUES.fullmatch(call.path)
        found = one or many
        project = unquote(found["project"]) if found is not None else ""
        if not project or project not in self.tokens[token]:
            return 404, {"message": "404 Project Not Found"}, {}
        if one is not None:
            iid = int(one["iid"])
            if (project, iid) not in self.issues:
                return 404, {"message": "404 Not found"}, {}
            if call.method == "PUT":
                event = (call.body or {}).get("state_event")
                if event not in ("close", "reopen"):
                    return 400, {"error": "state_event does not have a valid value"}, {}
                self.issues[(project, iid)] = "closed" if event == "close" else "opened"
            return 200, self._issue_json(project, iid), {}
        if call.method != "GET":
            return 405, {"message": "405 Method Not Allowed"}, {}
        iids = sorted(
            int(i) for i in call.query.get("iids[]", []) if (project, int(i)) in self.issues
        )
        per_page = min(int(call.query.get("per_page", ["20"])[0]), self.max_per_page)
        page = int(call.query.get("page", ["1"])[0])
        chunk = iids[(page - 1) * per_page : page * per_page]
        more = page * per_page < len(iids)
        headers = {"X-Next-Page": str(page + 1) if more else "", "X-Page": str(page)}
        return 200, [self._issue_json(project, i) for i in chunk], headers


# ---------------------------------------------------------------------------- Jira

_JIRA_ISSUE = re.compile(r"/rest/api/3/issue/(?P<key>[A-Z][A-Z0-9_]*-[0-9]+)")
_JIRA_TRANSITIONS = re.compile(r"/rest/api/3/issue/(?P<key>[A-Z][A-Z0-9_]*-[0-9]+)/transitions")
_JIRA_NOT_FOUND = {
    "errorMessages": ["Issue does not exist or you do not have permission to see it."],
    "errors": {},
}
# Statuses and their categories; transitions lead from any status to any other.
_STATUSES = {"To Do": "new", "In Progress": "indeterminate", "Done": "done", "Shipped": "done"}


@dataclass
class FakeJira(_Fake):
    """Jira Cloud: ``GET /rest/api/3/issue/{key}``, its transitions (list and ``POST``) and
    ``POST /rest/api/3/search/jql`` (``maxResults``, ``nextPageToken``, ``isLast``). ``users``
    maps each accepted ``email:token`` to the projects it may see (others answer 404 as Jira
    does for issues one may not see). ``page_size`` caps a search page (Jira's own cap)."""

    users: dict[str, set[str]] = field(default_factory=dict)
    issues: dict[str, str] = field(default_factory=dict)
    page_size: int = 2

    def add_issue(self, key: str, status: str = "To Do") -> None:
        with self._lock:
            self.issues[key] = status

    def status(self, key: str) -> str:
        with self._lock:
            return self.issues[key]

    def rate_limited(self) -> Answer:
        return 429, {"errorMessages": ["Rate limit exceeded."], "errors": {}}, {}

    def _issue_json(self, key: str) -> dict[str, Any]:
        name = self.issues[key]
        return {
            "id": str(10000 + int(key.rsplit("-", 1)[1])),
            "key": key,
            "fields": {"status": {"name": name, "statusCategory": {"key": _STATUSES[name]}}},
        }

    def _visible(self, user: str, key: str) -> bool:
        return key in self.issues and key.rsplit("-", 1)[0] in self.users[user]

    def answer(self, call: Call) -> Answer:
        authorization = call.headers.get("authorization", "")
        user = ""
        if authorization.startswith("Basic "):
            try:
                user = base64.b64decode(authorization[6:]).decode()
            except ValueError:
                user = ""
        if user not in self.users:
            # Jira Cloud answers a bad API token with 401 and a plain JSON error list.
            return (
                401,
                {
                    "errorMessages": ["Client must be authenticated to access this resource."],
                    "errors": {},
                },
                {},
            )
        transitions = _JIRA_TRANSITIONS.fullmatch(call.path)
        if transitions is not None:
            key = transitions["key"]
            if not self._visible(user, key):
                return 404, _JIRA_NOT_FOUND, {}
            if call.method == "GET":
                listed = [
                    {
                        "id": str(11 + n),
                        "name": f"Move to {s}",
                        "to": {"name": s, "statusCategory": {"key": c}},
                    }
                    for n, (s, c) in enumerate(_STATUSES.items())
                    if s != self.issues[key]
                ]
                return 200, {"expand": "transitions", "transitions": listed}, {}
            wanted = str(((call.body or {}).get("transition") or {}).get("id", ""))
            names = list(_STATUSES)
            index = int(wanted) - 11 if wanted.isdigit() else -1
            if not 0 <= index < len(names) or names[index] == self.issues[key]:
                return (
                    400,
                    {"errorMessages": [], "errors": {"transition": "Transition id is not valid."}},
                    {},
                )
            self.issues[key] = names[index]
            return 204, None, {}
        issue = _JIRA_ISSUE.fullmatch(call.path)
        if issue is not None and call.method == "GET":
            if not self._visible(user, issue["key"]):
                return 404, _JIRA_NOT_FOUND, {}
            return 200, self._issue_json(issue["key"]), {}
        if call.path == "/rest/api/3/search/jql" and call.method == "POST":
            body = call.body or {}
            match = re.fullmatch(r"key in \(([A-Z0-9_, -]+)\)", str(body.get("jql", "")))
            if match is None:
                return 400, {"errorMessages": ["Error in the JQL Query."], "errors": {}}, {}
            keys = [k.strip() for k in match[1].split(",")]
            for key in keys:
                if key not in self.issues:
                    message = f"An issue with key '{key}' does not exist for field 'key'."
                    return 400, {"errorMessages": [message], "errors": {}}, {}
            visible = [k for k in keys if self._visible(user, k)]
            size = min(int(body.get("maxResults", 50)), self.page_size)
            start = int(body.get("nextPageToken") or 0)
            chunk = visible[start : start + size]
            last = start + size >= len(visible)
            page: dict[str, Any] = {"issues": [self._issue_json(k) for k in chunk], "isLast": last}
            if not last:
                page["nextPageToken"] = str(start + size)
            return 200, page, {}
        return 404, {"errorMessages": ["null for uri"], "errors": {}}, {}


# ---------------------------------------------------------------------------- serving


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class _Handler(BaseHTTPRequestHandler):
    owner: _Fake

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        call = Call(
            method,
            parts.path,
            parse_qs(parts.query),
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        status, payload, headers = self.owner.handle(call)
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None:
            self.send_header("Content-Type", "application/json;charset=UTF-8")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def running(fake: _Fake) -> Iterator[Any]:
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
