"""Page tokens: what a list call hands out reads back, and a foreign token is refused."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from workcoord.coordinator.domain.engine import PageRequest, encode_page_token, paging
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


@pytest.mark.parametrize("key", [None, ["yesterday", "x"], ["x"]])
def test_foreign_tokens_are_refused(key: list[str] | None) -> None:
    # Tokens are made inside the test: their signature differs per process (xdist workers).
    token = "%%%" if key is None else encode_page_token(key)
    with pytest.raises(InvalidArgument, match="page_token"):
        request = PageRequest.parse(0, token)
        request.after_time_and_id()
        request.after_revision(0)


def test_page_sizes() -> None:
    assert PageRequest.parse(0, "").limit == 50
    assert PageRequest.parse(10_000, "").limit == 500
    with pytest.raises(InvalidArgument, match="page_size"):
        PageRequest.parse(-1, "")


def _unsigned(raw: str) -> str:
    """A token as this server used to issue them: base64 of the JSON key, nothing signed."""
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize("raw", ["[1e999]", "[2e21]", '["2020-01-01T00:00:00","x"]', "[7]"])
def test_forged_tokens_are_refused_before_they_reach_a_query(raw: str) -> None:
    # Each of these answered 500 when tokens were plain base64 (overflow, a naive time).
    for token in (_unsigned(raw), f"{_unsigned(raw)}.{_unsigned('0' * 16)}"):
        with pytest.raises(InvalidArgument, match="page_token"):
            PageRequest.parse(0, token)


def test_a_tampered_or_garbled_token_is_refused() -> None:
    good = encode_page_token(["ln_1"])
    payload, _, mac = good.partition(".")
    other = _unsigned('["ln_2"]')
    for token in (
        f"{other}.{mac}",
        f"{payload}.{mac[:-2]}",
        f"{payload}.%%%",
        f"{payload}.",
        ".",
        "x" * 5000,
        "\x00",
    ):
        with pytest.raises(InvalidArgument, match="page_token"):
            PageRequest.parse(0, token)


def test_tokens_of_another_installation_are_refused_and_installed_keys_stay_valid() -> None:
    before = encode_page_token(["a"])
    paging.install_page_token_key(b"k" * 32)
    after = encode_page_token(["b"])
    assert PageRequest.parse(0, before).after_id == "a"
    assert PageRequest.parse(0, after).after_id == "b"
    saved = list(paging._KEYS)
    try:
        paging._KEYS[:] = [b"other installation"]
        with pytest.raises(InvalidArgument, match="page_token"):
            PageRequest.parse(0, after)
    finally:
        paging._KEYS[:] = saved
