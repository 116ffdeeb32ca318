"""The MCP tools: each a thin mapping onto one RPC, described and typed by its descriptors.

A tool's arguments are its request message in the proto3 JSON mapping, with the names REST uses
(``coordinatorId``, ``leaseId``, ``runIdentity`` …), path parameters included, and the same
shape as REST's body: an RPC whose HTTP rule takes one field as the body (``CreateLane``:
``body: "lane"``) takes that field's message flat, beside the path parameters. Its input schema
is that JSON Schema (:class:`workcoord.kit.json_schema.SchemaBuilder`, the builder of the
OpenAPI document), without the OUTPUT_ONLY fields and without the ``*_UNSPECIFIED`` enum values
(proto's "not set", never a valid argument); ``why`` requires ``laneId`` or ``itemId``. Its
output schema is the response message's. Its description is the RPC's proto comment, so an
agent reads the contract from the tool list alone. A result is the response message in proto3
JSON; an error is the ``google.rpc.Status`` JSON REST would answer.

Human-only decisions (approve, deny, resume, retry, resolve) are deliberately absent: no tool
maps onto them. This module needs no MCP SDK: :mod:`workcoord.kit.mcp_server` serves the table.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.api import annotations_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message

from workcoord.kit.descriptors import (
    API_PACKAGE,
    is_read_only,
    message_class,
    method_descriptor,
    proto_comments,
)
from workcoord.kit.errors import InvalidArgument, WorkcoordError
from workcoord.kit.json_schema import SchemaBuilder
from workcoord.kit.proto_json import message_to_json, parse_json_into
from workcoord.kit.status import status_to_json, to_rpc_status

__all__ = [
    "TOOL_RPCS",
    "McpTool",
    "error_body",
    "mcp_tools",
    "tool_named",
]

# Tool name → RPC. The names are the contract agents are configured with; everything else about
# a tool derives from the RPC, whether it only reads included (its HTTP rule is GET:
# workcoord.kit.descriptors.is_read_only, the answer REST and the CSRF check use too).
TOOL_RPCS: dict[str, str] = {
    "work_coordinators": f"{API_PACKAGE}.WorkCoordinatorService.ListWorkCoordinators",
    "lease_work": f"{API_PACKAGE}.WorkerService.Lease",
    "start_work": f"{API_PACKAGE}.WorkerService.Start",
    "heartbeat": f"{API_PACKAGE}.WorkerService.Heartbeat",
    "checkpoint_work": f"{API_PACKAGE}.WorkerService.Checkpoint",
    "complete_work": f"{API_PACKAGE}.WorkerService.Complete",
    "fail_work": f"{API_PACKAGE}.WorkerService.Fail",
    "release_work": f"{API_PACKAGE}.WorkerService.Release",
    "view": f"{API_PACKAGE}.WorkCoordinatorService.GetView",
    "why": f"{API_PACKAGE}.WorkCoordinatorService.Explain",
    "create_lane": f"{API_PACKAGE}.LaneService.CreateLane",
    "budget": f"{API_PACKAGE}.WorkCoordinatorService.GetBudget",
}

_DEFS = "#/$defs/"
# Tools whose request needs one of these arguments (the RPC refuses neither with
# INVALID_ARGUMENT): the schema says so, so an agent does not have to learn it from the error.
_ONE_OF_REQUIRED: dict[str, tuple[str, ...]] = {"why": ("laneId", "itemId")}
_UNSPECIFIED = "_UNSPECIFIED"


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool: its name, the RPC it calls, and what an agent is shown of it."""

    name: str
    method: _descriptor.MethodDescriptor
    read_only: bool
    """Whether the RPC only reads (its HTTP rule is GET): the tool's read-only and idempotent
    hints."""
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    body_field: str = ""
    """The request field REST takes as the body (its message's fields are the tool's
    arguments, flat), or ``""`` when the arguments are the request itself."""

    @property
    def full_method(self) -> str:
        """The gRPC method path, ``/package.Service/Method``."""
        return f"/{self.method.containing_service.full_name}/{self.method.name}"

    @property
    def request_class(self) -> type[_message.Message]:
        """The generated request message class."""
        return message_class(self.method.input_type)

    @property
    def response_class(self) -> type[_message.Message]:
        """The generated response message class."""
        return message_class(self.method.output_type)

    def build_request(self, arguments: Mapping[str, Any] | None) -> _message.Message:
        """The RPC request for the tool's arguments; :class:`InvalidArgument` names a bad field.

        Only the JSON mapping is checked here; the coordinator validates the request itself,
        exactly as it does for REST and gRPC callers.
        """
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InvalidArgument([], "tool arguments must be a JSON object")
        request = self.request_class()
        document = dict(arguments or {})
        body = request.DESCRIPTOR.fields_by_name.get(self.body_field)
        if body is not None and not _request_shaped(document, body):
            # As REST binds it: the request's own fields (path and query parameters) at the
            # top, everything else into the body field.
            own = {f.json_name for f in request.DESCRIPTOR.fields if f.name != self.body_field}
            nested = {key: value for key, value in document.items() if key not in own}
            document = {key: value for key, value in document.items() if key in own}
            document[body.json_name] = nested
        parse_json_into(document, request)
        return request

    def result(self, response: _message.Message) -> dict[str, Any]:
        """The tool's structured result: the response in the proto3 JSON mapping."""
        return message_to_json(response)


@functools.cache
def mcp_tools() -> tuple[McpTool, ...]:
    """Every tool, in the order agents see them (built once from the descriptors)."""
    comments = proto_comments()
    return tuple(_tool(name, method_descriptor(rpc), comments) for name, rpc in TOOL_RPCS.items())


def tool_named(name: str) -> McpTool | None:
    """The tool called ``name``, if there is one."""
    for tool in mcp_tools():
        if tool.name == name:
            return tool
    return None


def error_body(err: WorkcoordError) -> dict[str, Any]:
    """A failed call as REST answers it: ``google.rpc.Status`` JSON with its ``ErrorInfo``
    (reason, metadata such as a LEASE_LOST ``cause``) and ``BadRequest`` field violations."""
    return status_to_json(to_rpc_status(err))


def _tool(name: str, method: _descriptor.MethodDescriptor, comments: dict[str, str]) -> McpTool:
    request = method.input_type
    builder = SchemaBuilder(comments, ref_prefix=_DEFS, input_only=True, required_everywhere=True)
    body_field = _rest_body_field(method)
    if body_field:
        schema = builder.message_schema(request, exclude=frozenset({body_field}))
        body_type = request.fields_by_name[body_field].message_type
        assert body_type is not None, f"{method.full_name}: the HTTP body is not a message"
        inner = builder.message_schema(body_type)
        clash = set(schema["properties"]) & set(inner["properties"])
        if clash:
            raise ValueError(f"tool {name}: body fields {sorted(clash)} shadow request fields")
        schema["properties"].update(inner["properties"])
        required = [*schema.get("required", []), *inner.get("required", [])]
        if required:
            schema["required"] = required
    else:
        schema = builder.message_schema(request)
    if name in _ONE_OF_REQUIRED:
        schema["anyOf"] = [{"required": [argument]} for argument in _ONE_OF_REQUIRED[name]]
    if builder.schemas:
        schema["$defs"] = dict(sorted(builder.schemas.items()))
    outputs = SchemaBuilder(comments, ref_prefix=_DEFS)
    output_schema = outputs.message_schema(method.output_type)
    if outputs.schemas:
        output_schema["$defs"] = dict(sorted(outputs.schemas.items()))
    service = method.containing_service.name
    # Proto comments are wrapped at 100 columns; a description reads as one paragraph.
    summary = " ".join(comments.get(method.full_name, method.name).split())
    description = (
        f"{summary}\n\nArguments: {request.name} in proto3 JSON (the names REST uses). "
        f"Result: {method.output_type.name}. Errors: google.rpc.Status JSON with an ErrorInfo "
        f"reason. RPC: {service}.{method.name}."
    )
    return McpTool(
        name=name,
        method=method,
        read_only=is_read_only(method.full_name),
        description=description,
        input_schema=_without_unspecified(schema),
        output_schema=_without_unspecified(output_schema),
        body_field=body_field,
    )


def _request_shaped(document: Mapping[str, Any], body: Any) -> bool:
    """Whether ``document`` nests the body under its field (``{"lane": {…}}``), the form
    agents configured before the flat one still send; the schema offers only the flat form."""
    nested = document.get(body.json_name)
    assert body.message_type is not None
    return isinstance(nested, Mapping) and body.json_name not in {
        f.json_name for f in body.message_type.fields
    }


def _rest_body_field(method: _descriptor.MethodDescriptor) -> str:
    """The request field the RPC's HTTP rule takes as the body (``""``: none, or ``*``)."""
    handle: Any = annotations_pb2.http  # the stubs type extensions too narrowly
    rule = method.GetOptions().Extensions[handle]
    return "" if rule.body in ("", "*") else str(rule.body)


def _without_unspecified(node: Any) -> Any:
    """``node`` with every ``*_UNSPECIFIED`` enum value left out (proto3 JSON never prints
    one: it is the default, omitted)."""
    if isinstance(node, dict):
        cleaned = {key: _without_unspecified(value) for key, value in node.items()}
        if isinstance(cleaned.get("enum"), list):
            cleaned["enum"] = [
                v for v in cleaned["enum"] if not (isinstance(v, str) and v.endswith(_UNSPECIFIED))
            ]
        return cleaned
    if isinstance(node, list):
        return [_without_unspecified(item) for item in node]
    return node
