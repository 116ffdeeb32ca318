from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from workcoord.kit.logging import configure_logging, escape_control
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
