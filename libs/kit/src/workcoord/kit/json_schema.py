"""JSON Schemas of API messages in the proto3 JSON mapping, derived from their descriptors.

One builder serves the OpenAPI document (components under ``#/components/schemas/``) and the MCP
tool input schemas (``$defs``), so both publish the same shapes and limits: OUTPUT_ONLY fields
are ``readOnly`` (or left out of input-only schemas), the ``workcoord.api.v1.rules`` limits become
``minimum``/``maximum``/``maxLength``/``pattern``/``maxItems``, descriptions come from the proto
comments, and message schemas refuse unknown properties, as the transcoder does.

The keywords used are common to OpenAPI 3.0's schema dialect and JSON Schema 2020-12 (no
``propertyNames``: key patterns of map fields are only described).

Hand-written: no maintained Python library turns protobuf descriptors into JSON Schema with our
own field rules (protoc-gen-jsonschema / protoc-gen-openapiv2 are Go protoc plugins).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor as _descriptor

from workcoord.api.v1 import field_rules_pb2
from workcoord.kit.descriptors import API_PACKAGE, is_map, is_output_only
from workcoord.kit.validation import DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING_LENGTH, rules_for

__all__ = [
    "ANY_SCHEMA",
    "ANY_SCHEMA_NAME",
    "QUERYABLE_WELL_KNOWN",
    "WELL_KNOWN",
    "SchemaBuilder",
    "field_rules",
    "is_required",
    "schema_name",
]

_FD = _descriptor.FieldDescriptor
ANY_SCHEMA_NAME = "GoogleProtobufAny"
ANY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A detail message (google.rpc.ErrorInfo, BadRequest, …) named by @type.",
    "properties": {"@type": {"type": "string"}},
    "required": ["@type"],
    "additionalProperties": True,
}
# 64-bit integers are JSON strings. Their patterns stop at 18 digits, which every int64 holds
# (19 would let 9223372036854775808 through, refused when parsed); ids and revisions are
# far shorter. Canonical decimals only: no sign on zero, no leading zeros.
_MAX_DIGITS = 18
_INT64_PATTERN = r"^(?:0|-?[1-9][0-9]{0,17})$"
_UINT64_PATTERN = r"^(?:0|[1-9][0-9]{0,17})$"
_DURATION_PATTERN = r"^-?[0-9]+(\.[0-9]+)?s$"
# The proto3 JSON mapping refuses what does not fit the type (json_format's range checks), and
# duration.proto bounds a Duration to about ±10,000 years.
_INT32: dict[str, Any] = {
    "type": "integer",
    "format": "int32",
    "minimum": -(2**31),
    "maximum": 2**31 - 1,
}
_INT64_RANGE = (-(2**63), 2**63 - 1)
_UINT64_RANGE = (0, 2**64 - 1)
_MAX_DURATION_SECONDS = 315_576_000_000
_NO_NUL = r"^[^\u0000]*$"
# An absolute POSIX path without NUL and without a ".." segment (a segment is empty, ".", or
# any other run of non-slashes: one starting with a non-dot, with a dot and a non-dot, or "..x").
_SEGMENT = r"(?:|\.|[^/.\u0000][^/\u0000]*|\.[^/.\u0000][^/\u0000]*|\.\.[^/\u0000]+)"
_ABSOLUTE_PATH = f"^/{_SEGMENT}(?:/{_SEGMENT})*$"
_FRACTION = r"(?:\.[0-9]{1,9})?"
_ZERO_FRACTION = r"(?:\.0{1,9})?"

# Scalars whose zero is an ordinary value whatever the bounds (bounds only apply to numbers).
_ZERO_IS_VALUE = {_FD.TYPE_STRING, _FD.TYPE_BYTES, _FD.TYPE_BOOL}
_INT32_TYPES = {_FD.TYPE_INT32, _FD.TYPE_SINT32, _FD.TYPE_SFIXED32}
_UINT32_TYPES = {_FD.TYPE_UINT32, _FD.TYPE_FIXED32}
_INT64_TYPES = {_FD.TYPE_INT64, _FD.TYPE_SINT64, _FD.TYPE_SFIXED64}
_UINT64_TYPES = {_FD.TYPE_UINT64, _FD.TYPE_FIXED64}

_WRAPPERS: dict[str, dict[str, Any]] = {
    "google.protobuf.DoubleValue": {"type": "number", "format": "double"},
    "google.protobuf.FloatValue": {"type": "number", "format": "float"},
    "google.protobuf.Int64Value": {"type": "string", "format": "int64", "pattern": _INT64_PATTERN},
    "google.protobuf.UInt64Value": {
        "type": "string",
        "format": "uint64",
        "pattern": _UINT64_PATTERN,
    },
    "google.protobuf.Int32Value": _INT32,
    "google.protobuf.UInt32Value": {"type": "integer", "format": "int64", "minimum": 0},
    "google.protobuf.BoolValue": {"type": "boolean"},
    "google.protobuf.StringValue": {"type": "string"},
    "google.protobuf.BytesValue": {"type": "string", "format": "byte"},
}

# Well-known types with a JSON form of their own (proto3 JSON mapping). Any is a reference,
# resolved against the builder's prefix.
WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string", "pattern": _DURATION_PATTERN},
    "google.protobuf.FieldMask": {
        "type": "string",
        "description": "Comma-separated field paths (JSON or proto names).",
    },
    "google.protobuf.Struct": {"type": "object", "additionalProperties": True},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array", "items": {}},
    "google.protobuf.Empty": {"type": "object", "additionalProperties": False},
    **_WRAPPERS,
}
_ANY = "google.protobuf.Any"
# Message types a query parameter can carry as one string.
QUERYABLE_WELL_KNOWN = frozenset(
    {
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.FieldMask",
        *_WRAPPERS,
    }
)


class SchemaBuilder:
    """Schemas of messages and fields; referenced messages collect in :attr:`schemas`.

    ``ref_prefix``: where references point (``#/components/schemas/`` or ``#/$defs/``).
    ``input_only``: leave OUTPUT_ONLY fields out instead of marking them ``readOnly``.
    ``required_everywhere``: list required fields in every message schema; otherwise only in
    the messages named by :meth:`mark_request` (resources are also PATCH bodies, where any subset
    may be sent).
    """

    def __init__(
        self,
        comments: dict[str, str],
        *,
        ref_prefix: str,
        input_only: bool = False,
        required_everywhere: bool = False,
    ) -> None:
        self.comments = comments
        self.ref_prefix = ref_prefix
        self.input_only = input_only
        self.required_everywhere = required_everywhere
        self.schemas: dict[str, dict[str, Any]] = {}
        self._request_types: set[str] = set()

    def mark_request(self, message: _descriptor.Descriptor) -> None:
        """Treat ``message`` as a request: its schema lists its required fields."""
        self._request_types.add(message.full_name)

    def ref(self, message: _descriptor.Descriptor) -> dict[str, Any]:
        """A reference to ``message``'s schema (built on first use), or a well-known type's."""
        if message.full_name in WELL_KNOWN:
            return dict(WELL_KNOWN[message.full_name])
        if message.full_name == _ANY:
            self.schemas[ANY_SCHEMA_NAME] = ANY_SCHEMA
            return {"$ref": self.ref_prefix + ANY_SCHEMA_NAME}
        name = schema_name(message)
        if name not in self.schemas:
            self.schemas[name] = {}  # placeholder: breaks recursion
            self.schemas[name] = self.message_schema(message)
        return {"$ref": self.ref_prefix + name}

    def message_schema(
        self, message: _descriptor.Descriptor, *, exclude: frozenset[str] = frozenset()
    ) -> dict[str, Any]:
        """The inline schema of ``message`` without the fields named in ``exclude``."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        listing_required = self.required_everywhere or message.full_name in self._request_types
        for field in message.fields:
            if field.name in exclude or (self.input_only and is_output_only(field)):
                continue
            properties[field.json_name] = self.field_schema(field)
            if listing_required and is_required(field):
                required.append(field.json_name)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        if required:
            schema["required"] = required
        comment = self.comments.get(message.full_name, "")
        if comment:
            schema["description"] = comment
        return schema

    def field_schema(self, field: _FD) -> dict[str, Any]:
        """The schema of one field: map, list or single value, with its limits and comment."""
        if is_map(field):
            assert field.message_type is not None
            value_field = field.message_type.fields_by_name["value"]
            values = self._single_schema(value_field)
            # As the validator reads them: string rules are for a string map's values, and for
            # the keys of any other map (which OpenAPI 3.0 cannot constrain, only describe).
            self._apply_value_rules(values, field, value_field)
            schema: dict[str, Any] = {"type": "object", "additionalProperties": values}
            self.apply_list_rules(schema, field)
            pattern = field_rules(field).pattern
            if pattern and value_field.type != _FD.TYPE_STRING:
                schema["description"] = f"Keys match {_anchor(pattern)}."
        elif field.is_repeated:
            items = self._single_schema(field)
            self._apply_value_rules(items, field, field)
            schema = {"type": "array", "items": items}
            self.apply_list_rules(schema, field)
        else:
            schema = self._single_schema(field)
            self._apply_value_rules(schema, field, field, single=True)
        if is_output_only(field):
            schema["readOnly"] = True
        self.describe(schema, field)
        if "$ref" in schema and len(schema) > 1:
            # OpenAPI 3.0 ignores siblings of $ref: wrap so readOnly/description hold.
            ref = schema.pop("$ref")
            schema = {"allOf": [{"$ref": ref}], **schema}
        return schema

    def _single_schema(self, field: _FD) -> dict[str, Any]:
        if field.message_type is not None:
            return self.ref(field.message_type)
        return self.scalar_schema(field, apply_rules=False)

    def scalar_schema(self, field: _FD, *, apply_rules: bool) -> dict[str, Any]:
        """The schema of one value of a non-message field (or of a string-shaped well-known
        type), with the field's limits when ``apply_rules``."""
        kind = field.type
        schema: dict[str, Any]
        if field.message_type is not None:
            wkt = WELL_KNOWN.get(field.message_type.full_name)
            schema = dict(wkt) if wkt is not None else {"type": "string"}
        elif field.enum_type is not None:
            schema = {"type": "string", "enum": [v.name for v in field.enum_type.values]}
        elif kind in _INT32_TYPES:
            schema = dict(_INT32)
        elif kind in _UINT32_TYPES:
            schema = {"type": "integer", "format": "int64", "minimum": 0, "maximum": 2**32 - 1}
        elif kind in _INT64_TYPES:
            schema = {"type": "string", "format": "int64", "pattern": _INT64_PATTERN}
        elif kind in _UINT64_TYPES:
            schema = {"type": "string", "format": "uint64", "pattern": _UINT64_PATTERN}
        elif kind == _FD.TYPE_DOUBLE:
            schema = {"type": "number", "format": "double"}
        elif kind == _FD.TYPE_FLOAT:
            schema = {"type": "number", "format": "float"}
        elif kind == _FD.TYPE_BOOL:
            schema = {"type": "boolean"}
        elif kind == _FD.TYPE_BYTES:
            schema = {"type": "string", "format": "byte"}
        else:
            schema = {"type": "string"}
        if apply_rules:
            self._apply_value_rules(schema, field, field, single=not field.is_repeated)
        return schema

    def _apply_value_rules(
        self, schema: dict[str, Any], owner: _FD, value: _FD, *, single: bool = False
    ) -> None:
        """Limits of one value (a scalar, a list element, a map value) from ``owner``'s rules
        and the validator's defaults; ``single``: the value is the field itself, so a
        ``required`` rule also refuses its zero value (when the field has no presence)."""
        rules = field_rules(owner)
        leaf = _leaf(value)
        kind = schema.get("type")
        nonzero = single and rules.required and not value.has_presence
        if "enum" in schema:
            if nonzero and leaf.enum_type is not None:
                schema["enum"] = [v.name for v in leaf.enum_type.values if v.number != 0]
        elif kind in {"integer", "number"}:
            if rules.has_min:
                schema["minimum"] = max(rules.min, schema.get("minimum", rules.min))
            if rules.has_max:
                schema["maximum"] = min(rules.max, schema.get("maximum", rules.max))
            if nonzero and schema.get("minimum", 0) <= 0 <= schema.get("maximum", 0):
                schema["not"] = {"enum": [0]}
        elif _is_duration(value):
            pattern = _duration_pattern(rules)
            if pattern is not None:
                schema["pattern"] = pattern
        elif kind == "string" and leaf.type in _INT64_TYPES | _UINT64_TYPES:
            if rules.has_min or rules.has_max:
                low, high = _INT64_RANGE if leaf.type in _INT64_TYPES else _UINT64_RANGE
                low = max(low, rules.min) if rules.has_min else low
                high = min(high, rules.max) if rules.has_max else high
                schema["pattern"] = _integer_pattern(low, high)
        elif kind == "string" and leaf.type == _FD.TYPE_STRING and leaf.message_type is None:
            schema["maxLength"] = rules.max_length or DEFAULT_MAX_STRING_LENGTH
            # The validator refuses NUL in every string (PostgreSQL cannot store it).
            if rules.pattern:
                schema["pattern"] = _anchor(rules.pattern)
            else:
                schema["pattern"] = _ABSOLUTE_PATH if rules.absolute_path else _NO_NUL
            if nonzero:
                schema["minLength"] = 1
        hints = []
        if (rules.has_min or rules.has_max) and kind == "string":
            unit = " seconds" if _is_duration(value) else ""
            if rules.has_min and rules.has_max:
                hints.append(f"Between {rules.min} and {rules.max}{unit}.")
            elif rules.has_min:
                hints.append(f"At least {rules.min}{unit}.")
            else:
                hints.append(f"At most {rules.max}{unit}.")
        if rules.min_nonzero_millis and _is_duration(value):
            hints.append(f"0 (not set) or at least {rules.min_nonzero_millis} ms.")
        if rules.absolute_path:
            hints.append("An absolute POSIX path.")
        if rules.not_in_future:
            hints.append("Not in the future.")
        if rules.max_bytes:
            hints.append(f"At most {rules.max_bytes} bytes serialized.")
        if hints and "$ref" in schema:
            # OpenAPI 3.0 ignores siblings of $ref: wrap it so the description holds.
            schema["allOf"] = [{"$ref": schema.pop("$ref")}]
        if hints:
            schema["description"] = " ".join([schema.get("description", ""), *hints]).strip()

    def apply_list_rules(self, schema: dict[str, Any], field: _FD) -> None:
        """The entry limits of a repeated or map field (``schema`` is its array or object):
        at most ``max_items`` (or the validator's default), at least one when required."""
        rules = field_rules(field)
        noun = "Properties" if schema.get("type") == "object" else "Items"
        schema[f"max{noun}"] = rules.max_items or DEFAULT_MAX_ITEMS
        if rules.required:
            schema[f"min{noun}"] = 1

    def describe(self, target: dict[str, Any], field: _FD) -> None:
        """Prefix ``target``'s description with the field's comment and rule description."""
        parts = [self.comments.get(field.full_name, ""), field_rules(field).description]
        if field_rules(field).required:
            parts.append("Required.")
        text = " ".join(p for p in parts if p).strip()
        if text:
            existing = target.get("description", "")
            target["description"] = f"{text} {existing}".strip() if existing else text


def is_required(field: _FD) -> bool:
    """Whether a request must send ``field``: its rules say ``required``, or it is a scalar
    without presence whose zero value is out of its bounds (the validator checks such a field
    whether sent or not, and an unsent one reads as zero)."""
    rules = field_rules(field)
    if rules.required:
        return True
    if field.is_repeated or field.has_presence or field.message_type is not None:
        return False
    if field.enum_type is not None or field.type in _ZERO_IS_VALUE:
        return False
    return (rules.has_min and rules.min > 0) or (rules.has_max and rules.max < 0)


def schema_name(message: _descriptor.Descriptor) -> str:
    """The component name of a message: its full name without the API package."""
    prefix = API_PACKAGE + "."
    name = message.full_name
    return name[len(prefix) :] if name.startswith(prefix) else name


def field_rules(field: _FD) -> field_rules_pb2.FieldRules:
    """The field's ``workcoord.api.v1.rules`` (empty rules when it states none)."""
    return rules_for(field) or _NO_RULES


_NO_RULES = field_rules_pb2.FieldRules()


def _anchor(pattern: str) -> str:
    return f"^(?:{pattern})$"


def _leaf(field: _FD) -> _FD:
    """The field holding the value: a wrapper type's ``value``, else ``field`` itself."""
    message = field.message_type
    if message is not None and message.full_name in _WRAPPERS:
        inner: _FD = message.fields_by_name["value"]
        return inner
    return field


def _duration_pattern(rules: field_rules_pb2.FieldRules) -> str | None:
    """A pattern of the Duration JSON strings within ``rules``' bounds (in seconds, and the
    shortest non-zero length), in canonical form; None when unbounded or bounded below zero
    (the generic pattern and the description then stand)."""
    if not (rules.has_min or rules.has_max or rules.min_nonzero_millis):
        return None
    low = rules.min if rules.has_min else -_MAX_DURATION_SECONDS
    high = min(rules.max, _MAX_DURATION_SECONDS) if rules.has_max else _MAX_DURATION_SECONDS
    if low < 0 or high < low:
        return None
    options = []
    if rules.min_nonzero_millis and low == 0:
        options.append("0" + _ZERO_FRACTION)  # zero: "not set"
    whole, millis = divmod(max(low * 1000, rules.min_nonzero_millis), 1000)
    if millis:
        if whole < high:
            options.append(rf"{whole}\.{_fraction_at_least(millis)}")
        whole += 1
    if whole < high:
        options.append(f"(?:{_integer_range(whole, high - 1)}){_FRACTION}")
    if whole <= high:
        options.append(f"{high}{_ZERO_FRACTION}")  # the maximum itself, not a nanosecond more
    return "^(?:" + "|".join(options) + ")s$"


def _fraction_at_least(millis: int) -> str:
    """The digits after a decimal point worth at least ``millis`` thousandths (1 to 999)."""
    options = []
    for width in (1, 2):
        least = -(-millis // 10 ** (3 - width))
        if least < 10**width:
            options.append(_same_length(str(least).zfill(width), "9" * width))
    options.append(f"(?:{_same_length(str(millis).zfill(3), '999')})[0-9]{{0,6}}")
    return "(?:" + "|".join(options) + ")"


def _integer_pattern(low: int, high: int) -> str:
    """A pattern of the decimal integers from ``low`` to ``high``, without leading zeros (and
    of at most 18 digits, see ``_INT64_PATTERN``)."""
    largest = 10**_MAX_DIGITS - 1
    low, high = max(low, -largest), min(high, largest)
    options = []
    if low < 0:
        options.append(f"-(?:{_integer_range(max(1, -high), -low)})")
    if high >= 0:
        options.append(_integer_range(max(0, low), high))
    return "^(?:" + "|".join(options) + ")$"


def _integer_range(low: int, high: int) -> str:
    """Alternatives matching the integers ``low``..``high`` (both >= 0), no leading zeros."""
    options = []
    full: list[int] = []  # digit counts whose every number is in range: one alternative
    for digits in range(len(str(low)), len(str(high)) + 1):
        start = max(low, 10 ** (digits - 1) if digits > 1 else 0)
        end = min(high, 10**digits - 1)
        if digits > 1 and start == 10 ** (digits - 1) and end == 10**digits - 1:
            full.append(digits - 1)
            continue
        if full:
            options.append(_full_lengths(full))
            full = []
        options.append(_same_length(str(start), str(end)))
    if full:
        options.append(_full_lengths(full))
    return "|".join(options)


def _full_lengths(rests: list[int]) -> str:
    low, high = rests[0], rests[-1]
    return "[1-9]" + (_any_digits(low) if low == high else f"[0-9]{{{low},{high}}}")


def _same_length(low: str, high: str) -> str:
    """Alternatives matching the digit strings of ``low``'s length from ``low`` to ``high``."""
    if low == high:
        return low
    rest = len(low) - 1
    if low[0] == high[0]:
        return f"{low[0]}(?:{_same_length(low[1:], high[1:])})"
    # low's first digit with the rest from low up, the digits between with any rest, then
    # high's first digit with the rest up to high; an end whose rest is all 0s (low) or all
    # 9s (high) joins the digits between.
    low_whole = low[1:] == "0" * rest
    high_whole = high[1:] == "9" * rest
    options = [] if low_whole else [f"{low[0]}(?:{_same_length(low[1:], '9' * rest)})"]
    first = int(low[0]) + (0 if low_whole else 1)
    last = int(high[0]) - (0 if high_whole else 1)
    if first <= last:
        options.append(_digit_between(str(first), str(last)) + _any_digits(rest))
    if not high_whole:
        options.append(f"{high[0]}(?:{_same_length('0' * rest, high[1:])})")
    return "|".join(options)


def _digit_between(low: str, high: str) -> str:
    return low if low == high else f"[{low}-{high}]"


def _any_digits(count: int) -> str:
    return "" if count == 0 else "[0-9]" if count == 1 else f"[0-9]{{{count}}}"


def _is_duration(field: _FD) -> bool:
    return (
        field.message_type is not None
        and field.message_type.full_name == "google.protobuf.Duration"
    )
