"""Schemathesis hooks of the REST fuzz run (``SCHEMATHESIS_HOOKS=tests.fuzz.schemathesis_checks``).

One check, ``google_rpc_status``: every answer of 400 or more is a proper ``google.rpc.Status``
JSON (``code`` matching the HTTP status, a ``message``, exactly one ``ErrorInfo`` in domain
``workcoord`` with an UPPER_SNAKE reason), and no answer is a 5xx other than the documented
ones of :data:`DOCUMENTED_5XX` (``not_a_server_error`` is told to accept their statuses; this
check holds them to their reasons). It also counts every response it sees (status,
generation mode, refusals of schema-valid requests) and, after the run, writes the counts to the
JSON file named by ``WORKCOORD_FUZZ_SUMMARY`` for :mod:`tests.fuzz.schemathesis_run` to report.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import schemathesis

from workcoord.kit.errors import http_status_for

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_REASON = re.compile(r"[A-Z][A-Z0-9_]*")
# HTTP statuses the gateway answers on its own, outside google/rpc/code.proto's mapping:
# method not allowed, body too large, WebSocket upgrade required.
_GATEWAY_STATUSES = frozenset({405, 413, 426})
SUMMARY_ENV = "WORKCOORD_FUZZ_SUMMARY"
# The 5xx answers the API documents (docs/api.md's error table), each with its one reason: a
# feature this deployment has not configured (OpenID Connect login), and a work coordinator
# switched off. Any other 5xx fails the run.
DOCUMENTED_5XX = frozenset({(501, "UNIMPLEMENTED"), (503, "COORDINATION_DISABLED")})


def status_problem(status_code: int, content_type: str, body: bytes) -> str | None:
    """What is wrong with an error answer, or None when it is a proper google.rpc.Status."""
    if not content_type.startswith("application/json"):
        return f"content-type {content_type!r}, not JSON"
    try:
        status = json.loads(body)
    except ValueError:
        return "body is not JSON"
    if not isinstance(status, dict) or not set(status) <= {"code", "message", "details"}:
        return "not a google.rpc.Status object"
    code = status.get("code")
    if not isinstance(code, int) or isinstance(code, bool) or code == 0:
        return f"code {code!r} is not a non-zero integer"
    if status_code not in _GATEWAY_STATUSES and http_status_for(code) != status_code:
        return f"code {code} does not map to HTTP {status_code}"
    if not isinstance(status.get("message"), str) or not status["message"]:
        return "no message"
    details = status.get("details", [])
    if not isinstance(details, list) or not all(isinstance(d, dict) for d in details):
        return "details is not a list of objects"
    infos = [d for d in details if d.get("@type") == ERROR_INFO]
    if len(infos) != 1:
        return f"{len(infos)} ErrorInfo details, not one"
    info = infos[0]
    if info.get("domain") != "workcoord" or not _REASON.fullmatch(str(info.get("reason", ""))):
        return f"ErrorInfo {info!r} lacks domain workcoord or an UPPER_SNAKE reason"
    return None


def _reason(body: bytes) -> str:
    details = json.loads(body).get("details", [])
    return next((str(d.get("reason")) for d in details if d.get("@type") == ERROR_INFO), "")


@schemathesis.check
class google_rpc_status:
    """Every error answer is a proper google.rpc.Status with an ErrorInfo; counts responses."""

    def __init__(self) -> None:
        self.statuses: Counter[int] = Counter()
        self.modes: Counter[str] = Counter()
        self.refused_positive: Counter[str] = Counter()
        self.documented: Counter[str] = Counter()
        self.server_errors: Counter[str] = Counter()
        self.malformed: list[str] = []

    def after_response(self, ctx: Any, response: Any, case: Any) -> None:
        status_code: int = response.status_code
        label = f"{case.method} {case.path}"
        mode = str(getattr(case.meta.generation.mode, "value", "")) if case.meta else ""
        self.statuses[status_code] += 1
        self.modes[mode] += 1
        if status_code < 400:
            return
        content_type = response.headers.get("content-type", [""])[0]
        problem = status_problem(status_code, content_type, response.content)
        if problem is not None:
            self.malformed.append(f"{label} → {status_code}: {problem}")
            raise AssertionError(f"not a google.rpc.Status with an ErrorInfo: {problem}")
        message = str(json.loads(response.content).get("message", ""))[:120]
        if status_code == 400 and mode == "positive":
            self.refused_positive[f"{label}: {message}"] += 1
        reason = _reason(response.content)
        if (status_code, reason) in DOCUMENTED_5XX:
            self.documented[f"{status_code} {reason}"] += 1
        elif status_code >= 500:
            self.server_errors[f"{label} → {status_code} {response.content[:300]!r}"] += 1
            raise AssertionError(f"server error {status_code}")

    def after_run(self, ctx: Any) -> None:
        target = os.environ.get(SUMMARY_ENV)
        if not target:
            return
        summary = {
            "requests": sum(self.statuses.values()),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "modes": dict(self.modes),
            "refused_positive": dict(self.refused_positive.most_common()),
            "documented_5xx": dict(self.documented),
            "server_errors": dict(self.server_errors.most_common(50)),
            "malformed": self.malformed[:50],
        }
        Path(target).write_text(json.dumps(summary, indent=2), encoding="utf-8")
