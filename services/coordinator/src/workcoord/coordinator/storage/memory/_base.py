"""The in-memory store's tables, its record copies and what every part of a transaction
shares."""

from __future__ import annotations

import copy
import dataclasses
import enum
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NoReturn, Protocol, TypeVar, cast

from workcoord.coordinator.domain.grants import (
    GrantRecord,
    LoginCode,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)
from workcoord.coordinator.domain.model import (
    Attempt,
    Blocker,
    Coordinator,
    DigestEntry,
    Escalation,
    Event,
    Item,
    Lane,
    PendingAction,
    Ticket,
    UsageScope,
    UsageTotal,
    Worker,
)
from workcoord.coordinator.domain.ports import (
    Leadership,
    OrgRecord,
    RequestRecord,
    UserRecord,
    WorkKeyRecord,
)
from workcoord.coordinator.domain.tickets import TrackerConnection
from workcoord.coordinator.domain.webhooks import Delivery, Webhook

from ..integrity import violation

_T = TypeVar("_T")
_K = TypeVar("_K")


class _Revocable(Protocol):
    @property
    def revoke_time(self) -> datetime | None: ...


_R = TypeVar("_R", bound=_Revocable)


class ReadOnlyViolation(RuntimeError):
    """A write was attempted through a read transaction (a bug in the caller)."""


@dataclass(slots=True)
class Settings:
    enabled: bool
    update_time: datetime
    version: int
    # Moved by every change to work keys, user tokens, users and org members (the SQL
    # stores' triggers; see MemoryTxBase._credentials_changed).
    credentials_epoch: int = 0


@dataclass(slots=True)
class CoordinatorRow:
    coordinator: Coordinator
    request_id: str
    item_seq: int


@dataclass(slots=True)
class TokenRow:
    token: TokenRecord
    secret_hash: str


@dataclass(slots=True)
class Tables:
    """The committed state. Stored records are never mutated in place, so a shallow copy of
    every table is a snapshot. Keys are the tables' primary keys."""

    settings: Settings | None = None
    orgs: dict[str, OrgRecord] = field(default_factory=dict)
    users: dict[str, UserRecord] = field(default_factory=dict)
    members: dict[tuple[str, str], MemberRecord] = field(default_factory=dict)
    tokens: dict[str, TokenRow] = field(default_factory=dict)
    work_keys: dict[str, WorkKeyRecord] = field(default_factory=dict)
    grants: dict[str, GrantRecord] = field(default_factory=dict)
    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    login_codes: dict[str, LoginCode] = field(default_factory=dict)
    coordinators: dict[str, CoordinatorRow] = field(default_factory=dict)
    lanes: dict[str, Lane] = field(default_factory=dict)
    # lane_id -> its turn in the claim order (a column of lanes, not a field of Lane).
    lane_turns: dict[str, int] = field(default_factory=dict)
    items: dict[str, Item] = field(default_factory=dict)
    attempts: dict[str, Attempt] = field(default_factory=dict)
    # (coordinator_id, key) -> lease_id: one live holder per exclusive key.
    holds: dict[tuple[str, str], str] = field(default_factory=dict)
    events: dict[str, list[Event]] = field(default_factory=dict)
    workers: dict[tuple[str, str], Worker] = field(default_factory=dict)
    # Blockers and tickets with their work coordinator (a column of theirs, not a field).
    blockers: dict[str, tuple[str, Blocker]] = field(default_factory=dict)
    tickets: dict[tuple[str, str, str], tuple[str, Ticket]] = field(default_factory=dict)
    leaderships: dict[str, Leadership] = field(default_factory=dict)
    digest_entries: dict[str, DigestEntry] = field(default_factory=dict)
    # (coordinator_id, scope, day, key) -> the roll-up.
    usage_totals: dict[tuple[str, UsageScope, str, str], UsageTotal] = field(default_factory=dict)
    pending_actions: dict[str, PendingAction] = field(default_factory=dict)
    escalations: dict[str, Escalation] = field(default_factory=dict)
    installation_secrets: dict[str, str] = field(default_factory=dict)
    webhooks: dict[str, Webhook] = field(default_factory=dict)
    deliveries: dict[str, Delivery] = field(default_factory=dict)
    tracker_connections: dict[str, TrackerConnection] = field(default_factory=dict)
    # (scope, request id) -> the create it made.
    request_ids: dict[tuple[str, str], RequestRecord] = field(default_factory=dict)

    def clone(self) -> Tables:
        return Tables(
            settings=self.settings,
            **{
                f.name: dict(getattr(self, f.name))
                for f in dataclasses.fields(self)
                if f.name != "settings"
            },
        )


_ATOMS = (str, int, float, bool, type(None), datetime, enum.Enum)
_FIELDS: dict[type, tuple[str, ...]] = {}


def copied(value: _T) -> _T:
    """A deep copy of a record (dataclasses of JSON-like values), much faster than deepcopy."""
    return cast(_T, _copy(value))


def _copy(value: Any) -> Any:
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    cls = type(value)
    names = _FIELDS.get(cls)
    if names is None:
        if not dataclasses.is_dataclass(value):
            return copy.deepcopy(value)
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(value))
    new = object.__new__(cls)
    for name in names:
        # object.__setattr__: frozen dataclasses are copied too.
        object.__setattr__(new, name, _copy(getattr(value, name)))
    return new


def refuse(constraint: str) -> NoReturn:
    """Fail like the database does when ``constraint`` (named as in the schema) is broken."""
    raise violation(constraint)


def refuse_taken(
    table: MutableMapping[_K, _T],
    key: _K,
    primary: str,
    *unique: tuple[str, Callable[[_T], bool]],
) -> None:
    """Fail like the database does when a row is inserted under a ``key`` already in ``table``
    (constraint ``primary``), or clashes with a stored row on one of the ``unique`` constraints:
    each is a name and a test of a stored row."""
    if key in table:
        refuse(primary)
    for constraint, clashes in unique:
        if any(clashes(row) for row in table.values()):
            refuse(constraint)


def insert_new(
    table: MutableMapping[_K, _T], rows: Iterable[_T], key: Callable[[_T], _K], primary: str
) -> None:
    """Store copies of ``rows`` in ``table`` under their ``key``, in order; a key already taken
    fails (constraint ``primary``) as the database does."""
    for row in rows:
        refuse_taken(table, key(row), primary)
        table[key(row)] = copied(row)


def revoke(table: MutableMapping[_K, _R], key: _K, when: datetime) -> None:
    """Stamp ``revoke_time`` on the row under ``key``, unless there is none or it is revoked."""
    row = table.get(key)
    if row is not None and row.revoke_time is None:
        table[key] = dataclasses.replace(row, revoke_time=when)  # type: ignore[type-var]


def selected(
    rows: Iterable[_T],
    where: Callable[[_T], object],
    order: Callable[[_T], Any],
    limit: int | None = None,
) -> list[_T]:
    """Copies of the ``rows`` that ``where`` holds for, sorted by ``order`` and cut at ``limit``:
    a query's WHERE, ORDER BY and LIMIT."""
    found = sorted((row for row in rows if where(row)), key=order)
    return [copied(row) for row in found[:limit]]


class MemoryTxBase:
    """One transaction over a snapshot of the tables."""

    def __init__(
        self, tables: Tables, now: datetime, coordinator: Coordinator | None, *, writable: bool
    ) -> None:
        self.tables = tables
        self.now = now
        self.coordinator = coordinator
        self.locked_credentials_epoch: int | None = None
        self.seen_credentials_epoch: int | None = None
        self.writable = writable
        self.closed = False
        # Appended events and the revisions they move, written at commit (as SQL does).
        self._events: list[Event] = []
        self._revisions: dict[str, int] = {}
        self._webhook_filters: dict[str, dict[str, list[str]]] = {}

    def _credentials_changed(self) -> Tables:
        """The writable tables, after moving the credentials epoch (as the SQL stores'
        triggers do on every change to work keys, user tokens, users and org members)."""
        tables = self._w()
        if tables.settings is not None:
            epoch = tables.settings.credentials_epoch + 1
            tables.settings = dataclasses.replace(tables.settings, credentials_epoch=epoch)
        return tables

    def _release_holds(self, ended: Iterable[Attempt]) -> None:
        """Free the exclusive keys the ``ended`` attempts held."""
        gone = {a.lease_id for a in ended}
        if gone:
            tables = self._w()
            tables.holds = {pk: lease for pk, lease in tables.holds.items() if lease not in gone}

    def _w(self) -> Tables:
        if not self.writable:
            raise ReadOnlyViolation("write through a read transaction")
        if self.closed:
            raise ReadOnlyViolation("write after the transaction committed")
        return self.tables
