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
from workcoord.kit.validation import rules_for

__all__ = [
    "ANY_SCHEMA",
    "ANY_SCHEMA_NAME",
    "QUERYABLE_WELL_KNOWN",
    "WELL_KNOWN",
    "SchemaBuilder",
    "field_rules",
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
_INT64_PATTERN = "^-?[0-9]+$"
_UINT64_PATTERN = "^[0-9]+$"
_DURATION_PATTERN = r"^-?[0-9]+(\.[0-9]+)?s$"

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
    "google.protobuf.Int32Value": {"type": "integer", "format": "int32"},
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
            if listing_required and field_rules(field).required:
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
            self._apply_value_rules(values, field, value_field)
            schema: dict[str, Any] = {"type": "object", "additionalProperties": values}
            rules = field_rules(field)
            if rules.max_items:
                schema["maxProperties"] = rules.max_items
            if rules.pattern:
                schema["description"] = f"Keys match {_anchor(rules.pattern)}."
        elif field.is_repeated:
            items = self._single_schema(field)
            self._apply_value_rules(items, field, field)
            schema = {"type": "array", "items": items}
            self.apply_list_rules(schema, field)
        else:
            schema = self._single_schema(field)
            self._apply_value_rules(schema, field, field)
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
            schema = {"type": "integer", "format": "int32"}
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
            self._apply_value_rules(schema, field, field)
        return schema

    def _apply_value_rules(self, schema: dict[str, Any], owner: _FD, value: _FD) -> None:
        """Limits of one value (a scalar, a list element, a map value) from ``owner``'s rules."""
        rules = field_rules(owner)
        kind = schema.get("type")
        if kind in {"integer", "number"}:
            if rules.has_min:
                schema["minimum"] = max(rules.min, schema.get("minimum", rules.min))
            if rules.has_max:
                schema["maximum"] = min(rules.max, schema.get("maximum", rules.max))
        elif kind == "string" and value.message_type is None and not is_map(owner):
            if rules.max_length:
                schema["maxLength"] = rules.max_length
            if rules.pattern and value.type == _FD.TYPE_STRING:
                schema["pattern"] = _anchor(rules.pattern)
        hints = []
        if (rules.has_min or rules.has_max) and kind == "string":
            unit = " seconds" if _is_duration(value) else ""
            if rules.has_min and rules.has_max:
                hints.append(f"Between {rules.min} and {rules.max}{unit}.")
            elif rules.has_min:
                hints.append(f"At least {rules.min}{unit}.")
            else:
                hints.append(f"At most {rules.max}{unit}.")
        if rules.absolute_path:
            hints.append("An absolute POSIX path.")
        if rules.not_in_future:
            hints.append("Not in the future.")
        if rules.max_bytes:
            hints.append(f"At most {rules.max_bytes} bytes serialized.")
        if hints and "$ref" not in schema:
            schema["description"] = " ".join([schema.get("description", ""), *hints]).strip()

    def apply_list_rules(self, schema: dict[str, Any], field: _FD) -> None:
        """``maxItems`` of a repeated field."""
        rules = field_rules(field)
        if rules.max_items:
            schema["maxItems"] = rules.max_items

    def describe(self, target: dict[str, Any], field: _FD) -> None:
        """Prefix ``target``'s description with the field's comment and rule description."""
        parts = [self.comments.get(field.full_name, ""), field_rules(field).description]
        if field_rules(field).required:
            parts.append("Required.")
        text = " ".join(p for p in parts if p).strip()
        if text:
            existing = target.get("description", "")
            target["description"] = f"{text} {existing}".strip() if existing else text


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


def _is_duration(field: _FD) -> bool:
    return (
        field.message_type is not None
        and field.message_type.full_name == "google.protobuf.Duration"
    )
