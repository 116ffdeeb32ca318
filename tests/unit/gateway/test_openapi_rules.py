"""The OpenAPI document carries the field rules the server enforces: required fields and the
bounds of every field, wherever the field appears (path, query, body, component schemas).

The walk over the document is driven by the rules in the descriptors, so a rule added to a
proto is checked here without touching this file. (That each published bound is the one the
validator enforces is tests/unit/kit/test_json_schema_rules.py.)
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from google.protobuf import descriptor as _descriptor

from workcoord.gateway.openapi import openapi_document
from workcoord.gateway.routes import Route, load_routes
from workcoord.kit.descriptors import api_file_descriptors, is_map, is_output_only
from workcoord.kit.json_schema import field_rules, is_required, schema_name
from workcoord.kit.validation import DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING_LENGTH

_FD = _descriptor.FieldDescriptor
_REF = "#/components/schemas/"
DOCUMENT = openapi_document()
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
ROUTES = sorted(load_routes().routes, key=lambda r: r.operation_id)


def _operation(route: Route) -> dict[str, Any]:
    operation: dict[str, Any] = DOCUMENT["paths"][route.path][route.http_method.lower()]
    return operation


def _body(operation_id: str) -> dict[str, Any]:
    route = next(r for r in ROUTES if r.operation_id == operation_id)
    return _resolve(_operation(route)["requestBody"]["content"]["application/json"]["schema"])


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` (or ``allOf: [$ref]`` wrapper) merged in."""
    for ref in [schema.get("$ref"), *(s.get("$ref") for s in schema.get("allOf", []))]:
        if ref:
            merged = {**SCHEMAS[ref.removeprefix(_REF)], **schema}
            merged.pop("$ref", None)
            merged.pop("allOf", None)
            return merged
    return schema


# --- representative requests ------------------------------------------------------------------


def test_lease_states_its_bounds_and_required_fields() -> None:
    body = _body("WorkerService_Lease")
    properties = body["properties"]
    bounds = {
        name: (properties[name]["minimum"], properties[name]["maximum"])
        for name in ("leaseSeconds", "maxItems", "waitSeconds")
    }
    assert bounds == {"leaseSeconds": (5, 300), "maxItems": (1, 100), "waitSeconds": (0, 60)}
    assert set(body["required"]) == {"workerId", "workerClass", "maxItems", "leaseSeconds"}
    identity = _resolve(properties["runIdentity"])
    assert "worktreePath" in identity["required"]
    path = re.compile(identity["properties"]["worktreePath"]["pattern"])
    assert path.fullmatch("/srv/w") and not path.fullmatch("srv/w")
    assert not path.fullmatch("/srv/../w")


def test_create_bodies_name_their_required_fields() -> None:
    lane = _body("LaneService_CreateLane")
    assert {"title", "template"} <= set(lane["required"])
    assert lane["properties"]["title"]["minLength"] == 1
    assert "TEMPLATE_UNSPECIFIED" not in lane["properties"]["template"]["enum"]
    key = _body("AdminService_CreateWorkKey")
    assert set(key["required"]) == {"displayName", "coordinatorIds", "capabilities"}
    assert key["properties"]["coordinatorIds"]["minItems"] == 1
    leadership = _body("MaintenanceService_AcquireLeadership")
    assert set(leadership["required"]) >= {"holderId", "leaseSeconds"}
    heartbeat = _body("WorkerService_Heartbeat")
    assert heartbeat["required"] == ["leaseToken"]
    assert heartbeat["properties"]["leaseToken"]["minLength"] == 1


def test_a_patch_body_requires_nothing_but_keeps_its_bounds() -> None:
    """Only the fields named by updateMask change: the resource's required fields (scope) are
    for its creation."""
    body = _body("WorkCoordinatorService_UpdateWorkCoordinator")
    assert "required" not in body
    escalate = re.compile(body["properties"]["escalateAfter"]["pattern"])
    assert escalate.fullmatch("60s") and escalate.fullmatch("2592000s")
    assert not escalate.fullmatch("59.999s") and not escalate.fullmatch("2592000.5s")
    assert SCHEMAS["WorkCoordinator"]["required"] == ["scope"]


def test_every_string_states_the_default_length_and_refuses_nul() -> None:
    etag = SCHEMAS["Settings"]["properties"]["etag"]  # a string without rules of its own
    assert etag["maxLength"] == DEFAULT_MAX_STRING_LENGTH
    assert not re.fullmatch(etag["pattern"], "a\x00b") and re.fullmatch(etag["pattern"], "ok")


# --- every rule, wherever its field appears -------------------------------------------------


def _placements() -> list[tuple[str, _FD, dict[str, Any], bool | None]]:
    """(where, field, the field's schema, whether the document requires it or None) for every
    field of every request and every component schema."""
    found: list[tuple[str, _FD, dict[str, Any], bool | None]] = []
    for route in ROUTES:
        operation = _operation(route)
        request = route.method.input_type
        parameters = {p["name"]: p for p in operation.get("parameters", [])}
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        body_schema = _resolve(body["schema"]) if body else {}
        for field in request.fields:
            where = f"{route.operation_id}.{field.json_name}"
            if field.json_name in parameters:
                parameter = parameters[field.json_name]
                found.append((where, field, parameter["schema"], parameter["required"]))
            elif route.body == "*" and field.json_name in body_schema.get("properties", {}):
                schema = body_schema["properties"][field.json_name]
                listed = field.json_name in body_schema.get("required", [])
                found.append((where, field, schema, listed))
            elif route.body == field.name:
                found.append((where, field, body["schema"], operation["requestBody"]["required"]))
    for file in api_file_descriptors():
        pending = list(file.message_types_by_name.values())
        while pending:
            message = pending.pop()
            pending.extend(message.nested_types)
            component = SCHEMAS.get(schema_name(message))
            if component is None:
                continue
            for field in message.fields:
                schema = component["properties"][field.json_name]
                required = field.json_name in component.get("required", [])
                found.append((f"{schema_name(message)}.{field.json_name}", field, schema, required))
    return found


PLACEMENTS = _placements()


@pytest.mark.parametrize(
    ("where", "field", "schema", "required"), PLACEMENTS, ids=[p[0] for p in PLACEMENTS]
)
def test_every_rule_appears_where_its_field_does(
    where: str, field: _FD, schema: dict[str, Any], required: bool | None
) -> None:
    rules = field_rules(field)
    if is_required(field) and not is_output_only(field):
        assert required, "required, not listed as such"
    schema = _resolve(schema)
    value = schema
    if is_map(field):
        assert schema["maxProperties"] == (rules.max_items or DEFAULT_MAX_ITEMS)
        assert schema.get("minProperties") == (1 if rules.required else None)
        value = _resolve(schema["additionalProperties"])
    elif field.is_repeated:
        assert schema["maxItems"] == (rules.max_items or DEFAULT_MAX_ITEMS)
        assert schema.get("minItems") == (1 if rules.required else None)
        value = _resolve(schema["items"])
    leaf = field
    if is_map(field):
        assert field.message_type is not None
        leaf = field.message_type.fields_by_name["value"]
    kind = value.get("type")
    if kind in {"integer", "number"}:
        if rules.has_min:
            assert value["minimum"] >= rules.min
        if rules.has_max:
            assert value["maximum"] <= rules.max
    elif (rules.has_min or rules.has_max) and kind == "string":
        # A Duration or a 64-bit integer: the bounds are in its pattern, and in words.
        assert (
            "pattern" in value
            and str(rules.max if rules.has_max else rules.min) in value["description"]
        )
    if leaf.type == _FD.TYPE_STRING and leaf.message_type is None and kind == "string":
        assert value["maxLength"] == (rules.max_length or DEFAULT_MAX_STRING_LENGTH)
        if rules.pattern:
            assert value["pattern"] == f"^(?:{rules.pattern})$"
        if rules.required and not field.is_repeated and not field.has_presence:
            assert value["minLength"] == 1
    elif rules.pattern:
        assert rules.pattern in schema["description"]  # keys of a map: described
    if rules.required and field.enum_type is not None and not field.is_repeated:
        assert field.enum_type.values_by_number[0].name not in value["enum"]
    for stated, words in (
        (rules.max_bytes, "bytes serialized"),
        (rules.not_in_future, "Not in the future"),
        (rules.absolute_path, "absolute POSIX path"),
        (rules.min_nonzero_millis, "ms"),
    ):
        if stated:
            assert words in value.get("description", "") + schema.get("description", "")
    if rules.description:
        assert rules.description in schema.get("description", "")


def test_the_walk_reaches_every_kind_of_rule() -> None:
    """The rules the protos state are all met somewhere in the walk above (so none is left
    unchecked by a field the walk does not reach)."""
    stated = {d.name for _, field, _, _ in PLACEMENTS for d, _ in field_rules(field).ListFields()}
    assert stated >= {
        "required",
        "has_min",
        "has_max",
        "max_length",
        "pattern",
        "max_items",
        "max_bytes",
        "absolute_path",
        "not_in_future",
        "min_nonzero_millis",
        "description",
    }
