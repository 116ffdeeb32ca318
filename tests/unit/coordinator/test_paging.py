"""Page tokens: what a list call hands out reads back on the same list, and a foreign token
(forged, garbled, of another installation, or of another list) is refused."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from workcoord.coordinator.domain.engine import PageRequest, encode_page_token, paging
from workcoord.kit.errors import InvalidArgument

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
LANES = ("ListLanes", "wc_a", "")


def test_a_page_and_its_token_resume_after_the_last_row() -> None:
    request = PageRequest.parse(2, "", LANES)
    assert request.fetch == 3 and request.after_id == ""
    page = request.page(["a", "b", "c"], lambda row: [row])
    assert page.items == ["a", "b"]
    assert PageRequest.parse(2, page.next_page_token, LANES).after_id == "b"
    assert request.page(["a", "b"], lambda row: [row]).next_page_token == ""


def test_time_and_revision_cursors() -> None:
    token = encode_page_token([WHEN.isoformat(), "ln_1"], LANES)
    assert PageRequest.parse(0, token, LANES).after_time_and_id() == (WHEN, "ln_1")
    assert PageRequest.parse(0, "", LANES).after_time_and_id() is None
    assert PageRequest.parse(0, encode_page_token([7], LANES), LANES).after_revision(0) == 7
    assert PageRequest.parse(0, "", LANES).after_revision(3) == 3


@pytest.mark.parametrize("key", [None, ["yesterday", "x"], ["x"]])
def test_foreign_tokens_are_refused(key: list[str] | None) -> None:
    # Tokens are made inside the test: their signature differs per process (xdist workers).
    token = "%%%" if key is None else encode_page_token(key, LANES)
    with pytest.raises(InvalidArgument, match="page_token"):
        request = PageRequest.parse(0, token, LANES)
        request.after_time_and_id()
        request.after_revision(0)


def test_page_sizes() -> None:
    assert PageRequest.parse(0, "", LANES).limit == 50
    assert PageRequest.parse(10_000, "", LANES).limit == 500
    with pytest.raises(InvalidArgument, match="page_size"):
        PageRequest.parse(-1, "", LANES)


def _unsigned(raw: str) -> str:
    """A token as this server used to issue them: base64 of the JSON key, nothing signed."""
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize("raw", ["[1e999]", "[2e21]", '["2020-01-01T00:00:00","x"]', "[7]"])
def test_forged_tokens_are_refused_before_they_reach_a_query(raw: str) -> None:
    # Each of these answered 500 when tokens were plain base64 (overflow, a naive time).
    for token in (_unsigned(raw), f"{_unsigned(raw)}.{_unsigned('0' * 16)}"):
        with pytest.raises(InvalidArgument, match="page_token"):
            PageRequest.parse(0, token, LANES)


def test_a_tampered_or_garbled_token_is_refused() -> None:
    good = encode_page_token(["ln_1"], LANES)
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
            PageRequest.parse(0, token, LANES)


def test_tokens_of_another_installation_are_refused_and_installed_keys_stay_valid() -> None:
    before = encode_page_token(["a"], LANES)
    paging.install_page_token_key(b"k" * 32)
    after = encode_page_token(["b"], LANES)
    assert PageRequest.parse(0, before, LANES).after_id == "a"
    assert PageRequest.parse(0, after, LANES).after_id == "b"
    saved = list(paging._KEYS)
    try:
        paging._KEYS[:] = [b"other installation"]
        with pytest.raises(InvalidArgument, match="page_token"):
            PageRequest.parse(0, after, LANES)
    finally:
        paging._KEYS[:] = saved


def test_a_token_is_good_for_its_own_list_only() -> None:
    """A token of ListLanes on one work coordinator was read by ListEvents, or by ListLanes of
    another coordinator (70 of 108 pairs of lists accepted each other's tokens)."""
    token = PageRequest.parse(1, "", LANES).page(["ln_1", "ln_2"], lambda r: [r]).next_page_token
    assert PageRequest.parse(1, token, LANES).after_id == "ln_1"
    for scope in (
        ("ListLanes", "wc_b", ""),  # another work coordinator
        ("ListLanes", "wc_a", "DONE"),  # another filter
        ("ListEvents", "wc_a", "", ""),  # another list of the same coordinator
        ("ListWorkers", "wc_a"),
        ("ListLanes", "wc_a"),  # a filter left out is not an empty one
        ("ListLanes", "wc_a", "", ""),
    ):
        with pytest.raises(InvalidArgument, match="page_token") as caught:
            PageRequest.parse(0, token, scope)
        assert [v.field for v in caught.value.field_violations] == ["page_token"]
    # The parts of a scope stay apart: ("a,b",) is not ("a", "b").
    joined = encode_page_token(["x"], ("ListGrants", "wc_a,wc_b"))
    with pytest.raises(InvalidArgument, match="page_token"):
        PageRequest.parse(0, joined, ("ListGrants", "wc_a", "wc_b"))
