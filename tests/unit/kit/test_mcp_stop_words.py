"""The MCP ``heartbeat`` tool's answer with ``stop``: its first text content says, in words an
agent acts on, why and what to do next; the structured answer is unchanged."""

from __future__ import annotations

import json

import pytest

from workcoord.api.v1 import worker_pb2
from workcoord.kit.mcp_server import STOP_WORDS, _result, stop_words
from workcoord.kit.mcp_tools import tool_named


def _answer(reason: int, message: str = "") -> dict[str, object]:
    tool = tool_named("heartbeat")
    assert tool is not None
    response = worker_pb2.HeartbeatResponse()
    response.stop.reason = reason  # type: ignore[assignment]
    response.stop.message = message
    return tool.result(response)


@pytest.mark.parametrize("reason", sorted(STOP_WORDS))
def test_each_stop_reason_reads_as_what_to_do(reason: str) -> None:
    body = _answer(worker_pb2.Stop.Reason.Value(reason), "the lane's budget is spent")
    result = _result(body)
    first, second = result.content
    assert first.type == "text" and first.text.startswith(f"STOP {reason}: ")
    assert "Stop working now" in first.text
    assert "(the coordinator says: the lane's budget is spent)" in first.text
    assert second.type == "text" and json.loads(second.text) == body
    assert result.structured_content == body and not result.is_error


def test_the_words_name_the_next_tool() -> None:
    assert "release_work" in STOP_WORDS["BUDGET_EXHAUSTED"]
    assert "fail_work" in STOP_WORDS["DEADLINE_EXCEEDED"]


def test_a_heartbeat_without_stop_is_the_json_alone() -> None:
    tool = tool_named("heartbeat")
    assert tool is not None
    body = tool.result(worker_pb2.HeartbeatResponse())
    assert stop_words(body) is None
    assert len(_result(body).content) == 1
