"""A local fake of the GitHub Issues REST endpoints the tracker adapter uses.

A real HTTP server on 127.0.0.1 (a ``ThreadingHTTPServer`` in a daemon thread, so it answers
whatever the test's event loop is doing) speaking ``GET`` and ``PATCH``
``{prefix}/repos/{owner}/{repo}/issues/{number}`` with GitHub's JSON shapes, checking the bearer
token. Switches fail the next N requests (500, 502, or a TCP reset) and every call is recorded.
A ``prefix`` of ``/api/v3`` makes it look like GitHub Enterprise.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["Call", "FailMode", "FakeGitHub", "running_fake_github"]

# 500/502: GitHub's JSON error; "html": a proxy's HTML 502 page; "array": a 503 whose JSON body
# is not an object; "reset": the TCP connection is reset.
# "rate_limit": GitHub's exhausted primary rate limit (403, x-ratelimit-remaining 0 and the
# reset time a minute ahead).
FailMode = Literal[500, 502, "html", "array", "reset", "rate_limit"]

_PATH = re.compile(r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues/(?P<number>[0-9]+)")


@dataclass(frozen=True)
class Call:
    """One request the fake received."""

    method: str
    path: str
    authorization: str
    accept: str
    body: dict[str, Any] | None


@dataclass
class _Issue:
    owner: str
    repo: str
    number: int
    state: str = "open"
    state_reason: str | None = None


@dataclass
class FakeGitHub:
    """The fake's state: issues, the accepted token, failure switches and the call log."""

    token: str
    prefix: str = ""
    # A misbehaving proxy that echoes the presented credential in its 401 message.
    echo_credentials: bool = False
    calls: list[Call] = field(default_factory=list)
    # Further tokens, each reaching only the ``owner/repo``s listed (another repo: 404).
    other_tokens: dict[str, set[str]] = field(default_factory=dict)
    _issues: dict[tuple[str, str, int], _Issue] = field(default_factory=dict)
    _failures: list[FailMode] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    # ---------------------------------------------------------------- test controls

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.prefix}"

    def add_issue(self, key: str, state: str = "open") -> None:
        """Create ``owner/repo#number`` in ``state`` (``open`` or ``closed``)."""
        owner, repo, number = _split_key(key)
        with self._lock:
            self._issues[(owner, repo, number)] = _Issue(owner, repo, number, state)

    def state(self, key: str) -> str:
        """The issue's state as the fake has it: ``open`` or ``closed``."""
        with self._lock:
            return self._issues[_split_key(key)].state

    def set_state(self, key: str, state: str) -> None:
        with self._lock:
            self._issues[_split_key(key)].state = state

    def fail_next(self, count: int, mode: FailMode) -> None:
        """Answer the next ``count`` requests with ``mode`` (see :data:`FailMode`)."""
        with self._lock:
            self._failures.extend([mode] * count)

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    # ---------------------------------------------------------------- serving

    def start(self) -> None:
        fake = self

        class Handler(_Handler):
            github = fake

        self._server = _Server(("127.0.0.1", 0), Handler)
        server = self._server
        thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), daemon=True
        )
        thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # ---------------------------------------------------------------- request handling

    def _take_failure(self) -> FailMode | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None

    def _record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def _answer(
        self, method: str, path: str, authorization: str, body: dict[str, Any] | None
    ) -> tuple[int, dict[str, Any]]:
        bearer = authorization.removeprefix("Bearer ")
        if authorization != f"Bearer {self.token}" and bearer not in self.other_tokens:
            message = "Bad credentials"
            if self.echo_credentials:
                message += f" (got {authorization!r})"
            return 401, {"message": message, "documentation_url": "https://docs.github.com/rest"}
        if not path.startswith(self.prefix):
            return 404, {"message": "Not Found"}
        match = _PATH.fullmatch(path[len(self.prefix) :])
        if match is None:
            return 404, {"message": "Not Found"}
        key = (match["owner"], match["repo"], int(match["number"]))
        reach = self.other_tokens.get(bearer)
        if reach is not None and f"{key[0]}/{key[1]}" not in reach:
            return 404, {"message": "Not Found"}
        with self._lock:
            issue = self._issues.get(key)
            if issue is None:
                return 404, {"message": "Not Found"}
            if method == "PATCH":
                if body is None or body.get("state") not in ("open", "closed"):
                    return 422, {"message": "Validation Failed"}
                issue.state = str(body["state"])
                issue.state_reason = body.get("state_reason")
            return 200, _issue_json(issue)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a reset connection is the point of some tests, not an error to print


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: dict[str, Any] | None = None
        if raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            body = parsed if isinstance(parsed, dict) else None
        authorization = self.headers.get("Authorization", "")
        self.github._record(
            Call(method, self.path, authorization, self.headers.get("Accept", ""), body)
        )
        failure = self.github._take_failure()
        if failure == "reset":
            # SO_LINGER 0: close() sends a RST, the client sees "connection reset by peer".
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if failure == "html":
            self._send_raw(502, b"<html><body>Bad Gateway</body></html>", "text/html")
            return
        if failure == "rate_limit":
            self.send_response(403)
            data = json.dumps({"message": "API rate limit exceeded"}).encode()
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("x-ratelimit-remaining", "0")
            self.send_header("x-ratelimit-reset", str(int(time.time()) + 60))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if failure == "array":
            self._send_raw(503, b"[]", "application/json")
            return
        if failure is not None:
            self._send(failure, {"message": "Server Error"})
            return
        status, payload = self.github._answer(method, self.path, authorization, body)
        self._send(status, payload)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json; charset=utf-8")

    def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _split_key(key: str) -> tuple[str, str, int]:
    repo_part, _, number = key.partition("#")
    owner, _, repo = repo_part.partition("/")
    return owner, repo, int(number)


def _issue_json(issue: _Issue) -> dict[str, Any]:
    url = f"https://github.test/{issue.owner}/{issue.repo}/issues/{issue.number}"
    return {
        "id": 1000 + issue.number,
        "number": issue.number,
        "title": f"Issue {issue.number}",
        "state": issue.state,
        "state_reason": issue.state_reason,
        "html_url": url,
        "url": f"https://api.github.test/repos/{issue.owner}/{issue.repo}/issues/{issue.number}",
    }


@contextmanager
def running_fake_github(
    token: str, prefix: str = "", *, echo_credentials: bool = False
) -> Iterator[FakeGitHub]:
    fake = FakeGitHub(token=token, prefix=prefix, echo_credentials=echo_credentials)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
