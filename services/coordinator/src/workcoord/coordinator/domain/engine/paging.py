"""Page tokens and page sizes of the list calls (pure: no I/O).

A page token is the sort key of the last row handed out (a JSON list, URL-safe base64) and an
HMAC of it and of the list it pages (its :data:`PageScope`: the RPC, the work coordinator or org
and the filters), so tokens are opaque to callers and good for one list only: a garbled or
forged token, or one of another list, another work coordinator or other filters, is refused as
INVALID_ARGUMENT naming ``page_token`` before any of it reaches a query. (A sort key of one list
read as another's would page from a wrong place, or read rows by a key the caller never saw.)

The signing key is the installation's (a random secret kept in its database, created on first
start and loaded by :func:`install_page_token_key`), so every replica reads every other's
tokens and another installation's are refused. Until one is installed a key of the process is
used; keys installed once stay accepted, so coordinators of several databases in one process
(tests) read their own tokens.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from workcoord.kit.errors import InvalidArgument

from ..model import Lane
from ..ports import LaneStamp
from ..results import Page

_T = TypeVar("_T")

PageScope = tuple[str, ...]
"""What a page token is bound to: the list's RPC name, then the work coordinator (or org) and
the filters that shape the list, in a fixed order (``("ListLanes", coordinator_id, state)``)."""

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


# Signing keys: the last installed signs, every one installed verifies.
_KEYS: list[bytes] = [secrets.token_bytes(32)]
_MAC_BYTES = 16
# Longer tokens are refused unread.
_MAX_TOKEN = 1024
# The largest integer a token may carry (a BIGINT column).
_MAX_INT = 2**63 - 1


def install_page_token_key(key: bytes) -> None:
    """Sign page tokens with ``key`` from now on (and keep accepting the earlier keys)."""
    if key in _KEYS:
        _KEYS.remove(key)
    _KEYS.append(key)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode((text + "=" * (-len(text) % 4)).encode())


def _mac(key: bytes, scope: PageScope, payload: str) -> bytes:
    # JSON keeps the parts apart whatever they hold (a filter may contain any character).
    signed = json.dumps([*scope, payload], separators=(",", ":")).encode()
    return hmac.new(key, signed, hashlib.sha256).digest()[:_MAC_BYTES]


def encode_page_token(key: Sequence[Any], scope: PageScope) -> str:
    """The token resuming after sort key ``key``, good only for the list ``scope`` names."""
    payload = _b64(json.dumps(list(key), separators=(",", ":")).encode())
    return f"{payload}.{_b64(_mac(_KEYS[-1], scope, payload))}"


def _foreign_token() -> InvalidArgument:
    return InvalidArgument.single(
        "page_token",
        "is not a page token of this list: pass the next_page_token of the same call, on the "
        "same work coordinator, with the same filters",
    )


def _is_key_part(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -_MAX_INT <= value <= _MAX_INT
    return isinstance(value, str)


def decode_page_token(token: str, scope: PageScope) -> list[Any]:
    """The sort key of a token this installation issued for the list ``scope`` names;
    INVALID_ARGUMENT for anything else."""
    if not token:
        return []
    payload, dot, mac = token.partition(".")
    if not dot or len(token) > _MAX_TOKEN:
        raise _foreign_token()
    try:
        signature = _unb64(mac)
        if not any(hmac.compare_digest(signature, _mac(k, scope, payload)) for k in _KEYS):
            raise _foreign_token()
        value = json.loads(_unb64(payload))
    except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
        raise _foreign_token() from exc
    if not isinstance(value, list) or not all(_is_key_part(v) for v in value):
        raise _foreign_token()
    return value


def page_size(requested: int) -> int:
    if requested < 0:
        raise InvalidArgument.single("page_size", "must not be negative")
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def iso(value: datetime) -> str:
    return value.isoformat()


def lane_key(lane: Lane | LaneStamp) -> list[Any]:
    """A lane's sort key in the newest-first lane lists: what :meth:`PageRequest.after_time_and_id`
    reads back from the next page's token."""
    return [iso(lane.create_time), lane.lane_id]


def page_of(
    rows: list[_T], limit: int, key: Callable[[_T], list[Any]], scope: PageScope
) -> Page[_T]:
    """The first ``limit`` of ``rows`` (fetched one more than asked for) and the token of the
    next page of the list ``scope`` names, empty when there is none."""
    if len(rows) > limit:
        return Page(rows[:limit], encode_page_token(key(rows[limit - 1]), scope))
    return Page(rows, "")


@dataclass(frozen=True, slots=True)
class PageRequest:
    """A list call's page size, the sort key its page token resumes after, and the list the
    token is bound to (the next page's token is bound to the same)."""

    limit: int
    after: list[Any]
    scope: PageScope

    @classmethod
    def parse(cls, size: int, token: str, scope: PageScope) -> PageRequest:
        """The requested page of the list ``scope`` names: ``size`` checked and capped,
        ``token`` decoded (refused unless issued for that very list)."""
        return cls(page_size(size), decode_page_token(token, scope), scope)

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
            when = datetime.fromisoformat(str(self.after[0]))
            after_id = str(self.after[1])
        except (ValueError, IndexError) as exc:
            raise _foreign_token() from exc
        if when.tzinfo is None:
            raise _foreign_token()
        return when, after_id

    def after_revision(self, default: int) -> int:
        """For the event log: the revision to start after (``default`` from the start)."""
        if not self.after:
            return default
        revision = self.after[0]
        if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
            raise _foreign_token()
        return revision

    def page(self, rows: list[_T], key: Callable[[_T], list[Any]]) -> Page[_T]:
        """The page of ``rows`` (read with :attr:`fetch`) and the next page's token."""
        return page_of(rows, self.limit, key, self.scope)
