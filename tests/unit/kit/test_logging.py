from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from workcoord.kit.logging import RepeatLimitFilter, configure_logging, escape_control
from workcoord.kit.secrets import new_secret


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def test_json_lines_redact_and_escape(restore_root: None) -> None:
    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)
    secret = new_secret("wck_")
    log = logging.getLogger("kittest")
    log.info("key %s presented", secret, extra={"header": "Bearer x", "item_id": "i-1"})
    log.info("forged\nINFO admin logged in \x1b[31m")
    log.debug("not shown")
    try:
        raise ValueError(f"bad key {secret}")
    except ValueError:
        log.exception("failed")
    output = stream.getvalue()
    assert secret not in output
    assert "Bearer x" not in output
    lines = [json.loads(line) for line in output.splitlines()]
    assert len(lines) == 3
    first = lines[0]
    assert first["message"] == "key [REDACTED] presented"
    assert first["level"] == "INFO" and first["logger"] == "kittest"
    assert first["header"] == "[REDACTED]" and first["item_id"] == "i-1"
    assert first["time"].endswith("+00:00")
    assert lines[1]["message"] == "forged\\nINFO admin logged in \\x1b[31m"
    assert "ValueError" in lines[2]["exception"]


def test_trace_ids_from_current_span(restore_root: None) -> None:
    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)
    tracer = TracerProvider().get_tracer("kittest")
    with tracer.start_as_current_span("op") as span:
        logging.getLogger("kittest").info("inside")
        expected = format(span.get_span_context().trace_id, "032x")
    entry = json.loads(stream.getvalue())
    assert entry["trace_id"] == expected and len(entry["span_id"]) == 16


def test_text_mode_redacts_and_is_idempotent(restore_root: None) -> None:
    first = io.StringIO()
    configure_logging("INFO", json=False, stream=first)
    stream = io.StringIO()
    configure_logging("warning", json=False, stream=stream)
    log = logging.getLogger("kittest")
    log.warning("token Bearer x and %s", new_secret("wcadm_"))
    log.info("quiet")
    assert first.getvalue() == ""
    text = stream.getvalue()
    assert "Bearer x" not in text and "wcadm_" not in text and "quiet" not in text
    assert text.count("\n") == 1


def test_escape_control() -> None:
    assert escape_control("a\tb\r\n\x00\u2028") == "a\\tb\\r\\n\\x00\\u2028"
    assert escape_control("naïve ✓") == "naïve ✓"


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_repeated_lines_are_cut_to_the_limit_then_reported_once() -> None:
    clock = _Clock()
    written: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: written.append(record.getMessage())  # type: ignore[method-assign]
    handler.addFilter(RepeatLimitFilter(3, 10.0, emit=handler.handle, clock=clock))
    log = logging.getLogger("kittest.repeat")
    log.addHandler(handler)
    log.propagate = False
    try:
        for _ in range(1000):
            log.warning("connection refused: %d open", 7)
        log.warning("another line")
        assert written == ["connection refused: 7 open"] * 3 + ["another line"]
        clock.now += 10.0
        log.warning("connection refused: %d open", 7)  # a new window: the report, then the line
        assert written[4].startswith("suppressed 997 similar lines in 10s (after 3): connection")
        assert written[5] == "connection refused: 7 open"
        assert len(written) == 6
    finally:
        log.removeHandler(handler)
        log.propagate = True


def test_the_rate_limit_is_installed_and_reports_through_redaction(restore_root: None) -> None:
    stream = io.StringIO()
    handler = configure_logging("INFO", stream=stream, repeat_limit=2, repeat_window_seconds=60)
    secret = new_secret("wck_")
    log = logging.getLogger("kittest.flood")
    for _ in range(500):
        log.warning("bad key %s", secret)
    for found in handler.filters:
        if isinstance(found, RepeatLimitFilter):
            found.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert "suppressed 498 similar lines" in lines[2]
    assert secret not in stream.getvalue()
