"""Rows ↔ domain records: the one place that turns a record into column values and a row back
into a record, driven by the record's dataclass fields.

A field is stored in the column of its name, and how its value is encoded follows from the
field's type: an enum by its value, a tuple as a JSON list, a nested policy dataclass as a JSON
object without its unset (``None``) fields; anything else (text, numbers, booleans, JSON
objects, and UTC datetimes, which :class:`~workcoord.coordinator.storage.schema.UtcDateTime`
handles on both dialects) as it is. A few fields of a lane are packed into one JSON column
(``spec``). A nested object or a packed column missing a key reads that field as its default;
one with a key that names no field raises
:class:`~workcoord.coordinator.domain.documents.UnreadableDocument` rather than dropping it. A
few columns belong to the store rather than to the record (a work coordinator's request id and
item counter, the work coordinator of a blocker or a ticket, a token's secret hash): they are
given when inserting.

Every mapping checks, when this module is imported, that its dataclass and its table agree, so
a field added to one and not to the other fails at start-up rather than at the first write.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import operator
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar, Union, get_args, get_origin, get_type_hints

from sqlalchemy import Table
from sqlalchemy.engine import Row

from workcoord.coordinator.domain.documents import UnreadableDocument
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
    UsageTotal,
    Worker,
)
from workcoord.coordinator.domain.ports import Leadership, OrgRecord, UserRecord, WorkKeyRecord
from workcoord.coordinator.domain.tickets import TrackerConnection
from workcoord.coordinator.domain.webhooks import Delivery, Webhook

from .. import schema as t

__all__ = [
    "ATTEMPTS",
    "BLOCKERS",
    "COORDINATORS",
    "DELIVERIES",
    "DIGEST_ENTRIES",
    "ESCALATIONS",
    "EVENTS",
    "GRANTS",
    "ITEMS",
    "LANES",
    "LEADERSHIPS",
    "LOGIN_CODES",
    "MEMBERS",
    "ORGS",
    "PENDING_ACTIONS",
    "SESSIONS",
    "TICKETS",
    "TRACKER_CONNECTIONS",
    "USERS",
    "USER_TOKENS",
    "WEBHOOKS",
    "WORKERS",
    "WORK_KEYS",
    "RowMap",
]

_R = TypeVar("_R")
_Convert = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True, slots=True)
class _Codec:
    """How one field's value goes into its column (``encode``) and back (``decode``); ``None``
    stands for "as it is"."""

    encode: _Convert | None = None
    decode: _Convert | None = None


_AS_IS = _Codec()


def _codec(hint: Any) -> _Codec:
    """The codec a field of type ``hint`` needs."""
    origin = get_origin(hint)
    args = get_args(hint)
    if origin in (Union, types.UnionType):
        inner = _codec(next(a for a in args if a is not type(None)))
        if inner is _AS_IS:
            return _AS_IS
        return _Codec(_or_none(inner.encode), _or_none(inner.decode))
    if origin is tuple:
        item = _codec(args[0])
        return _Codec(_each(list, item.encode), _each(tuple, item.decode))
    if origin is list:
        item = _codec(args[0])
        return (
            _AS_IS if item is _AS_IS else _Codec(_each(list, item.encode), _each(list, item.decode))
        )
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return _Codec(_enum_value, _enum_reader(hint))
        if dataclasses.is_dataclass(hint):
            nested = _JsonObject(hint)
            return _Codec(nested.encode, nested.decode)
        if hint is float:
            # JSON gives 5.0 back as 5.
            return _Codec(None, float)
    return _AS_IS


def _enum_value(value: enum.Enum) -> Any:
    return value.value


def _enum_reader(kind: type[enum.Enum]) -> _Convert:
    """``kind(value)`` for a stored value: a dict lookup of its members by value (calling the
    enum costs several times more, once per enum column of every row read), the call itself
    for a value no member has (it raises as ``kind(value)`` does)."""
    members = {member.value: member for member in kind}

    def read(value: Any) -> Any:
        found = members.get(value)
        return found if found is not None else kind(value)

    return read


def _or_none(convert: _Convert | None) -> _Convert | None:
    if convert is None:
        return None
    inner = convert
    return lambda value: None if value is None else inner(value)


def _each(container: Callable[[Any], Any], convert: _Convert | None) -> _Convert:
    if convert is None:
        return container
    inner = convert
    return lambda values: container(inner(v) for v in values)


def _field_codecs(record: type[Any]) -> dict[str, _Codec]:
    hints = get_type_hints(record)
    return {f.name: _codec(hints[f.name]) for f in dataclasses.fields(record)}


def _encode(codec: _Codec, value: Any) -> Any:
    return value if codec.encode is None else codec.encode(value)


def _decode(codec: _Codec, value: Any) -> Any:
    return value if codec.decode is None else codec.decode(value)


class _JsonObject:
    """A nested dataclass (a retry or review policy, a work coordinator's configuration) as a
    JSON object: unset fields are left out, and missing keys read back as the defaults."""

    def __init__(self, record: type[Any]) -> None:
        self.record = record
        self.codecs = tuple(_field_codecs(record).items())
        self.known = frozenset(name for name, _ in self.codecs)

    def encode(self, value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, codec in self.codecs:
            field_value = getattr(value, name)
            if field_value is not None:
                out[name] = _encode(codec, field_value)
        return out

    def decode(self, data: Mapping[str, Any] | None) -> Any:
        data = data or {}
        if not self.known.issuperset(data):  # checked once per row read: keep it cheap
            _refuse_unknown(self.record.__name__, data, set(self.known))
        return self.record(
            **{name: _decode(codec, data[name]) for name, codec in self.codecs if name in data}
        )


def _one(position: int) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    return lambda row: (row[position],)


def _refuse_unknown(kind: str, data: Mapping[str, Any], known: set[str]) -> None:
    """A stored key that names no field is refused rather than dropped: a field renamed or
    removed on one side only fails loudly instead of losing what was stored (and the next write
    of the record would lose it for good)."""
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise UnreadableDocument(kind, unknown[0], f"unknown field (known: {sorted(known)})")


class RowMap(Generic[_R]):
    """The mapping of one record type onto one table (see the module docstring)."""

    def __init__(
        self,
        record: type[_R],
        table: Table,
        *,
        packed: Mapping[str, Sequence[str]] | None = None,
        store_columns: Sequence[str] = (),
    ) -> None:
        self.record = record
        self.table = table
        codecs = _field_codecs(record)
        packed = packed or {}
        in_packs = {name for names in packed.values() for name in names}
        columns = [(n, c) for n, c in codecs.items() if n not in in_packs]
        # Split once: most fields are stored as they are, and the hot paths (bulk item and
        # attempt writes) should not pay a call per field for them.
        self._written_as_is = tuple(n for n, c in columns if c.encode is None)
        self._encoded = tuple((n, c.encode) for n, c in columns if c.encode is not None)
        self._decoded = tuple((n, c.decode) for n, c in columns if c.decode is not None)
        self._packs = tuple(
            (column, tuple((name, codecs[name]) for name in names))
            for column, names in packed.items()
        )
        self._pack_names = {column: frozenset(names) for column, names in packed.items()}
        self._column_names = tuple(table.c.keys())
        self._codecs = {n: c for n, c in columns}
        self._store_columns = tuple(store_columns)
        # A table whose columns are exactly the record's fields (no packed or store columns)
        # is read by ``_load_plain``: the record's fields taken from the row by position in
        # their declared order (one ``itemgetter`` per offset), the few that need it decoded.
        fields = dataclasses.fields(record)  # type: ignore[arg-type]
        init_fields = [f.name for f in fields if f.init]
        self._plain = (
            not packed
            and not store_columns
            and len(init_fields) == len(fields)
            and sorted(init_fields) == sorted(self._column_names)
        )
        self._field_positions = (
            tuple(self._column_names.index(n) for n in init_fields) if self._plain else ()
        )
        self._field_decoders: tuple[tuple[int, _Convert], ...] = tuple(
            (place, decode)
            for place, name in enumerate(init_fields)
            if (decode := codecs[name].decode) is not None
        )
        self._getters: dict[int, Callable[[Sequence[Any]], tuple[Any, ...]]] = {}
        mapped = {n for n, _ in columns} | set(packed) | set(store_columns)
        table_columns = set(table.c.keys())
        if mapped != table_columns or not in_packs <= set(codecs):
            raise TypeError(
                f"{record.__name__} does not match table {table.name}: "
                f"fields without a column {sorted(mapped - table_columns)}, "
                f"columns without a field {sorted(table_columns - mapped)}"
            )

    def values(self, record: _R, **store_columns: Any) -> dict[str, Any]:
        """The column values of ``record`` (plus the store's own columns, when inserting)."""
        out = {name: getattr(record, name) for name in self._written_as_is}
        for name, encode in self._encoded:
            out[name] = encode(getattr(record, name))
        for column, members in self._packs:
            out[column] = {name: _encode(codec, getattr(record, name)) for name, codec in members}
        out.update(store_columns)
        return out

    def some_values(self, record: _R, names: Sequence[str]) -> dict[str, Any]:
        """The values of the columns ``names`` only (unpacked columns)."""
        return {name: _encode(self._codecs[name], getattr(record, name)) for name in names}

    def load_some(self, names: Sequence[str], row: Sequence[Any], **decoded: Any) -> _R:
        """A record of only the columns ``names`` (selected in that order; unpacked columns),
        plus the fields ``decoded`` (values already decoded, e.g. shared by many rows): the
        record's other fields keep their defaults. For reads that need a few columns of many
        rows."""
        kwargs = dict(zip(names, row, strict=True))
        for name in names:
            kwargs[name] = _decode(self._codecs[name], kwargs[name])
        kwargs.update(decoded)
        return self.record(**kwargs)

    def decode_column(self, name: str, value: Any) -> Any:
        """The field ``name`` of a record, from its column's stored value (an unpacked
        column): for a reader that decodes a value many rows share once."""
        return _decode(self._codecs[name], value)

    def load(self, row: Row[Any], offset: int = 0) -> _R:
        """The record a row holds: the table's columns in their declared order, from
        position ``offset`` on (a ``select`` of the table, maybe joined to another table or
        followed by more columns). Read by position, not by name: this runs for every row of
        the hot paths."""
        if self._plain and len(row) - offset >= len(self._column_names):
            return self._load_plain(row, offset)
        values = itertools.islice(row, offset, None) if offset else row
        kwargs = dict(zip(self._column_names, values, strict=False))
        for name in self._store_columns:
            del kwargs[name]
        for name, decode in self._decoded:
            kwargs[name] = decode(kwargs[name])
        for column, members in self._packs:
            data = kwargs.pop(column) or {}
            known = self._pack_names[column]
            if not known.issuperset(data):
                _refuse_unknown(f"{self.table.name}.{column}", data, set(known))
            for name, codec in members:
                if name in data:
                    kwargs[name] = _decode(codec, data[name])
        return self.record(**kwargs)

    def _load_plain(self, row: Sequence[Any], offset: int) -> _R:
        """``load`` of a table of the record's fields only: the fields in their declared order
        straight from the row (see ``__init__``), given to the record by position."""
        getter = self._getters.get(offset)
        if getter is None:
            positions = [p + offset for p in self._field_positions]
            # itemgetter of one position gives the value, not a 1-tuple.
            getter = operator.itemgetter(*positions) if len(positions) > 1 else _one(positions[0])
            self._getters[offset] = getter
        values = list(getter(row))
        for place, decode in self._field_decoders:
            values[place] = decode(values[place])
        return self.record(*values)

    def stored(self, row: Sequence[Any], offset: int = 0) -> tuple[Any, ...]:
        """The column values a row holds (from position ``offset``), in the form ``values``
        gives them: for a table of unpacked columns and no store columns, whose stored form
        is the encoded one (what ``changed_params`` compares a record's values with)."""
        return tuple(row[offset : offset + len(self._column_names)])

    @property
    def column_names(self) -> tuple[str, ...]:
        """The table's columns, in their declared order."""
        return self._column_names

    @property
    def width(self) -> int:
        """How many columns the table has (where a joined table's columns start)."""
        return len(self._column_names)


ORGS = RowMap(OrgRecord, t.orgs)
USERS = RowMap(UserRecord, t.users)
MEMBERS = RowMap(MemberRecord, t.org_members)
USER_TOKENS = RowMap(TokenRecord, t.user_tokens, store_columns=["secret_hash"])
WORK_KEYS = RowMap(WorkKeyRecord, t.work_keys)
LEADERSHIPS = RowMap(Leadership, t.leaderships)
COORDINATORS = RowMap(Coordinator, t.work_coordinators, store_columns=["request_id", "item_seq"])
EVENTS = RowMap(Event, t.events)
WEBHOOKS = RowMap(Webhook, t.webhooks)
DELIVERIES = RowMap(Delivery, t.webhook_deliveries)
LANES = RowMap(
    Lane,
    t.lanes,
    packed={"spec": ["worker_classes", "retry_policy", "review_policy", "placement", "brief"]},
    store_columns=["served_turn"],
)
BLOCKERS = RowMap(Blocker, t.blockers, store_columns=["coordinator_id"])
TICKETS = RowMap(Ticket, t.tickets, store_columns=["coordinator_id"])
ITEMS = RowMap(Item, t.items)
ATTEMPTS = RowMap(Attempt, t.attempts)
WORKERS = RowMap(Worker, t.workers)
DIGEST_ENTRIES = RowMap(DigestEntry, t.digest_entries)
USAGE_TOTALS = RowMap(UsageTotal, t.usage_totals)
PENDING_ACTIONS = RowMap(PendingAction, t.pending_actions)
ESCALATIONS = RowMap(Escalation, t.escalations)
TRACKER_CONNECTIONS = RowMap(TrackerConnection, t.tracker_connections)
GRANTS = RowMap(GrantRecord, t.grants)
SESSIONS = RowMap(SessionRecord, t.sessions)
LOGIN_CODES = RowMap(LoginCode, t.login_codes)
