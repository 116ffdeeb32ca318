"""Proto3 JSON ↔ messages, with bad input reported as :class:`InvalidArgument` naming the field.

The REST transcoder and the MCP tools both fill requests through :func:`parse_json_into`, so a
bad value answers the same field violation whichever door it came through. Conversion itself is
``google.protobuf.json_format``; only the checks it skips and the turning of its parse errors
into field violations (proto field paths, as the coordinator's validator names them) are
written here. The checks it skips: containers of the right kind (it lets ``[]`` pass as a
message), enum values that are exactly a declared name or number (it reads ``"SHIP\\u0000x"``
as ``SHIP``, ``2.5`` as 2 and wraps 4294967297 to 1), free-form JSON nested deeper than
:data:`~workcoord.kit.validation.MAX_JSON_DEPTH` (past it the coordinator could not decode the
request), and RFC 3339 offsets.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf import descriptor as _descriptor
from google.protobuf import json_format
from google.protobuf import message as _message

from workcoord.kit.descriptors import descriptor_of, field_named, is_map, is_well_known
from workcoord.kit.errors import FieldViolation, InvalidArgument
from workcoord.kit.validation import JSON_TOO_DEEP, MAX_JSON_DEPTH

__all__ = ["json_depth", "json_kind", "message_to_json", "parse_json_into"]

_DESCRIPTION_LIMIT = 200


def message_to_json(message: _message.Message, *, with_defaults: bool = False) -> dict[str, Any]:
    """``message`` in the proto3 JSON mapping (JSON names; defaults only when asked)."""
    return json_format.MessageToDict(
        message,
        preserving_proto_field_name=False,
        always_print_fields_with_no_presence=with_defaults,
    )


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, for error messages (``a string``, ``an array`` …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def parse_json_into(js: dict[str, Any], message: _message.Message) -> None:
    """Merge the proto3 JSON object ``js`` into ``message``; unknown fields are refused.

    Raises :class:`InvalidArgument` naming the offending field (proto names, ``items[0].key``).
    """
    try:
        # Text first: a key that is not valid Unicode cannot even be looked up as a field.
        text_error = _text_violation(js, descriptor_of(message), "")
    except RecursionError:
        # The text walk recurses; what nests this deep is refused whichever field it is in.
        raise InvalidArgument([], "request is nested too deeply") from None
    if text_error is not None:
        if not text_error.field:
            raise InvalidArgument([], f"request {text_error.description}")
        raise InvalidArgument([text_error])
    shape_error = _shape_violation(js, descriptor_of(message), "")
    if shape_error is not None:
        raise InvalidArgument([shape_error])
    try:
        json_format.ParseDict(js, message, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise InvalidArgument([_violation(str(exc), descriptor_of(message))]) from None
    except (ValueError, TypeError, RecursionError, OverflowError, AttributeError):
        # json_format lets a few raw errors through on odd shapes; never a 500 for bad input.
        raise InvalidArgument([], "request does not match the expected JSON shape") from None


def _text_violation(
    value: Any, descriptor: _descriptor.Descriptor | None, path: str
) -> FieldViolation | None:
    """The first string (value or object key) that is not valid Unicode: JSON's ``\\ud800``
    escape decodes to a lone surrogate, which no protobuf string, log line or error detail can
    carry. Named by its proto field path where the key is a field, else by the key as sent."""
    if isinstance(value, str):
        if _encodable(value):
            return None
        return FieldViolation(path, f"is not valid Unicode text: {_shown(value)}")
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _text_violation(item, descriptor, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if not isinstance(value, dict):
        return None
    for key, item in value.items():
        if isinstance(key, str) and not _encodable(key):
            return FieldViolation(path, f"has a key that is not valid Unicode text: {_shown(key)}")
        field = field_named(descriptor, key) if descriptor is not None else None
        name = field.name if field is not None else str(key)
        inner = field.message_type if field is not None and not is_map(field) else None
        if field is not None and is_map(field):
            # A map's values are named by the map field; its value type, when a message.
            entry = field.message_type.fields_by_name["value"] if field.message_type else None
            inner_map = entry.message_type if entry is not None else None
            found = _map_text_violation(item, inner_map, f"{path}.{name}" if path else name)
        else:
            found = _text_violation(item, inner, f"{path}.{name}" if path else name)
        if found is not None:
            return found
    return None


def _map_text_violation(
    value: Any, descriptor: _descriptor.Descriptor | None, path: str
) -> FieldViolation | None:
    if not isinstance(value, dict):
        return _text_violation(value, None, path)
    for key, item in value.items():
        if isinstance(key, str) and not _encodable(key):
            return FieldViolation(path, f"has a key that is not valid Unicode text: {_shown(key)}")
        found = _text_violation(item, descriptor, f"{path}[{key}]")
        if found is not None:
            return found
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(text: str) -> str:
    """``text`` with its lone surrogates escaped (``\\ud800``), cut short."""
    escaped = text[:40].encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    return escaped + ("…" if len(text) > 40 else "")


def _shape_violation(
    js: dict[str, Any], descriptor: _descriptor.Descriptor, prefix: str
) -> FieldViolation | None:
    """Objects where messages go, arrays where lists go, declared enum values, free-form JSON
    within :data:`MAX_JSON_DEPTH`: checked before json_format runs, which lets ``[]`` pass as a
    message and reads some bad enum values as good ones (other scalars are its business)."""
    for key, value in js.items():
        field = field_named(descriptor, key) if isinstance(key, str) else None
        if field is None or value is None:
            continue  # unknown fields are reported by json_format, with the same path
        path = f"{prefix}.{field.name}" if prefix else field.name
        message = field.message_type
        if is_map(field):
            if not isinstance(value, dict):
                return FieldViolation(path, f"must be a JSON object, got {json_kind(value)}")
            entry_value = message.fields_by_name["value"] if message is not None else None
            for entry_key, item in value.items():
                found = _leaf_violation(entry_value, item, f"{path}[{_shown(str(entry_key))}]")
                if found is not None:
                    return found
            continue
        if field.is_repeated:
            if not isinstance(value, list):
                return FieldViolation(path, f"must be a JSON array, got {json_kind(value)}")
            for index, item in enumerate(value):
                at = f"{path}[{index}]"
                if message is not None and not is_well_known(field):
                    found = _message_shape(item, message, at)
                else:
                    found = _leaf_violation(field, item, at)
                if found is not None:
                    return found
            continue
        found = _leaf_violation(field, value, path)
        if found is not None:
            return found
        if message is not None and message.full_name == _TIMESTAMP:
            if isinstance(value, str) and not _valid_offset(value):
                return FieldViolation(
                    path, "must be an RFC 3339 time whose offset is Z or within ±23:59"
                )
            continue
        if message is not None and not is_well_known(field):
            found = _message_shape(value, message, path)
            if found is not None:
                return found
    return None


_TIMESTAMP = "google.protobuf.Timestamp"
# The UTC offset ending an RFC 3339 time: json_format accepts +25:00 and +99:99 and shifts the
# time by them; RFC 3339 allows hours 00-23 and minutes 00-59 only.
_OFFSET = re.compile(r"(?:[zZ]|[+-](?P<hours>\d\d):(?P<minutes>\d\d))$")


def _valid_offset(text: str) -> bool:
    found = _OFFSET.search(text)
    if found is None or found.group("hours") is None:
        return found is not None
    return int(found.group("hours")) <= 23 and int(found.group("minutes")) <= 59


_FREE_FORM = frozenset(
    {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}
)


def _leaf_violation(
    field: _descriptor.FieldDescriptor | None, value: Any, path: str
) -> FieldViolation | None:
    """An enum value that is not exactly a declared one, or free-form JSON nested too deep."""
    if field is None or value is None:
        return None
    if field.enum_type is not None:
        return _enum_violation(field.enum_type, value, path)
    free_form = field.message_type is not None and field.message_type.full_name in _FREE_FORM
    if free_form and json_depth(value) > MAX_JSON_DEPTH:
        return FieldViolation(path, JSON_TOO_DEEP)
    return None


# A JSON enum number is an int32 (proto3 JSON); json_format wraps larger ones modulo 2**32.
_INT32 = range(-(2**31), 2**31)


def _enum_violation(
    enum: _descriptor.EnumDescriptor, value: Any, path: str
) -> FieldViolation | None:
    if isinstance(value, str):
        # Exactly a declared name: the descriptor's lookup, like json_format, reads a name cut
        # at a NUL ("SHIP\u0000x") as SHIP, so the name found must be the name given.
        declared = enum.values_by_name.get(value)
        known = declared is not None and declared.name == value
    elif isinstance(value, int) and not isinstance(value, bool):
        known = value in _INT32 and value in enum.values_by_number
    else:
        known = False  # json_format truncates 2.5 to 2 and reads true as 1
    if known:
        return None
    names = ", ".join(v.name for v in enum.values if v.number != 0)
    return FieldViolation(path, f"must be one of {names}")


def json_depth(value: Any) -> int:
    """Levels of objects and arrays in decoded JSON (a scalar is 0, ``{}`` and ``[]`` are 1),
    measured without recursion whatever the depth."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, dict):
            pending.extend((item, depth + 1) for item in current.values())
            depth += 1
        elif isinstance(current, list):
            pending.extend((item, depth + 1) for item in current)
            depth += 1
        deepest = max(deepest, depth)
    return deepest


def _message_shape(
    value: Any, descriptor: _descriptor.Descriptor, path: str
) -> FieldViolation | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        return FieldViolation(path, f"must be a JSON object, got {json_kind(value)}")
    return _shape_violation(value, descriptor, path)


# --- parse errors → field violations ---------------------------------------------------------

_UNKNOWN_FIELD = re.compile(r'has no field named "(?P<name>[^"]+)" at "(?P<at>[^"]*)"')
_FAILED_FIELD = re.compile(r"Failed to parse (?P<name>\S+) field: ")
_TRAILING_AT = re.compile(r"\s+at\s+\S+\.?$")


def _violation(text: str, root: _descriptor.Descriptor) -> FieldViolation:
    first_line = text.split("\n", 1)[0]
    unknown = _UNKNOWN_FIELD.search(first_line)
    if unknown is not None:
        parent = _proto_path(root, unknown.group("at").split(".")[1:])
        name = unknown.group("name")
        return FieldViolation(f"{parent}.{name}" if parent else name, "unknown field")
    names = _FAILED_FIELD.findall(first_line)
    inner = _FAILED_FIELD.sub("", first_line)
    inner = _TRAILING_AT.sub("", inner).rstrip(".").strip() or "invalid value"
    field = _proto_path(root, names) if names else ""
    return FieldViolation(field, f"invalid value: {inner[:_DESCRIPTION_LIMIT]}")


def _proto_path(root: _descriptor.Descriptor, segments: list[str]) -> str:
    """JSON-named path segments (``items[0]``) → proto names, as far as they resolve."""
    out: list[str] = []
    message: _descriptor.Descriptor | None = root
    for segment in segments:
        name, bracket, index = segment.partition("[")
        field = field_named(message, name) if message is not None else None
        out.append((field.name if field is not None else name) + (bracket + index))
        message = field.message_type if field is not None else None
    return ".".join(out)
