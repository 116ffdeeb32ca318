"""The OpenAPI 3.0.3 document, derived from the route table and the message descriptors.

One operation per route (``operationId`` ``Service_Method``), path parameters by JSON name,
query parameters for the request fields neither the path nor the body binds, and a component
schema per reachable message, built by :class:`workcoord.kit.json_schema.SchemaBuilder` (the
same schemas the MCP tools publish). Summaries and descriptions are the proto comments.

3.0.3 rather than 3.1: it is what most generators and fuzzers (schemathesis) handle best.

Hand-written: no maintained Python library turns protobuf descriptors into OpenAPI
(protoc-gen-openapiv2 / gnostic are Go protoc plugins working at build time).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from google.protobuf import descriptor as _descriptor

from workcoord.gateway.routes import Route, RouteTable, load_routes
from workcoord.kit.descriptors import is_map, is_output_only, is_repeated, proto_comments
from workcoord.kit.json_schema import (
    ANY_SCHEMA,
    ANY_SCHEMA_NAME,
    QUERYABLE_WELL_KNOWN,
    WELL_KNOWN,
    SchemaBuilder,
    is_required,
)

__all__ = ["build_openapi", "openapi_document"]

_log = logging.getLogger(__name__)

_FD = _descriptor.FieldDescriptor
_REF = "#/components/schemas/"
_STATUS = "Status"
_QUERY_DEPTH = 3
_UPDATE_MASK = "update_mask"
# Message types a query string never reaches into (they have a JSON form of their own).
_OPAQUE = frozenset({*WELL_KNOWN, "google.protobuf.Any"})


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document for the v1 route table (built once; it is static)."""
    return build_openapi(load_routes())


def build_openapi(table: RouteTable, *, title: str = "workcoord API") -> dict[str, Any]:
    """Build the OpenAPI 3.0.3 document of ``table``."""
    builder = _Builder(proto_comments())
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
            "details": {"type": "array", "items": {"$ref": _REF + ANY_SCHEMA_NAME}},
        },
        "required": ["code", "message"],
    }
    schemas[ANY_SCHEMA_NAME] = ANY_SCHEMA
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
        # Every message lists its required fields: the validator checks them in every message
        # a request carries, at any depth (a PATCH body is the one exception, see _body_schema).
        self.messages = SchemaBuilder(comments, ref_prefix=_REF, required_everywhere=True)
        self.schemas = self.messages.schemas
        self.tags: dict[str, str] = {}

    # --- operations ----------------------------------------------------------------------

    def operation(self, route: Route) -> dict[str, Any]:
        method = route.method
        service = method.containing_service
        self.tags.setdefault(service.name, self.comments.get(service.full_name, ""))
        request = method.input_type
        self.messages.mark_request(request)
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
            schema, description = self._body_schema(route)
            operation["requestBody"] = {
                "required": route.body != "*" or self._has_required(request, route),
                "content": {"application/json": {"schema": schema}},
            }
            if description:
                operation["requestBody"]["description"] = description
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
            is_required(field)
            for field in request.fields
            if field.name not in {p.split(".")[0] for p in route.path_fields}
        )

    def _path_parameter(self, request: _descriptor.Descriptor, field_path: str) -> dict[str, Any]:
        chain = _chain(request, field_path)
        leaf = chain[-1]
        schema = self.messages.scalar_schema(leaf, apply_rules=True)
        if schema.get("type") != "string":
            # Path segments are strings on the wire whatever the field type.
            schema = {"type": "string"}
        parameter: dict[str, Any] = {
            "name": ".".join(f.json_name for f in chain),
            "in": "path",
            "required": True,
            "schema": schema,
        }
        self.messages.describe(parameter, leaf)
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
                if is_map(field) or is_output_only(field):
                    continue
                wkt = field.message_type is not None and field.message_type.full_name
                if field.message_type is not None and wkt not in QUERYABLE_WELL_KNOWN:
                    if is_repeated(field) or depth >= _QUERY_DEPTH or wkt in _OPAQUE:
                        continue
                    visit(field.message_type, chain, depth + 1)
                    continue
                schema = self.messages.scalar_schema(field, apply_rules=True)
                if is_repeated(field):
                    schema = {"type": "array", "items": schema}
                    self.messages.apply_list_rules(schema, field)
                parameter: dict[str, Any] = {
                    "name": ".".join(f.json_name for f in chain),
                    "in": "query",
                    "required": not prefix and is_required(field),
                    "schema": schema,
                }
                if is_repeated(field):
                    parameter["style"] = "form"
                    parameter["explode"] = True
                self.messages.describe(parameter, field)
                parameters.append(parameter)

        visit(route.method.input_type, [], 0)
        return parameters

    def _body_schema(self, route: Route) -> tuple[dict[str, Any], str]:
        """The body's schema and description (the bound field's words, when a field is)."""
        request = route.method.input_type
        if route.body == "*":
            # The whole request minus what the path binds (the path wins if both are sent).
            bound = frozenset(p.split(".")[0] for p in route.path_fields)
            return self.messages.message_schema(request, exclude=bound), ""
        field = request.fields_by_name[route.body]
        words: dict[str, Any] = {}
        self.messages.describe(words, field)
        description = str(words.get("description", ""))
        if field.message_type is None or field.is_repeated:
            return self.messages.field_schema(field), ""
        if _UPDATE_MASK in request.fields_by_name:
            # A PATCH body names only what changes (update_mask): the resource's own required
            # fields are required when it is created, not here.
            schema = self.messages.message_schema(field.message_type)
            schema.pop("required", None)
            return schema, description
        # A plain reference (the words go on the body): tools that walk a body's properties,
        # such as schemathesis's body parameters, do not look inside an allOf wrapper.
        return self.messages.ref(field.message_type), description

    def _response_schema(self, route: Route) -> dict[str, Any]:
        response = route.method.output_type
        if route.response_body:
            return self.messages.field_schema(response.fields_by_name[route.response_body])
        return self.messages.ref(response)


def _error_response() -> dict[str, Any]:
    return {
        "description": "An error: google.rpc.Status with ErrorInfo (and BadRequest for bad input).",
        "content": {"application/json": {"schema": {"$ref": _REF + _STATUS}}},
    }


def _chain(request: _descriptor.Descriptor, field_path: str) -> list[_FD]:
    chain: list[_FD] = []
    message: _descriptor.Descriptor | None = request
    for name in field_path.split("."):
        assert message is not None
        field = message.fields_by_name[name]
        chain.append(field)
        message = field.message_type
    return chain
