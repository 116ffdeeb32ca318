"""Stored documents: typed values (what workers report) kept as JSON objects in their records.

A document's JSON is derived from its dataclass, field by field: the key is the field's name
(or the name it was stored under, see :func:`stored_as`), and a field at its default is left
out, as proto3 JSON does. Reading is strict: a key that names no field, or a value of the wrong
type, raises :class:`UnreadableDocument` rather than being dropped, so a field renamed on one
side only fails a test (or, in production, one request, loudly) instead of losing what was
stored. The domain owns this form, not the proto: a proto field renamed changes the transport
mapping only, never what is stored.

Values: text; whole numbers, written as decimal strings as proto3 JSON writes an int64 (and read
from a string or a number); booleans; UTC times (RFC 3339, written with 'Z' and 0, 3 or 6
fraction digits); string enums by value; tuples of any of these; nested documents. So the JSON
is what the proto's own mapping writes for the matching message, as release 0.1 stored it.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Self, TypeVar, Union, get_args, get_origin, get_type_hints

__all__ = ["Document", "UnreadableDocument", "stored_as"]

_D = TypeVar("_D", bound="Document")

# Field metadata: the key a field is stored under when it differs from the field's name.
_STORED_AS = "stored_as"


class UnreadableDocument(ValueError):
    """A stored document this release cannot read exactly: a key naming no field (written by a
    newer release, or by a field renamed without keeping its stored name) or a value of the
    wrong type. Never raised for a key that is merely missing: that field takes its default."""

    def __init__(self, kind: str, path: str, problem: str) -> None:
        super().__init__(f"stored {kind}: {path}: {problem}")
        self.kind = kind
        self.path = path
        self.problem = problem


def stored_as(name: str, default: Any = dataclasses.MISSING) -> Any:
    """A field stored under the key ``name`` (its name before a rename): documents written
    before the rename keep reading, and new ones are written the same way."""
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata={_STORED_AS: name})
    return dataclasses.field(default=default, metadata={_STORED_AS: name})


class Document:
    """A frozen dataclass stored as a JSON object (see the module docstring)."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in _specs(type(self)):
            value = getattr(self, spec.name)
            if not _is_default(value):
                out[spec.key] = _write(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        return _read_document(cls, data, cls.__name__, "")


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldSpec:
    name: str
    key: str
    hint: Any


_SPECS: dict[type[Document], tuple[_FieldSpec, ...]] = {}


def _specs(cls: type[Document]) -> tuple[_FieldSpec, ...]:
    """The stored fields of ``cls`` (worked out once per class)."""
    specs = _SPECS.get(cls)
    if specs is None:
        hints = get_type_hints(cls)
        specs = tuple(
            _FieldSpec(f.name, f.metadata.get(_STORED_AS, f.name), hints[f.name])
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        )
        _SPECS[cls] = specs
    return specs


def _is_default(value: Any) -> bool:
    """Left out when written: proto3 JSON omits empty, zero, false and unset fields (a nested
    document that is set is written, even when empty)."""
    return value is None or (not isinstance(value, Document) and value in ("", 0, False, ()))


def _write(value: Any) -> Any:
    if isinstance(value, Document):
        return value.to_json()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return _time_to_json(value)
    if isinstance(value, tuple):
        return [_write(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _time_to_json(value: datetime) -> str:
    """RFC 3339 in UTC as proto3 JSON writes a Timestamp: 'Z', and 0, 3 or 6 fraction digits."""
    utc = value.astimezone(UTC)
    text = utc.replace(tzinfo=None, microsecond=0).isoformat()
    if utc.microsecond == 0:
        return text + "Z"
    if utc.microsecond % 1000 == 0:
        return f"{text}.{utc.microsecond // 1000:03d}Z"
    return f"{text}.{utc.microsecond:06d}Z"


def _read_document(cls: type[_D], data: Any, kind: str, path: str) -> _D:
    if not isinstance(data, Mapping):
        raise UnreadableDocument(kind, path or "(document)", "is not a JSON object")
    specs = _specs(cls)
    known = {spec.key for spec in specs}
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise UnreadableDocument(
            kind,
            _join(path, unknown[0]),
            f"unknown field (this release stores {cls.__name__} as {sorted(known)})",
        )
    values = {
        spec.name: _read(spec.hint, data[spec.key], kind, _join(path, spec.key))
        for spec in specs
        if spec.key in data and data[spec.key] is not None
    }
    for spec in specs:
        if spec.name not in values and _required(cls, spec.name):
            values[spec.name] = _zero(spec.hint)
    return cls(**values)


def _required(cls: type[Document], name: str) -> bool:
    field = next(f for f in dataclasses.fields(cls) if f.name == name)  # type: ignore[arg-type]
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _zero(hint: Any) -> Any:
    """What a required field left out of a document holds (proto3 JSON omits zero values)."""
    origin = get_origin(hint)
    if origin is tuple:
        return ()
    if origin in (Union, types.UnionType):
        return None
    return hint()


def _read(hint: Any, value: Any, kind: str, path: str) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = (a for a in get_args(hint) if a is not type(None))
        return _read(inner, value, kind, path)
    if origin is tuple:
        if not isinstance(value, list):
            raise UnreadableDocument(kind, path, "is not a list")
        item = get_args(hint)[0]
        return tuple(_read(item, v, kind, f"{path}[{i}]") for i, v in enumerate(value))
    if isinstance(hint, type) and issubclass(hint, Document):
        return _read_document(hint, value, kind, path)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            raise UnreadableDocument(
                kind, path, f"{value!r} is not one of {[m.value for m in hint]}"
            ) from None
    if hint is datetime:
        return _time_from_json(value, kind, path)
    if hint is bool:
        if not isinstance(value, bool):
            raise UnreadableDocument(kind, path, "is not a boolean")
        return value
    if hint is int:
        return _whole_number(value, kind, path)
    if hint is str:
        if not isinstance(value, str):
            raise UnreadableDocument(kind, path, "is not a string")
        return value
    raise TypeError(f"{kind}: {path}: no stored form for {hint!r}")


def _whole_number(value: Any, kind: str, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise UnreadableDocument(kind, path, "is not a whole number")


def _time_from_json(value: Any, kind: str, path: str) -> datetime:
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None:
                return parsed.astimezone(UTC)
    raise UnreadableDocument(kind, path, "is not an RFC 3339 time with an offset")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
