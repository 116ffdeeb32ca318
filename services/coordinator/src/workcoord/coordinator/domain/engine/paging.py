"""Page tokens and page sizes of the list calls (pure: no I/O).

A page token is the sort key of the last row handed out, as URL-safe base64 of a JSON list;
the next page starts after it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


def _foreign_token() -> InvalidArgument:
    return InvalidArgument.single("page_token", "is not a token this server issued")


def decode_page_token(token: str) -> list[Any]:
    if not token:
        return []
    try:
        padded = token + "=" * (-len(token) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise _foreign_token() from exc
    if not isinstance(value, list):
        raise _foreign_token()
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


@dataclass(frozen=True, slots=True)
class PageRequest:
    """A list call's page size and the sort key its page token resumes after."""

    limit: int
    after: list[Any]

    @classmethod
    def parse(cls, size: int, token: str) -> PageRequest:
        """The requested page: ``size`` checked and capped, ``token`` decoded."""
        return cls(page_size(size), decode_page_token(token))

    @property
    def fetch(self) -> int:
        """Rows to read: one more than the page, to know whether another page follows."""
        return self.limit + 1

    @property
    def after_id(self) -> str:
        """For lists ordered by one id: the id to start after ('' from the start)."""
        return str(self.after[0]) if self.after else ""

    def after_time_and_id(self) -> tuple[datetime, str] | None:
        """For lists ordered by (create time, id): the key to start after."""
        if not self.after:
            return None
        try:
            return datetime.fromisoformat(str(self.after[0])), str(self.after[1])
        except (ValueError, IndexError) as exc:
            raise _foreign_token() from exc

    def after_revision(self, default: int) -> int:
        """For the event log: the revision to start after (``default`` from the start)."""
        try:
            return int(self.after[0]) if self.after else default
        except (TypeError, ValueError) as exc:
            raise _foreign_token() from exc

    def page(self, rows: list[_T], key: Callable[[_T], list[Any]]) -> Page[_T]:
        """The page of ``rows`` (read with :attr:`fetch`) and the next page's token."""
        return page_of(rows, self.limit, key)
