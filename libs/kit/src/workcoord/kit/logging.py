"""Structured logging on the standard library: JSON lines with trace ids, secrets redacted.

Every record passes a :class:`RedactionFilter` before it is formatted: credential-looking text
becomes ``[REDACTED]`` and control characters in messages are escaped, so a caller-supplied
string cannot forge log lines. Every line carries the current ``trace_id`` (JSON: the
``trace_id`` and ``span_id`` fields, empty outside a span; text: a ``trace_id=…`` suffix), so a
request's lines in every service join its trace. Third-party loggers that narrate their normal
work at INFO (Alembic, uvicorn, httpx, gRPC, Redis) only speak from WARNING up.

A flood of one line (a client hammering the same mistake, a failing dependency) is cut by a
:class:`RepeatLimitFilter`: the first ``repeat_limit`` identical lines in a window pass, the
rest are counted and reported as one ``suppressed K similar lines`` line when the window ends
(written with the next line logged after it, of any kind).
"""

from __future__ import annotations

import json as _json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from opentelemetry import trace

from workcoord.kit.secrets import redact_credentials

__all__ = [
    "JsonFormatter",
    "RedactionFilter",
    "RepeatLimitFilter",
    "TraceContextFilter",
    "configure_logging",
    "escape_control",
    "json_logs_from_env",
]

LOG_JSON_ENV = "WORKCOORD_LOG_JSON"
_TRUE = frozenset({"1", "true", "yes", "on", "t", "y"})
_FALSE = frozenset({"0", "false", "no", "off", "f", "n", ""})

# Attributes every LogRecord has; anything else was passed through ``extra=``.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()
    | {"message", "asctime", "taskName"}
)
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]} | {
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s%(trace_suffix)s"
_TRACE_ATTRS = ("trace_id", "span_id", "trace_suffix")
# Chatty at INFO (start-up banners, one line per migration step or HTTP call), and some may
# echo connection strings.
_NOISY_LOGGERS = (
    "grpc",
    "redis",
    "urllib3",
    "alembic",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "httpx",
    "httpcore",
    "aiosqlite",
    "asyncio",
    "opentelemetry",
    "mcp",
)


def escape_control(text: str) -> str:
    """``text`` with control characters (newlines included) written as escapes."""
    return text.translate(_CONTROL)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact_credentials(escape_control(value))
    return value


class RedactionFilter(logging.Filter):
    """Redacts credentials and escapes control characters in the message and ``extra`` fields."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record`` in place; never drops it."""
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the record
            message = f"{record.msg!r} {record.args!r}"
        record.msg = _clean(message)
        record.args = None
        for key, value in list(vars(record).items()):
            if key not in _STANDARD_ATTRS and key not in _TRACE_ATTRS:
                setattr(record, key, _clean(value))
        return True


@dataclass
class _Window:
    started: float
    passed: int
    suppressed: int
    sample: str


class RepeatLimitFilter(logging.Filter):
    """Lets the first ``limit`` identical lines (same logger, level and message) through per
    ``window_seconds``, drops the rest, and reports each window that dropped some as one WARNING
    line ``suppressed K similar lines …`` through ``emit`` (the handler's ``handle``).

    The report goes out with the first record logged after the window ends; at most
    ``max_tracked`` distinct lines are tracked at once (beyond that, lines pass unlimited).
    ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        limit: int = 20,
        window_seconds: float = 60.0,
        *,
        emit: Callable[[logging.LogRecord], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_tracked: int = 4096,
    ) -> None:
        super().__init__()
        self.limit = limit
        self.window_seconds = window_seconds
        self.emit = emit
        self._clock = clock
        self._max_tracked = max_tracked
        self._windows: dict[tuple[str, int, str], _Window] = {}
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is written (False once its line used up its window)."""
        if getattr(record, "_workcoord_summary", False):
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: RedactionFilter shows it as it is
            return True
        key = (record.name, record.levelno, message)
        with self._lock:
            now = self._clock()
            reports = self._sweep(now) if now >= self._next_sweep else []
            window = self._windows.get(key)
            if window is None:
                if len(self._windows) < self._max_tracked:
                    self._windows[key] = _Window(now, 1, 0, message)
                keep = True
            elif window.passed < self.limit:
                window.passed += 1
                keep = True
            else:
                window.suppressed += 1
                keep = False
        for report in reports:
            if self.emit is not None:
                self.emit(report)
        return keep

    def flush(self) -> None:
        """Report every window that suppressed lines now (e.g. at shutdown)."""
        with self._lock:
            reports = self._sweep(float("inf"))
        for report in reports:
            if self.emit is not None:
                self.emit(report)

    def _sweep(self, now: float) -> list[logging.LogRecord]:
        """Close the windows that ended by ``now``; the reports of those that dropped lines."""
        reports: list[logging.LogRecord] = []
        next_end = float("inf")
        for key, window in list(self._windows.items()):
            end = window.started + self.window_seconds
            if end > now:
                next_end = min(next_end, end)
                continue
            del self._windows[key]
            if window.suppressed:
                reports.append(self._report(key, window))
        self._next_sweep = next_end if next_end != float("inf") else now + self.window_seconds
        return reports

    def _report(self, key: tuple[str, int, str], window: _Window) -> logging.LogRecord:
        name, level, _ = key
        sample = window.sample if len(window.sample) <= 200 else window.sample[:200] + "…"
        record = logging.LogRecord(
            name,
            max(level, logging.WARNING),
            __file__,
            0,
            "suppressed %d similar lines in %.0fs (after %d): %s",
            (window.suppressed, self.window_seconds, window.passed, sample),
            None,
        )
        setattr(record, "_workcoord_summary", True)  # noqa: B010 - LogRecord has no such field
        return record


class TraceContextFilter(logging.Filter):
    """Stamps each record with the current span's ``trace_id`` and ``span_id`` (or "")."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Add the ids; never drops the record."""
        span_context = trace.get_current_span().get_span_context()
        trace_id = span_id = ""
        if span_context.is_valid:
            trace_id = format(span_context.trace_id, "032x")
            span_id = format(span_context.span_id, "016x")
        record.trace_id = trace_id
        record.span_id = span_id
        record.trace_suffix = f" trace_id={trace_id}" if trace_id else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, trace/span ids, extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as one JSON line."""
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        trace_id = getattr(record, "trace_id", None)
        if trace_id is None:  # formatted without TraceContextFilter (e.g. a test's handler)
            span_context = trace.get_current_span().get_span_context()
            valid = span_context.is_valid
            trace_id = format(span_context.trace_id, "032x") if valid else ""
            record.span_id = format(span_context.span_id, "016x") if valid else ""
        entry["trace_id"] = trace_id
        entry["span_id"] = getattr(record, "span_id", "")
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and key not in entry and key not in _TRACE_ATTRS:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = redact_credentials(self.formatException(record.exc_info))
        if record.stack_info:
            entry["stack"] = redact_credentials(self.formatStack(record.stack_info))
        return _json.dumps(entry, default=str, ensure_ascii=False)


class _RedactingTextFormatter(logging.Formatter):
    def formatException(self, ei: Any) -> str:
        return redact_credentials(super().formatException(ei))


def json_logs_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """``WORKCOORD_LOG_JSON`` as a boolean (unset: False), read as the services' settings read
    it, for the commands that configure logging without loading the settings (``workcoord
    dev``). Raises ValueError naming the variable for anything but a boolean."""
    raw = (os.environ if environ is None else environ).get(LOG_JSON_ENV, "")
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{LOG_JSON_ENV}: expected true or false, got {raw!r}")


def configure_logging(
    level: str | int = "INFO",
    json: bool = False,
    stream: TextIO | None = None,
    *,
    repeat_limit: int = 20,
    repeat_window_seconds: float = 60.0,
) -> logging.Handler:
    """Send every log record to ``stream`` (stderr), as JSON lines or plain text, at most
    ``repeat_limit`` identical lines per ``repeat_window_seconds`` (:class:`RepeatLimitFilter`).

    Idempotent: a second call replaces the handler installed by the first. Returns the handler.
    """
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, "_workcoord", False):
            root.removeHandler(existing)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler._workcoord = True  # type: ignore[attr-defined]  # marks ours for the next call
    # First: it compares messages as logged, before redaction rewrites them.
    handler.addFilter(RepeatLimitFilter(repeat_limit, repeat_window_seconds, emit=handler.handle))
    handler.addFilter(RedactionFilter())
    handler.addFilter(TraceContextFilter())
    handler.setFormatter(JsonFormatter() if json else _RedactingTextFormatter(_TEXT_FORMAT))
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    for noisy in _NOISY_LOGGERS:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    return handler
