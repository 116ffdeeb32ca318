"""The OpenAPI 3.0.3 document, derived from the route table and the message descriptors.

One operation per route (``operationId`` ``Service_Method``), path parameters by JSON name,
query parameters for the request fields neither the path nor the body binds, and a component
schema per reachable message in the proto3 JSON mapping. OUTPUT_ONLY fields are ``readOnly``;
the ``workcoord.api.v1.rules`` limits are published as ``minimum``/``maximum``/``maxLength``/
``pattern``/``maxItems``. Message schemas refuse unknown properties, as the gateway does.

3.0.3 rather than 3.1: it is what most generators and fuzzers (schemathesis) handle best. Its
schema dialect has no ``propertyNames``, so key patterns of map fields are only described.

Comments come from a ``descriptor_set.binpb`` (a ``FileDescriptorSet`` with source info) next
to the generated modules when one is shipped; the generated modules themselves carry no
comments, so summaries fall back to the method names.

Hand-written: no maintained Python library turns protobuf descriptors into OpenAPI
(protoc-gen-openapiv2 / gnostic are Go protoc plugins working at build time).
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import re
from collections.abc import Sequence
from typing import Any

from google.api import field_behavior_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import descriptor_pb2

from workcoord.api.v1 import field_rules_pb2
from workcoord.gateway.routes import Route, RouteTable, api_file_descriptors
from workcoord.kit.validation import rules_for
from workcoord.kit.wire import API_PACKAGE

__all__ = ["build_openapi", "openapi_document"]

_log = logging.getLogger(__name__)

_FD = _descriptor.FieldDescriptor
_REF = "#/components/schemas/"
_STATUS = "Status"
_ANY = "GoogleProtobufAny"
_QUERY_DEPTH = 3
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

# Well-known types with a JSON form of their own (proto3 JSON mapping).
_WELL_KNOWN: dict[str, dict[str, Any]] = {
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
    "google.protobuf.Any": {"$ref": _REF + _ANY},
    **_WRAPPERS,
}
# Message types a query parameter can carry as one string.
_QUERYABLE_WKT = {
    "google.protobuf.Timestamp",
    "google.protobuf.Duration",
    "google.protobuf.FieldMask",
    *_WRAPPERS,
}


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document for the v1 route table (built once; it is static)."""
    from workcoord.gateway.routes import load_routes

    return build_openapi(load_routes())


def build_openapi(table: RouteTable, *, title: str = "workcoord API") -> dict[str, Any]:
    """Build the OpenAPI 3.0.3 document of ``table``."""
    builder = _Builder(_load_comments())
    paths: dict[str, dict[str, Any]] = {}
    for route in sorted(table.routes, key=lambda r: (r.path, r.http_method)):
        verb = route.http_method.lower()
        if verb not in {"get", "put", "post", "delete", "options", "head", "patch", "trace"}:
            _log.warning("no OpenAPI operation for custom verb %s %s", verb, route.path)
            continue
        paths.setdefault(route.path, {})[verb] = builder.operation(route)
    schemas = dict(sorted(builder.schemas.items()))
    schemas[_STATUS] = {
        "type": "object",
        "description": "google.rpc.Status: the error answer of every failed call.",
        "properties": {
            "code": {"type": "integer", "format": "int32"},
            "message": {"type": "string"},
            "details": {"type": "array", "items": {"$ref": _REF + _ANY}},
        },
        "required": ["code", "message"],
    }
    schemas[_ANY] = {
        "type": "object",
        "description": "A detail message (google.rpc.ErrorInfo, BadRequest, …) named by @type.",
        "properties": {"@type": {"type": "string"}},
        "required": ["@type"],
        "additionalProperties": True,
    }
    tags = [
        {"name": name, **({"description": text} if text else {})}
        for name, text in sorted(builder.tags.items())
    ]
    return {
        "openapi": "3.0.3",
        "info": {
            "title": title,
            "version": "v1",
            "description": (
                "REST transcoding of the workcoord gRPC API (google.api.http rules). Errors are "
                "google.rpc.Status JSON. Authenticate with `Authorization: Bearer <secret>`."
            ),
        },
        "tags": tags,
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


class _Builder:
    def __init__(self, comments: dict[str, str]) -> None:
        self.comments = comments
        self.schemas: dict[str, dict[str, Any]] = {}
        self.tags: dict[str, str] = {}
        self._request_types: set[str] = set()

    # --- operations ----------------------------------------------------------------------

    def operation(self, route: Route) -> dict[str, Any]:
        method = route.method
        service = method.containing_service
        self.tags.setdefault(service.name, self.comments.get(service.full_name, ""))
        request = method.input_type
        self._request_types.add(request.full_name)
        comment = self.comments.get(method.full_name, "")
        operation: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": comment.split("\n", 1)[0].strip() or method.name,
            "tags": [service.name],
        }
        if comment:
            operation["description"] = comment
        parameters = [self._path_parameter(request, field) for field in route.path_fields]
        if route.body != "*":
            parameters.extend(self._query_parameters(route))
        if parameters:
            operation["parameters"] = parameters
        if route.body:
            operation["requestBody"] = {
                "required": route.body != "*" or self._has_required(request, route),
                "content": {"application/json": {"schema": self._body_schema(route)}},
            }
        if route.streaming:
            operation["description"] = (
                (comment + "\n\n" if comment else "")
                + "A WebSocket: open it with an HTTP upgrade. Each frame is one "
                + f"{method.output_type.name} as JSON with `type` naming the frame present."
            )
            operation["responses"] = {
                "101": {"description": "Switching to the WebSocket protocol."},
                "default": _error_response(),
            }
            return operation
        operation["responses"] = {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": self._response_schema(route)}},
            },
            "default": _error_response(),
        }
        return operation

    def _has_required(self, request: _descriptor.Descriptor, route: Route) -> bool:
        return any(
            _rules(field).required
            for field in request.fields
            if field.name not in {p.split(".")[0] for p in route.path_fields}
        )

    def _path_parameter(self, request: _descriptor.Descriptor, field_path: str) -> dict[str, Any]:
        chain = _chain(request, field_path)
        leaf = chain[-1]
        schema = self._scalar_schema(leaf, apply_rules=True)
        if schema.get("type") != "string":
            # Path segments are strings on the wire whatever the field type.
            schema = {"type": "string"}
        parameter: dict[str, Any] = {
            "name": ".".join(f.json_name for f in chain),
            "in": "path",
            "required": True,
            "schema": schema,
        }
        self._describe(parameter, leaf)
        return parameter

    def _query_parameters(self, route: Route) -> list[dict[str, Any]]:
        bound = set(route.path_fields)
        parameters: list[dict[str, Any]] = []

        def visit(message: _descriptor.Descriptor, prefix: list[_FD], depth: int) -> None:
            for field in message.fields:
                chain = [*prefix, field]
                proto_path = ".".join(f.name for f in chain)
                if proto_path in bound or (not prefix and field.name == route.body):
                    continue
                if _is_map(field) or _output_only(field):
                    continue
                wkt = field.message_type is not None and field.message_type.full_name
                if field.message_type is not None and wkt not in _QUERYABLE_WKT:
                    if _is_repeated(field) or depth >= _QUERY_DEPTH or wkt in _WELL_KNOWN:
                        continue
                    visit(field.message_type, chain, depth + 1)
                    continue
                schema = self._scalar_schema(field, apply_rules=True)
                if _is_repeated(field):
                    schema = {"type": "array", "items": schema}
                    self._apply_list_rules(schema, field)
                parameter: dict[str, Any] = {
                    "name": ".".join(f.json_name for f in chain),
                    "in": "query",
                    "required": False,
                    "schema": schema,
                }
                if _is_repeated(field):
                    parameter["style"] = "form"
                    parameter["explode"] = True
                self._describe(parameter, field)
                parameters.append(parameter)

        visit(route.method.input_type, [], 0)
        return parameters

    def _body_schema(self, route: Route) -> dict[str, Any]:
        request = route.method.input_type
        if route.body != "*":
            field = request.fields_by_name[route.body]
            return self._field_schema(field)
        # The whole request minus what the path binds (the path wins if both are sent).
        bound = {p.split(".")[0] for p in route.path_fields}
        schema = self._message_schema(request, exclude=bound, request_level=True)
        return schema

    def _response_schema(self, route: Route) -> dict[str, Any]:
        response = route.method.output_type
        if route.response_body:
            return self._field_schema(response.fields_by_name[route.response_body])
        return self._ref(response)

    # --- schemas -------------------------------------------------------------------------

    def _ref(self, message: _descriptor.Descriptor) -> dict[str, Any]:
        if message.full_name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[message.full_name])
        name = _schema_name(message)
        if name not in self.schemas:
            self.schemas[name] = {}  # placeholder: breaks recursion
            self.schemas[name] = self._message_schema(
                message, exclude=set(), request_level=message.full_name in self._request_types
            )
        return {"$ref": _REF + name}

    def _message_schema(
        self, message: _descriptor.Descriptor, *, exclude: set[str], request_level: bool
    ) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in message.fields:
            if field.name in exclude:
                continue
            properties[field.json_name] = self._field_schema(field)
            # Only request messages list required fields: resources are also PATCH bodies,
            # where any subset may be sent.
            if request_level and _rules(field).required:
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

    def _field_schema(self, field: _FD) -> dict[str, Any]:
        if _is_map(field):
            assert field.message_type is not None
            value_field = field.message_type.fields_by_name["value"]
            values = self._single_schema(value_field)
            self._apply_value_rules(values, field, value_field)
            schema: dict[str, Any] = {"type": "object", "additionalProperties": values}
            rules = _rules(field)
            if rules.max_items:
                schema["maxProperties"] = rules.max_items
            if rules.pattern:
                schema["description"] = f"Keys match {_anchor(rules.pattern)}."
        elif _is_repeated(field):
            items = self._single_schema(field)
            self._apply_value_rules(items, field, field)
            schema = {"type": "array", "items": items}
            self._apply_list_rules(schema, field)
        else:
            schema = self._single_schema(field)
            self._apply_value_rules(schema, field, field)
        if _output_only(field):
            schema["readOnly"] = True
        self._describe(schema, field)
        if "$ref" in schema and len(schema) > 1:
            # OpenAPI 3.0 ignores siblings of $ref: wrap so readOnly/description hold.
            ref = schema.pop("$ref")
            schema = {"allOf": [{"$ref": ref}], **schema}
        return schema

    def _single_schema(self, field: _FD) -> dict[str, Any]:
        if field.message_type is not None:
            return self._ref(field.message_type)
        return self._scalar_schema(field, apply_rules=False)

    def _scalar_schema(self, field: _FD, *, apply_rules: bool) -> dict[str, Any]:
        kind = field.type
        schema: dict[str, Any]
        if field.message_type is not None:
            wkt = _WELL_KNOWN.get(field.message_type.full_name)
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
        rules = _rules(owner)
        kind = schema.get("type")
        if kind in {"integer", "number"}:
            if rules.has_min:
                schema["minimum"] = max(rules.min, schema.get("minimum", rules.min))
            if rules.has_max:
                schema["maximum"] = min(rules.max, schema.get("maximum", rules.max))
        elif kind == "string" and value.message_type is None and not _is_map(owner):
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

    def _apply_list_rules(self, schema: dict[str, Any], field: _FD) -> None:
        rules = _rules(field)
        if rules.max_items:
            schema["maxItems"] = rules.max_items

    def _describe(self, target: dict[str, Any], field: _FD) -> None:
        parts = [self.comments.get(field.full_name, ""), _rules(field).description]
        if _rules(field).required:
            parts.append("Required.")
        text = " ".join(p for p in parts if p).strip()
        if text:
            existing = target.get("description", "")
            target["description"] = f"{text} {existing}".strip() if existing else text


def _error_response() -> dict[str, Any]:
    return {
        "description": "An error: google.rpc.Status with ErrorInfo (and BadRequest for bad input).",
        "content": {"application/json": {"schema": {"$ref": _REF + _STATUS}}},
    }


def _schema_name(message: _descriptor.Descriptor) -> str:
    prefix = API_PACKAGE + "."
    name = message.full_name
    return name[len(prefix) :] if name.startswith(prefix) else name


def _anchor(pattern: str) -> str:
    return f"^(?:{pattern})$"


def _rules(field: _FD) -> field_rules_pb2.FieldRules:
    return rules_for(field) or _NO_RULES


_NO_RULES = field_rules_pb2.FieldRules()


def _output_only(field: _FD) -> bool:
    # Typed loosely: the googleapis stubs give the handle a plain FieldDescriptor.
    handle: Any = field_behavior_pb2.field_behavior
    behaviors: Sequence[int] = field.GetOptions().Extensions[handle]
    return field_behavior_pb2.OUTPUT_ONLY in behaviors


def _is_repeated(field: _FD) -> bool:
    return bool(field.is_repeated)


def _is_map(field: _FD) -> bool:
    return (
        _is_repeated(field)
        and field.message_type is not None
        and field.message_type.GetOptions().map_entry
    )


def _is_duration(field: _FD) -> bool:
    return (
        field.message_type is not None
        and field.message_type.full_name == "google.protobuf.Duration"
    )


def _chain(request: _descriptor.Descriptor, field_path: str) -> list[_FD]:
    chain: list[_FD] = []
    message: _descriptor.Descriptor | None = request
    for name in field_path.split("."):
        assert message is not None
        field = message.fields_by_name[name]
        chain.append(field)
        message = field.message_type
    return chain


# --- comments from an optional descriptor set with source info ---------------------------------

_DESCRIPTOR_SET = "descriptor_set.binpb"
# FileDescriptorProto / DescriptorProto / ServiceDescriptorProto field numbers.
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE = 4, 5, 6
_MESSAGE_FIELD, _MESSAGE_NESTED, _MESSAGE_ENUM = 2, 3, 4
_ENUM_VALUE, _SERVICE_METHOD = 2, 2


def _load_comments() -> dict[str, str]:
    """Leading comments by full name, if a descriptor set with source info is shipped."""
    try:
        resource = importlib.resources.files(API_PACKAGE).joinpath(_DESCRIPTOR_SET)
        if not resource.is_file():
            return {}
        data = resource.read_bytes()
        descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(data)
    except Exception:  # comments are a nicety; a broken file must not stop the gateway
        _log.warning("unreadable %s; OpenAPI summaries fall back to method names", _DESCRIPTOR_SET)
        return {}
    known = {file.name for file in api_file_descriptors()}
    comments: dict[str, str] = {}
    for file in descriptor_set.file:
        if file.name in known:
            comments.update(_file_comments(file))
    return comments


def _file_comments(file: descriptor_pb2.FileDescriptorProto) -> dict[str, str]:
    by_path = {
        tuple(location.path): _clean(location.leading_comments)
        for location in file.source_code_info.location
        if location.leading_comments
    }
    out: dict[str, str] = {}
    package = file.package

    def message(proto: descriptor_pb2.DescriptorProto, scope: str, path: tuple[int, ...]) -> None:
        name = f"{scope}.{proto.name}"
        _put(out, name, by_path.get(path))
        for index, field in enumerate(proto.field):
            _put(out, f"{name}.{field.name}", by_path.get((*path, _MESSAGE_FIELD, index)))
        for index, nested in enumerate(proto.nested_type):
            message(nested, name, (*path, _MESSAGE_NESTED, index))
        for index, enum in enumerate(proto.enum_type):
            _put(out, f"{name}.{enum.name}", by_path.get((*path, _MESSAGE_ENUM, index)))

    for index, proto in enumerate(file.message_type):
        message(proto, package, (_FILE_MESSAGE, index))
    for index, service in enumerate(file.service):
        name = f"{package}.{service.name}"
        _put(out, name, by_path.get((_FILE_SERVICE, index)))
        for m_index, method in enumerate(service.method):
            path = (_FILE_SERVICE, index, _SERVICE_METHOD, m_index)
            _put(out, f"{name}.{method.name}", by_path.get(path))
    return out


def _put(out: dict[str, str], name: str, text: str | None) -> None:
    if text:
        out[name] = text


def _clean(comment: str) -> str:
    return re.sub(r"[ \t]*\n[ \t]*", "\n", comment.strip())
