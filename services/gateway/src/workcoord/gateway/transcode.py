"""HTTP/JSON ↔ protobuf transcoding, by the grpc-gateway / Envoy rules.

- Path variables fill the request fields they name (after the body, so they win).
- ``body: "*"``: the JSON body is the whole request; ``body: "field"``: the JSON body is that
  field; no body: none is read.
- Query parameters fill the remaining fields: proto or JSON names, dotted for nested messages,
  repeated keys for repeated fields, enums by name (or number), 64-bit integers as strings or
  numbers, booleans ``true``/``false``. A parameter naming a field already bound by the path or
  the body, or no field at all, is refused (unknown fields are rejected, as in bodies).
- ``PATCH`` with a body field and an empty ``update_mask``: the mask is filled from the
  top-level keys of the JSON body (grpc-gateway behaviour).
- Responses: the ``response_body`` field if the rule names one, else the whole message, in the
  proto3 JSON mapping.

Values become fields through :func:`workcoord.kit.proto_json.parse_json_into` (shared with the
MCP tools); only the routing of values to fields is written here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message

from workcoord.gateway.routes import Route
from workcoord.kit.descriptors import (
    descriptor_of,
    field_named,
    is_map,
    is_repeated,
    is_well_known,
)
from workcoord.kit.errors import FieldViolation, InvalidArgument
from workcoord.kit.proto_json import json_kind, message_to_json, parse_json_into

__all__ = [
    "build_request",
    "parse_json_body",
    "response_to_json",
]

_FieldDescriptor = _descriptor.FieldDescriptor

_TRUE = frozenset({"true", "True", "TRUE", "t", "T", "1"})
_FALSE = frozenset({"false", "False", "FALSE", "f", "F", "0"})


def parse_json_body(raw: bytes) -> Any:
    """Decode a request body; an empty body reads as ``{}``. Bad JSON → :class:`InvalidArgument`."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(
            [], f"request body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except (ValueError, RecursionError):
        # Undecodable bytes or absurd nesting: the caller's fault either way.
        raise InvalidArgument([], "request body is not valid UTF-8 JSON") from None


def build_request(
    route: Route,
    path_values: Mapping[str, str],
    query: Iterable[tuple[str, str]],
    body: Any,
) -> _message.Message:
    """The gRPC request for one HTTP call, or :class:`InvalidArgument` naming what is wrong.

    ``body`` is the decoded JSON body (ignored when the route takes none).
    """
    request = route.request_class()
    descriptor = descriptor_of(request)
    if route.body == "*":
        if not isinstance(body, dict):
            raise InvalidArgument(
                [], f"request body must be a JSON object ({descriptor.name}), got {json_kind(body)}"
            )
        parse_json_into(body, request)
    elif route.body:
        field = descriptor.fields_by_name[route.body]
        if field.message_type is not None and not is_repeated(field) and not isinstance(body, dict):
            raise InvalidArgument(
                [FieldViolation(route.body, f"must be a JSON object, got {json_kind(body)}")]
            )
        parse_json_into({field.json_name: body}, request)

    query_json = _query_to_json(route, descriptor, query)
    if query_json:
        parse_json_into(query_json, request)

    # Path variables last: they override whatever the body said about the same field.
    path_json: dict[str, Any] = {}
    for field_path, value in path_values.items():
        _put(path_json, *_json_leaf(descriptor, field_path.split("."), value, field_path))
    if path_json:
        parse_json_into(path_json, request)

    if route.http_method == "PATCH" and route.body not in ("", "*") and isinstance(body, dict):
        _fill_update_mask(request, route.body, body)
    return request


def response_to_json(route: Route, response: _message.Message) -> Any:
    """The JSON answer for ``response``: its ``response_body`` field, or all of it."""
    if not route.response_body:
        return message_to_json(response)
    field = descriptor_of(response).fields_by_name[route.response_body]
    if field.message_type is not None and not is_repeated(field):
        return message_to_json(getattr(response, field.name))
    whole = message_to_json(response)
    if field.json_name in whole:
        return whole[field.json_name]
    # Absent because it holds the default value: answer the proto3 JSON default.
    if is_repeated(field):
        return {} if is_map(field) else []
    return message_to_json(response, with_defaults=True).get(field.json_name)


# --- query parameters ------------------------------------------------------------------------


def _query_to_json(
    route: Route, descriptor: _descriptor.Descriptor, query: Iterable[tuple[str, str]]
) -> dict[str, Any]:
    grouped: dict[str, list[str]] = {}
    for key, value in query:
        grouped.setdefault(key, []).append(value)
    result: dict[str, Any] = {}
    for key, values in grouped.items():
        names = _resolve(descriptor, key)
        if names is None:
            raise InvalidArgument([FieldViolation(key, "unknown query parameter")])
        proto_path = ".".join(f.name for f in names)
        if route.body == "*":
            raise InvalidArgument(
                [FieldViolation(proto_path, "must be sent in the request body, not the query")]
            )
        if route.body and names[0].name == route.body:
            raise InvalidArgument(
                [FieldViolation(proto_path, "is bound by the request body, not the query")]
            )
        if any(_bound(proto_path, bound) for bound in route.path_fields):
            raise InvalidArgument(
                [FieldViolation(proto_path, "is bound by the path, not the query")]
            )
        leaf = names[-1]
        if is_map(leaf):
            raise InvalidArgument([FieldViolation(proto_path, "map fields cannot be queried")])
        if not is_repeated(leaf) and len(values) > 1:
            raise InvalidArgument([FieldViolation(proto_path, "must be given at most once")])
        converted = [_query_scalar(leaf, value, proto_path) for value in values]
        json_value: Any = converted if is_repeated(leaf) else converted[0]
        _put(result, [f.json_name for f in names], json_value)
    return result


def _bound(a: str, b: str) -> bool:
    """Whether field paths ``a`` and ``b`` overlap (one is a prefix of the other)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _resolve(descriptor: _descriptor.Descriptor, dotted: str) -> list[_FieldDescriptor] | None:
    """The field chain a dotted name (proto or JSON names) denotes, or None."""
    chain: list[_FieldDescriptor] = []
    message: _descriptor.Descriptor | None = descriptor
    for segment in dotted.split("."):
        if message is None:
            return None
        field = field_named(message, segment)
        if field is None:
            return None
        if chain and is_repeated(chain[-1]):
            return None  # no addressing inside repeated messages from a query string
        chain.append(field)
        message = field.message_type if not is_well_known(field) else None
    return chain


def _query_scalar(field: _FieldDescriptor, text: str, proto_path: str) -> Any:
    """A query string value as the JSON value json_format expects for ``field``."""
    if field.type == _FieldDescriptor.TYPE_BOOL:
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise InvalidArgument([FieldViolation(proto_path, "must be true or false")])
    if field.enum_type is not None:
        if text not in field.enum_type.values_by_name and re.fullmatch(r"-?[0-9]+", text):
            return int(text)
        return text
    if field.message_type is not None and not is_well_known(field):
        raise InvalidArgument([FieldViolation(proto_path, "cannot be set from the query")])
    # Numbers (json_format accepts numeric strings), strings, bytes and the string-shaped
    # well-known types (Timestamp, Duration, FieldMask, wrappers) take the text as it is.
    return text


def _json_leaf(
    descriptor: _descriptor.Descriptor, proto_path: list[str], value: str, shown: str
) -> tuple[list[str], Any]:
    names: list[str] = []
    message: _descriptor.Descriptor | None = descriptor
    field: _FieldDescriptor | None = None
    for segment in proto_path:
        field = message.fields_by_name.get(segment) if message is not None else None
        if field is None:  # pragma: no cover - routes.py checked the template
            raise InvalidArgument([FieldViolation(shown, "unknown path variable")])
        names.append(field.json_name)
        message = field.message_type
    assert field is not None
    return names, _query_scalar(field, value, shown)


def _put(target: dict[str, Any], names: list[str], value: Any) -> None:
    for name in names[:-1]:
        nested = target.setdefault(name, {})
        if not isinstance(nested, dict):  # pragma: no cover - paths never overlap
            raise InvalidArgument([FieldViolation(".".join(names), "is set twice")])
        target = nested
    target[names[-1]] = value


# --- update mask -----------------------------------------------------------------------------


def _fill_update_mask(request: _message.Message, body_field: str, body: dict[str, Any]) -> None:
    mask_field = descriptor_of(request).fields_by_name.get("update_mask")
    if mask_field is None or mask_field.message_type is None:
        return
    if mask_field.message_type.full_name != "google.protobuf.FieldMask":
        return
    mask = getattr(request, "update_mask")  # noqa: B009 - a dynamic message
    if list(mask.paths):
        return
    target = descriptor_of(request).fields_by_name[body_field].message_type
    if target is None:
        return
    for key, value in body.items():
        field = field_named(target, key)
        if field is None:
            continue
        if is_map(field) and isinstance(value, dict) and value:
            # Entries one by one: a PATCH of some classes keeps the others.
            mask.paths.extend(f"{field.name}.{entry}" for entry in sorted(value))
        else:
            mask.paths.append(field.name)
