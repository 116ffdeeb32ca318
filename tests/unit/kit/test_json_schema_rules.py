"""The JSON Schemas state the limits the validator enforces, field by field, from the same rules.

For every API field with rules (and every numeric, string and Duration field, for the
validator's defaults), values at and past each bound are run through both the field's schema
and the server's own path (proto3 JSON parsing, then :func:`workcoord.kit.validation.validate`):
a value the schema accepts must be accepted by the server (a client following the document is
never refused for a limit it could not see), and a value past a bound must be refused by the
schema too. The cases come from the descriptors, so a new rule or field is covered as it lands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf import descriptor as _descriptor
from google.protobuf import json_format
from jsonschema import Draft202012Validator

from workcoord.api.v1 import field_rules_pb2
from workcoord.kit.descriptors import api_file_descriptors, is_map, is_output_only, message_class
from workcoord.kit.json_schema import SchemaBuilder, field_rules, is_required
from workcoord.kit.validation import DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING_LENGTH, validate

_FD = _descriptor.FieldDescriptor
NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
_DURATION = "google.protobuf.Duration"
_INT64 = {_FD.TYPE_INT64, _FD.TYPE_SINT64, _FD.TYPE_SFIXED64}
_INT32 = {_FD.TYPE_INT32, _FD.TYPE_SINT32, _FD.TYPE_SFIXED32}
_NUMBERS = {
    *_INT64,
    _FD.TYPE_INT32,
    _FD.TYPE_SINT32,
    _FD.TYPE_SFIXED32,
    _FD.TYPE_UINT32,
    _FD.TYPE_DOUBLE,
    _FD.TYPE_FLOAT,
}


def _messages() -> Iterator[_descriptor.Descriptor]:
    pending = [m for f in api_file_descriptors() for m in f.message_types_by_name.values()]
    while pending:
        message = pending.pop()
        pending.extend(n for n in message.nested_types if not n.GetOptions().map_entry)
        yield message


def _checked_fields() -> list[_FD]:
    """Singular input fields whose values the validator bounds (by a rule or a default)."""
    found = []
    for message in _messages():
        for field in message.fields:
            if field.is_repeated or is_output_only(field):
                continue
            duration = field.message_type is not None and field.message_type.full_name == _DURATION
            if duration or (field.message_type is None and field.enum_type is None):
                if field.type != _FD.TYPE_BOOL and field.type != _FD.TYPE_BYTES:
                    found.append(field)
            elif field.enum_type is not None and field_rules(field).required:
                found.append(field)
    return sorted(found, key=lambda f: f.full_name)


FIELDS = _checked_fields()


def _candidates(field: _FD) -> tuple[list[Any], list[Any]]:
    """(values to try, values past a bound the schema must refuse) in the proto3 JSON form."""
    rules = field_rules(field)
    required = is_required(field) and not field.has_presence
    if field.enum_type is not None:
        names = [v.name for v in field.enum_type.values]
        return names, [field.enum_type.values_by_number[0].name] if required else []
    if field.message_type is not None:
        return _duration_candidates(rules)
    if field.type in _NUMBERS:
        return _number_candidates(field, rules, required)
    return _string_candidates(rules, required)


def _duration_candidates(rules: field_rules_pb2.FieldRules) -> tuple[list[Any], list[Any]]:
    low, high = rules.min, rules.max
    tries: list[Any] = ["0s", "0.005s", "0.009s", "0.01s", "1s", "1.5s", "-1s", "59s", "60s"]
    tries += ["86400s", "86400.5s", "86401s", "2592000s", "2592000.5s", "2592001s"]
    bad: list[Any] = []
    if rules.has_min:
        tries += [f"{low}s", f"{low}.5s"]
        bad += [f"{low - 1}s", f"{low - 1}.999s"] if low > 0 else []
    if rules.has_max:
        tries += [f"{high}s", f"{high}.000000001s", f"{high + 1}s"]
        bad += [f"{high}.000000001s", f"{high + 1}s"]
    if rules.min_nonzero_millis:
        bad += [f"{(rules.min_nonzero_millis - 1) / 1000:.3f}s"]
    return tries, bad


def _number_candidates(
    field: _FD, rules: field_rules_pb2.FieldRules, required: bool
) -> tuple[list[Any], list[Any]]:
    tries: list[Any] = [0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32, 2**63]
    bad: list[Any] = [2**31, -(2**31) - 1] if field.type in _INT32 else []
    if rules.has_min:
        tries += [rules.min, rules.min - 1]
        bad.append(rules.min - 1)
    if rules.has_max:
        tries += [rules.max, rules.max + 1]
        bad.append(rules.max + 1)
    if required and not rules.has_min:
        bad.append(0)
    if field.type in _INT64:
        tries = [str(v) for v in tries] + ["007", "-0", "99999999999999999999"]
        bad = [str(v) for v in bad]
    elif field.type in {_FD.TYPE_DOUBLE, _FD.TYPE_FLOAT}:
        tries += [0.5, -0.5]
        bad = [rules.min - 0.5] if rules.has_min else []
        bad += [rules.max + 0.5] if rules.has_max else []
    return tries, bad


def _string_candidates(
    rules: field_rules_pb2.FieldRules, required: bool
) -> tuple[list[Any], list[Any]]:
    longest = rules.max_length or DEFAULT_MAX_STRING_LENGTH
    tries: list[Any] = ["", "a", "a\x00b", "/srv/w", "srv/w", "/srv/../w"]
    tries += ["x" * longest, "y" * (longest + 1)]
    bad: list[Any] = ["a\x00b", "y" * (longest + 1)]
    if rules.pattern:
        tries.append(_example(rules.pattern))
    if rules.absolute_path:
        bad += ["srv/w", "/srv/../w"]
    if required:
        bad.append("")
    return tries, bad


def _example(pattern: str) -> str:
    """A short string matching ``pattern``, for the patterns the protos use."""
    for guess in ("a", "a1", "wc_1", "2026-11-29", "machine", "acme/parser", "x@y.z", "ab"):
        if re.fullmatch(pattern, guess):
            return guess
    return "a"


def _server_accepts(field: _FD, value: Any) -> bool:
    """Whether the server takes ``value`` for ``field``: parsed as the transcoder would, then
    validated (only the violations naming this field count)."""
    assert field.containing_type is not None
    message = message_class(field.containing_type)()
    try:
        json_format.ParseDict({field.json_name: value}, message)
    except json_format.ParseError:
        return False
    return not [v for v in validate(message, NOW) if v.field == field.name]


@pytest.mark.parametrize("field", FIELDS, ids=lambda f: f.full_name)
def test_what_the_schema_accepts_the_server_accepts(field: _FD) -> None:
    schema = SchemaBuilder({}, ref_prefix="#/$defs/").field_schema(field)
    validator = Draft202012Validator(schema)
    tries, bad = _candidates(field)
    for value in tries:
        if validator.is_valid(value):
            assert _server_accepts(field, value), (value, schema)
    for value in bad:
        assert not _server_accepts(field, value), f"{value!r} is not past a bound"
        assert not validator.is_valid(value), (value, schema)


def test_the_candidates_cover_every_kind_of_bound() -> None:
    """Every rule the protos state on a singular field is tried by the test above."""
    stated = {
        name
        for field in FIELDS
        for name in ("has_min", "has_max", "max_length", "min_nonzero_millis", "absolute_path")
        if getattr(field_rules(field), name)
    }
    assert stated == {"has_min", "has_max", "max_length", "min_nonzero_millis", "absolute_path"}
    assert len(FIELDS) > 100


def _containers() -> list[_FD]:
    return sorted(
        (f for m in _messages() for f in m.fields if f.is_repeated and not is_output_only(f)),
        key=lambda f: f.full_name,
    )


@pytest.mark.parametrize("field", _containers(), ids=lambda f: f.full_name)
def test_lists_and_maps_state_their_entry_limits(field: _FD) -> None:
    rules = field_rules(field)
    schema = SchemaBuilder({}, ref_prefix="#/$defs/").field_schema(field)
    noun = "Properties" if is_map(field) else "Items"
    assert schema[f"max{noun}"] == (rules.max_items or DEFAULT_MAX_ITEMS)
    assert schema.get(f"min{noun}") == (1 if rules.required else None)


def test_required_fields_are_listed_in_every_message() -> None:
    builder = SchemaBuilder({}, ref_prefix="#/$defs/", required_everywhere=True)
    for message in _messages():
        schema = builder.message_schema(message)
        expected = [f.json_name for f in message.fields if is_required(f)]
        assert schema.get("required", []) == expected, message.full_name
    # Declared required, and required because an unsent 0 is out of bounds.
    lease = next(m for m in _messages() if m.full_name == "workcoord.api.v1.LeaseRequest")
    assert builder.message_schema(lease)["required"] == [
        "coordinatorId",
        "workerId",
        "workerClass",
        "maxItems",
        "leaseSeconds",
    ]


def test_the_rule_kinds_are_all_known() -> None:
    """A new kind of rule in field_rules.proto must be given a place in the schemas (and in
    this test): the schema builder knows exactly these."""
    assert {f.name for f in field_rules_pb2.FieldRules.DESCRIPTOR.fields} == {
        "required",
        "min",
        "max",
        "has_min",
        "has_max",
        "max_length",
        "pattern",
        "max_items",
        "max_bytes",
        "absolute_path",
        "not_in_future",
        "description",
        "not_credential",
        "min_nonzero_millis",
    }
