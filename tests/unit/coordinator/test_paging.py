"""Page tokens: what a list call hands out reads back, and a foreign token is refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workcoord.coordinator.domain.engine import PageRequest, encode_page_token
from workcoord.kit.errors import InvalidArgument

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_a_page_and_its_token_resume_after_the_last_row() -> None:
    request = PageRequest.parse(2, "")
    assert request.fetch == 3 and request.after_id == ""
    page = request.page(["a", "b", "c"], lambda row: [row])
    assert page.items == ["a", "b"]
    assert PageRequest.parse(2, page.next_page_token).after_id == "b"
    assert request.page(["a", "b"], lambda row: [row]).next_page_token == ""


def test_time_and_revision_cursors() -> None:
    token = encode_page_token([WHEN.isoformat(), "ln_1"])
    assert PageRequest.parse(0, token).after_time_and_id() == (WHEN, "ln_1")
    assert PageRequest.parse(0, "").after_time_and_id() is None
    assert PageRequest.parse(0, encode_page_token([7])).after_revision(0) == 7
    assert PageRequest.parse(0, "").after_revision(3) == 3


@pytest.mark.parametrize(
    "token", ["%%%", encode_page_token(["yesterday", "x"]), encode_page_token(["x"])]
)
def test_foreign_tokens_are_refused(token: str) -> None:
    with pytest.raises(InvalidArgument, match="page_token"):
        request = PageRequest.parse(0, token)
        request.after_time_and_id()
        request.after_revision(0)


def test_page_sizes() -> None:
    assert PageRequest.parse(0, "").limit == 50
    assert PageRequest.parse(10_000, "").limit == 500
    with pytest.raises(InvalidArgument, match="page_size"):
        PageRequest.parse(-1, "")
