"""Request validation driven by the ``(workcoord.api.v1.rules)`` field option.

The limits of every request field are written once, in the protos (``field_rules.proto``); this
module enforces them, and the gateway's OpenAPI generator reads them through :func:`rules_for`.
No maintained library reads our own option (protovalidate has its own option and a CEL runtime),
so the walker is written here by hand.

Semantics, per field:

- ``required``: a non-empty string/bytes, a non-zero number or enum, a present message (or a set
  ``optional`` scalar), a non-empty repeated or map field.
- ``min``/``max`` (only when ``has_min``/``has_max``): numeric fields, and map values of numeric
  maps; for ``google.protobuf.Duration`` fields the bounds are seconds. A non-``optional`` scalar
  is always checked (its zero is a value); an unset ``optional`` scalar is not.
- ``max_length`` (characters; bytes for ``bytes``), ``pattern`` (``re.fullmatch``, non-empty only)
  and ``absolute_path`` apply to strings, to each element of a repeated string, and to the values
  of a string map. On a map whose values are not strings (``map<string, int32>``) they apply to
  the keys instead, since they cannot mean anything else there. An empty map key is checked
  against ``pattern`` too (a key is never "unset"). ``absolute_path`` also refuses ``..``
  segments.
- ``max_items``: repeated and map fields. ``max_bytes``: the serialized size of a message,
  ``Struct`` or ``bytes`` field. ``not_in_future``: a ``Timestamp`` no later than ``now``.
- ``min_nonzero_millis``: a ``Duration`` that is set must be at least that long (zero stays
  "not set", so an inheriting field can still be left empty).

Global defaults guard fields that state nothing: strings are capped at
:data:`DEFAULT_MAX_STRING_LENGTH` characters, lists and maps at :data:`DEFAULT_MAX_ITEMS`
entries, strings may not contain NUL (PostgreSQL cannot store it), enum values must be declared
(and an element of a repeated enum, or a map's enum value, is never the ``*_UNSPECIFIED`` zero:
it would stand for nothing), and timestamps must lie within RFC 3339's years 0001-9999.
Free-form JSON (``Struct``, ``Value``, ``ListValue``) is walked too: at most
:data:`MAX_JSON_DEPTH` levels of objects and arrays, no NUL in any key or string at any depth,
and only finite numbers (JSON has no NaN or infinity; ``1e400`` overflows to one), so both
databases refuse alike.
"""

from __future__ import annotations

import enum
import functools
import math
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from workcoord.api.v1 import field_rules_pb2
from workcoord.kit.errors import FieldViolation, InvalidArgument
from workcoord.kit.secrets import looks_like_credential

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_MAX_STRING_LENGTH",
    "JSON_TOO_DEEP",
    "MAX_JSON_DEPTH",
    "prepare",
    "raise_if_invalid",
    "rules_for",
    "validate",
]

DEFAULT_MAX_STRING_LENGTH = 4096
DEFAULT_MAX_ITEMS = 1000
MAX_JSON_DEPTH = 20
"""How deeply free-form JSON (a ``Struct``, ``Value`` or ``ListValue`` field) may nest objects
and arrays, the field's own object counting as one. The gateway and the MCP tools refuse deeper
JSON while reading it (:mod:`workcoord.kit.proto_json`) and the coordinator refuses it in any
request; one limit, so no request passes one side and fails the other.

Why 20: protobuf's decoders (upb, which Python's protobuf uses, and by default C++'s and
Java's) refuse a message nested more than 100 levels deep, and each JSON object in a ``Struct``
costs three of them (the ``Struct``, its map entry, the ``Value``). The deepest ``Struct`` in
the API sits a few messages down (a leased item's ``inputs`` in a ``LeaseResponse``), so 20
keeps every request and every response that carries one well inside what every decoder reads
(``tests/unit/test_json_depth.py`` proves it for every ``Struct`` field of the API)."""
JSON_TOO_DEEP = f"must nest at most {MAX_JSON_DEPTH} levels of JSON objects and arrays"
"""The violation of :data:`MAX_JSON_DEPTH`, worded alike wherever it is found."""

# RFC 3339 covers 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z.
_MIN_TIMESTAMP_SECONDS = -62_135_596_800
_MAX_TIMESTAMP_SECONDS = 253_402_300_799
_MAX_DURATION_SECONDS = 315_576_000_000
# Keys echoed in a field path are cut so a hostile key cannot blow up the error body.
_MAX_KEY_IN_PATH = 64

_OPAQUE_TYPES = frozenset(
    {
        "google.protobuf.Struct",
        "google.protobuf.Value",
        "google.protobuf.ListValue",
        "google.protobuf.Any",
    }
)
_WRAPPER_TYPES = frozenset(
    {
        "google.protobuf.DoubleValue",
        "google.protobuf.FloatValue",
        "google.protobuf.Int64Value",
        "google.protobuf.UInt64Value",
        "google.protobuf.Int32Value",
        "google.protobuf.UInt32Value",
        "google.protobuf.BoolValue",
        "google.protobuf.StringValue",
        "google.protobuf.BytesValue",
    }
)
_INT_TYPES = frozenset(
    {
        FieldDescriptor.CPPTYPE_INT32,
        FieldDescriptor.CPPTYPE_INT64,
        FieldDescriptor.CPPTYPE_UINT32,
        FieldDescriptor.CPPTYPE_UINT64,
    }
)
_FLOAT_TYPES = frozenset({FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE})


class _Kind(enum.Enum):
    STRING = "string"
    BYTES = "bytes"
    NUMBER = "number"
    BOOL = "bool"
    ENUM = "enum"
    MESSAGE = "message"
    DURATION = "duration"
    TIMESTAMP = "timestamp"
    OPAQUE = "opaque"
    WRAPPER = "wrapper"


class _Container(enum.Enum):
    SINGLE = "single"
    REPEATED = "repeated"
    MAP = "map"


@dataclass(frozen=True, slots=True)
class _ValueCheck:
    """What to check on one value (a singular field, a list element, a map key or value)."""

    kind: _Kind
    minimum: int | None = None
    maximum: int | None = None
    max_length: int = 0
    pattern: re.Pattern[str] | None = None
    absolute_path: bool = False
    not_in_future: bool = False
    not_credential: bool = False
    min_nonzero_millis: int = 0
    max_bytes: int = 0
    enum_numbers: frozenset[int] = frozenset()
    enum_names: str = ""
    nested: Descriptor | None = None
    inner: _ValueCheck | None = None  # the checks of a wrapper type's ``value``
    hint: str = ""


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    container: _Container
    has_presence: bool
    required: bool
    max_items: int
    value: _ValueCheck
    key: _ValueCheck | None
    hint: str


def rules_for(field: FieldDescriptor) -> field_rules_pb2.FieldRules | None:
    """The ``(workcoord.api.v1.rules)`` option of ``field``, or None when it states none."""
    if not field.has_options:
        return None
    options = field.GetOptions()
    # Typed loosely: protoc's .pyi and mypy-protobuf's stubs disagree on the handle's type.
    handle: Any = field_rules_pb2.rules
    if not options.HasExtension(handle):
        return None
    rules: field_rules_pb2.FieldRules = options.Extensions[handle]
    return rules


def prepare(descriptor: Descriptor) -> None:
    """Compile the rule tables of ``descriptor`` and every message it reaches.

    Call at start-up: a malformed ``pattern`` then fails the process instead of a request.
    """
    seen: set[str] = set()
    pending = [descriptor]
    while pending:
        current = pending.pop()
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        for plan in _plan(current):
            for check in (plan.value, plan.key):
                if check is not None and check.nested is not None:
                    pending.append(check.nested)


def validate(message: Message, now: datetime | None = None) -> list[FieldViolation]:
    """Every violation of the field rules in ``message``, with snake_case field paths.

    ``now`` is the server's clock for ``not_in_future`` (defaults to the system's UTC time).
    """
    violations: list[FieldViolation] = []
    _walk(message, "", violations, now or datetime.now(UTC))
    return violations


def raise_if_invalid(message: Message, now: datetime | None = None) -> None:
    """Raise :class:`InvalidArgument` naming every offending field of ``message``, if any."""
    violations = validate(message, now)
    if violations:
        raise InvalidArgument(violations)


# --- compilation (once per descriptor) -------------------------------------------------------


@functools.cache
def _plan(descriptor: Descriptor) -> tuple[_FieldPlan, ...]:
    return tuple(_compile_field(field) for field in descriptor.fields)


def _compile_field(field: FieldDescriptor) -> _FieldPlan:
    rules = rules_for(field)
    hint = rules.description if rules is not None else ""
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        key_field = message_type.fields_by_name["key"]
        value_field = message_type.fields_by_name["value"]
        value = _compile_value(value_field, rules, field.full_name, hint, in_container=True)
        # String rules on a map of non-strings can only be meant for its keys.
        key_rules = rules if value.kind is not _Kind.STRING else None
        key = _compile_value(key_field, key_rules, field.full_name, hint)
        container = _Container.MAP
    else:
        value = _compile_value(field, rules, field.full_name, hint, in_container=field.is_repeated)
        key = None
        container = _Container.REPEATED if field.is_repeated else _Container.SINGLE
    max_items = DEFAULT_MAX_ITEMS
    if rules is not None and rules.max_items:
        max_items = rules.max_items
    return _FieldPlan(
        name=field.name,
        container=container,
        has_presence=container is _Container.SINGLE and field.has_presence,
        required=rules is not None and rules.required,
        max_items=max_items,
        value=value,
        key=key,
        hint=hint,
    )


def _compile_value(
    field: FieldDescriptor,
    rules: field_rules_pb2.FieldRules | None,
    owner: str,
    hint: str,
    *,
    in_container: bool = False,
) -> _ValueCheck:
    """The checks of one value of ``field``; ``in_container`` for a list element or a map
    value, where an enum's zero (``*_UNSPECIFIED``) is refused: there it cannot mean "not
    set", only nothing at all (and the domain has no value to map it to)."""
    kind = _kind_of(field)
    minimum = rules.min if rules is not None and rules.has_min else None
    maximum = rules.max if rules is not None and rules.has_max else None
    max_length = rules.max_length if rules is not None else 0
    if kind is _Kind.STRING and not max_length:
        max_length = DEFAULT_MAX_STRING_LENGTH
    pattern: re.Pattern[str] | None = None
    if rules is not None and rules.pattern:
        try:
            pattern = re.compile(rules.pattern)
        except re.error as exc:
            raise ValueError(f"bad pattern in the rules of {owner}: {exc}") from exc
    enum_numbers: frozenset[int] = frozenset()
    enum_names = ""
    if kind is _Kind.ENUM and field.enum_type is not None:
        enum_numbers = frozenset(
            v.number for v in field.enum_type.values if v.number != 0 or not in_container
        )
        enum_names = ", ".join(v.name for v in field.enum_type.values if v.number != 0)
    inner = None
    if kind is _Kind.WRAPPER and field.message_type is not None:
        inner = _compile_value(field.message_type.fields_by_name["value"], rules, owner, hint)
    nested = field.message_type if kind is _Kind.MESSAGE else None
    return _ValueCheck(
        kind=kind,
        minimum=minimum,
        maximum=maximum,
        max_length=max_length,
        pattern=pattern,
        absolute_path=rules is not None and rules.absolute_path,
        not_in_future=rules is not None and rules.not_in_future,
        not_credential=rules is not None and rules.not_credential,
        min_nonzero_millis=rules.min_nonzero_millis if rules is not None else 0,
        max_bytes=rules.max_bytes if rules is not None else 0,
        enum_numbers=enum_numbers,
        enum_names=enum_names,
        nested=nested,
        inner=inner,
        hint=hint,
    )


def _kind_of(field: FieldDescriptor) -> _Kind:
    cpp = field.cpp_type
    if cpp == FieldDescriptor.CPPTYPE_MESSAGE:
        name = field.message_type.full_name if field.message_type is not None else ""
        if name == "google.protobuf.Duration":
            return _Kind.DURATION
        if name == "google.protobuf.Timestamp":
            return _Kind.TIMESTAMP
        if name in _OPAQUE_TYPES:
            return _Kind.OPAQUE
        if name in _WRAPPER_TYPES:
            return _Kind.WRAPPER
        return _Kind.MESSAGE
    if cpp == FieldDescriptor.CPPTYPE_STRING:
        return _Kind.BYTES if field.type == FieldDescriptor.TYPE_BYTES else _Kind.STRING
    if cpp in _INT_TYPES or cpp in _FLOAT_TYPES:
        return _Kind.NUMBER
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        return _Kind.ENUM
    return _Kind.BOOL


# --- checking (every request) ----------------------------------------------------------------


def _walk(message: Message, prefix: str, out: list[FieldViolation], now: datetime) -> None:
    for plan in _plan(message.DESCRIPTOR):
        path = f"{prefix}.{plan.name}" if prefix else plan.name
        if plan.container is _Container.SINGLE:
            _check_single(message, plan, path, out, now)
        elif plan.container is _Container.REPEATED:
            _check_repeated(getattr(message, plan.name), plan, path, out, now)
        else:
            _check_map(getattr(message, plan.name), plan, path, out, now)


def _check_single(
    message: Message, plan: _FieldPlan, path: str, out: list[FieldViolation], now: datetime
) -> None:
    check = plan.value
    if plan.has_presence and not message.HasField(plan.name):
        if plan.required:
            out.append(FieldViolation(path, _with_hint("is required", plan.hint)))
        return
    value = getattr(message, plan.name)
    if plan.required and not plan.has_presence and _is_zero(value, check.kind):
        out.append(FieldViolation(path, _with_hint("is required", plan.hint)))
        return
    _check_value(value, check, path, out, now)


def _bad_size(size: int, plan: _FieldPlan, path: str, noun: str, out: list[FieldViolation]) -> bool:
    """Record it if a repeated field or map of ``size`` ``noun`` is empty though required, or
    longer than its limit; whether it was (its elements then go unchecked: checking every
    element of an oversized list would only amplify the attack)."""
    if plan.required and not size:
        out.append(FieldViolation(path, _with_hint("is required", plan.hint)))
        return True
    if size > plan.max_items:
        limit = f"must have at most {plan.max_items} {noun}"
        out.append(FieldViolation(path, _with_hint(limit, plan.hint)))
        return True
    return False


def _check_repeated(
    values: Sequence[Any], plan: _FieldPlan, path: str, out: list[FieldViolation], now: datetime
) -> None:
    if _bad_size(len(values), plan, path, "items", out):
        return
    for index, value in enumerate(values):
        _check_value(value, plan.value, f"{path}[{index}]", out, now)


def _check_map(
    entries: Any, plan: _FieldPlan, path: str, out: list[FieldViolation], now: datetime
) -> None:
    if _bad_size(len(entries), plan, path, "entries", out):
        return
    # Sorted so the same request always yields the same violations, in the same order.
    for key in sorted(entries):
        entry_path = f"{path}[{_key_in_path(key)}]"
        if plan.key is not None and isinstance(key, str):
            _check_string(key, plan.key, entry_path, out, what="key ")
        _check_value(entries[key], plan.value, entry_path, out, now)


def _check_value(
    value: Any, check: _ValueCheck, path: str, out: list[FieldViolation], now: datetime
) -> None:
    kind = check.kind
    if kind is _Kind.STRING:
        _check_string(value, check, path, out)
    elif kind is _Kind.NUMBER:
        _check_range(value, check, path, out, unit="")
    elif kind is _Kind.ENUM:
        if value not in check.enum_numbers:
            out.append(
                FieldViolation(path, _with_hint(f"must be one of {check.enum_names}", check.hint))
            )
    elif kind is _Kind.MESSAGE:
        if check.max_bytes and value.ByteSize() > check.max_bytes:
            out.append(_too_many_bytes(path, check))
            return
        _walk(value, path, out, now)
    elif kind is _Kind.DURATION:
        _check_duration(value, check, path, out)
    elif kind is _Kind.TIMESTAMP:
        _check_timestamp(value, check, path, out, now)
    elif kind is _Kind.OPAQUE:
        if check.max_bytes and value.ByteSize() > check.max_bytes:
            out.append(_too_many_bytes(path, check))
            return
        _check_json(value, path, out)
    elif kind is _Kind.BYTES:
        limit = check.max_bytes or check.max_length
        if limit and len(value) > limit:
            out.append(
                FieldViolation(path, _with_hint(f"must be at most {limit} bytes", check.hint))
            )
    elif kind is _Kind.WRAPPER and check.inner is not None:
        _check_value(value.value, check.inner, path, out, now)


# Violations reported per free-form JSON field, at most: the rest only repeat the point.
_MAX_JSON_VIOLATIONS = 5


def _check_json(value: Message, path: str, out: list[FieldViolation]) -> None:
    """Nesting deeper than :data:`MAX_JSON_DEPTH`, NUL characters and non-finite numbers
    anywhere in a Struct, Value or ListValue."""
    if _json_depth(value) > MAX_JSON_DEPTH:
        out.append(FieldViolation(path, JSON_TOO_DEEP))
        return
    found = 0
    pending: list[tuple[Message, str]] = [(value, path)]
    while pending and found < _MAX_JSON_VIOLATIONS:
        current, at = pending.pop()
        name = current.DESCRIPTOR.full_name
        problem = ""
        if name == "google.protobuf.Struct":
            for key in sorted(current.fields, reverse=True):  # type: ignore[attr-defined]
                entry = f"{at}[{_key_in_path(key)}]"
                if "\x00" in key:
                    out.append(FieldViolation(entry, "key must not contain NUL characters"))
                    found += 1
                pending.append((current.fields[key], entry))  # type: ignore[attr-defined]
        elif name == "google.protobuf.ListValue":
            values = current.values  # type: ignore[attr-defined]
            for index in range(len(values) - 1, -1, -1):
                pending.append((values[index], f"{at}[{index}]"))
        elif name == "google.protobuf.Value":
            which = current.WhichOneof("kind")
            if which == "number_value" and not math.isfinite(current.number_value):  # type: ignore[attr-defined]
                problem = "must be a finite number (no NaN or infinity)"
            elif which == "string_value" and "\x00" in current.string_value:  # type: ignore[attr-defined]
                problem = "must not contain NUL characters"
            elif which in ("struct_value", "list_value"):
                pending.append((getattr(current, which), at))
        if problem:
            out.append(FieldViolation(at, problem))
            found += 1


def _json_depth(value: Message) -> int:
    """Levels of objects (Structs) and arrays (ListValues) in free-form JSON, counted as its
    JSON text nests them (a Value is no level of its own)."""
    deepest = 0
    pending: list[tuple[Message, int]] = [(value, 0)]
    while pending:
        current, depth = pending.pop()
        name = current.DESCRIPTOR.full_name
        if name == "google.protobuf.Struct":
            depth += 1
            pending.extend((v, depth) for v in current.fields.values())  # type: ignore[attr-defined]
        elif name == "google.protobuf.ListValue":
            depth += 1
            pending.extend((v, depth) for v in current.values)  # type: ignore[attr-defined]
        elif name == "google.protobuf.Value":
            which = current.WhichOneof("kind")
            if which in ("struct_value", "list_value"):
                pending.append((getattr(current, which), depth))
        deepest = max(deepest, depth)
    return deepest


def _check_string(
    value: str, check: _ValueCheck, path: str, out: list[FieldViolation], what: str = ""
) -> None:
    if "\x00" in value:
        out.append(FieldViolation(path, f"{what}must not contain NUL characters"))
        return
    if len(value) > check.max_length:
        message = f"{what}must be at most {check.max_length} characters"
        out.append(FieldViolation(path, _with_hint(message, check.hint)))
        return
    if not value and not what:
        return
    # A map key is always there, so an empty one must match the key pattern too.
    if check.pattern is not None and check.pattern.fullmatch(value) is None:
        message = f"{what}must match {check.pattern.pattern}"
        out.append(FieldViolation(path, _with_hint(message, check.hint)))
    if check.absolute_path and not posixpath.isabs(value):
        out.append(FieldViolation(path, _with_hint(f"{what}must be an absolute path", check.hint)))
    elif check.absolute_path and ".." in value.split("/"):
        message = f"{what}must not contain '..' segments"
        out.append(FieldViolation(path, _with_hint(message, check.hint)))
    if check.not_credential and looks_like_credential(value):
        message = f"{what}looks like a credential; give a non-secret label"
        out.append(FieldViolation(path, _with_hint(message, check.hint)))


def _check_range(
    value: float, check: _ValueCheck, path: str, out: list[FieldViolation], unit: str
) -> None:
    if check.minimum is None and check.maximum is None:
        return
    too_low = check.minimum is not None and value < check.minimum
    too_high = check.maximum is not None and value > check.maximum
    if not (too_low or too_high or (isinstance(value, float) and math.isnan(value))):
        return
    if check.minimum is not None and check.maximum is not None:
        message = f"must be between {check.minimum}{unit} and {check.maximum}{unit}"
    elif check.minimum is not None:
        message = f"must be at least {check.minimum}{unit}"
    else:
        message = f"must be at most {check.maximum}{unit}"
    out.append(FieldViolation(path, _with_hint(message, check.hint)))


def _check_duration(value: Any, check: _ValueCheck, path: str, out: list[FieldViolation]) -> None:
    seconds, nanos = value.seconds, value.nanos
    if (
        abs(seconds) > _MAX_DURATION_SECONDS
        or abs(nanos) > 999_999_999
        or (seconds > 0 > nanos)
        or (seconds < 0 < nanos)
    ):
        out.append(FieldViolation(path, _with_hint("must be a valid duration", check.hint)))
        return
    total = seconds + nanos / 1e9
    floor = check.min_nonzero_millis
    if floor and total and abs(total) * 1000 < floor:
        message = f"must be 0 (not set) or at least {floor}ms"
        out.append(FieldViolation(path, _with_hint(message, check.hint)))
        return
    _check_range(total, check, path, out, unit="s")


def _check_timestamp(
    value: Any, check: _ValueCheck, path: str, out: list[FieldViolation], now: datetime
) -> None:
    seconds, nanos = value.seconds, value.nanos
    if not (_MIN_TIMESTAMP_SECONDS <= seconds <= _MAX_TIMESTAMP_SECONDS and 0 <= nanos < 10**9):
        out.append(FieldViolation(path, _with_hint("must be a valid RFC 3339 time", check.hint)))
        return
    if check.not_in_future:
        now_seconds = now.timestamp()
        if seconds + nanos / 1e9 > now_seconds:
            out.append(FieldViolation(path, _with_hint("must not be in the future", check.hint)))


def _too_many_bytes(path: str, check: _ValueCheck) -> FieldViolation:
    return FieldViolation(
        path, _with_hint(f"must be at most {check.max_bytes} bytes when serialized", check.hint)
    )


def _is_zero(value: Any, kind: _Kind) -> bool:
    if kind in (_Kind.STRING, _Kind.BYTES):
        return len(value) == 0
    if kind in (_Kind.NUMBER, _Kind.ENUM, _Kind.BOOL):
        return not value
    return False


def _key_in_path(key: object) -> str:
    text = str(key)
    if len(text) > _MAX_KEY_IN_PATH:
        return text[:_MAX_KEY_IN_PATH] + "…"
    return text


def _with_hint(message: str, hint: str) -> str:
    return f"{message} ({hint})" if hint else message
