"""Page tokens and page sizes of the list calls (pure: no I/O).

A page token is the sort key of the last row handed out, as URL-safe base64 of a JSON list;
the next page starts after it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from workcoord.kit.errors import InvalidArgument

from ..specs import Page

_T = TypeVar("_T")

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def encode_page_token(key: Sequence[Any]) -> str:
    raw = json.dumps(list(key), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str) -> list[Any]:
    if not token:
        return []
    try:
        padded = token + "=" * (-len(token) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument.single("page_token", "is not a token this server issued") from exc
    if not isinstance(value, list):
        raise InvalidArgument.single("page_token", "is not a token this server issued")
    return value


def page_size(requested: int) -> int:
    if requested < 0:
        raise InvalidArgument.single("page_size", "must not be negative")
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def iso(value: datetime) -> str:
    return value.isoformat()


def page_of(rows: list[_T], limit: int, key: Callable[[_T], list[Any]]) -> Page[_T]:
    """The first ``limit`` of ``rows`` (fetched one more than asked for) and the token of the
    next page, empty when there is none."""
    if len(rows) > limit:
        return Page(rows[:limit], encode_page_token(key(rows[limit - 1])))
    return Page(rows, "")
