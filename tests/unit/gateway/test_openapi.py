"""The OpenAPI document is derived from the same route table and descriptors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from workcoord.gateway.openapi import openapi_document
from workcoord.gateway.routes import load_routes

_VERBS = {"get", "post", "put", "patch", "delete"}


def _operations(document: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    found: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for path, item in document["paths"].items():
        for verb, operation in item.items():
            if verb in _VERBS:
                assert operation["operationId"] not in found
                found[operation["operationId"]] = (path, verb, operation)
    return found


def _schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    schema = document["components"]["schemas"][name]
    assert isinstance(schema, dict)
    return schema


def test_every_route_appears_once_with_json_named_path_params() -> None:
    document = openapi_document()
    operations = _operations(document)
    table = load_routes()
    assert sorted(operations) == sorted(route.operation_id for route in table.routes)
    for route in table.routes:
        path, verb, operation = operations[route.operation_id]
        assert (path, verb) == (route.path, route.http_method.lower())
        declared = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
        assert declared == re.findall(r"\{([^}]+)\}", path)
        assert "_" not in "".join(declared)
        assert operation["responses"]["default"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Status"
        }
    path, verb, _ = operations["LaneService_GetItem"]
    assert path == "/v1/work-coordinators/{coordinatorId}/lanes/{laneId}/items/{itemId}"


def test_limits_are_published() -> None:
    document = openapi_document()
    _, _, lease = _operations(document)["WorkerService_Lease"]
    body = lease["requestBody"]["content"]["application/json"]["schema"]
    properties = body["properties"]
    assert "coordinatorId" not in properties  # bound by the path
    assert body["additionalProperties"] is False
    assert (properties["leaseSeconds"]["minimum"], properties["leaseSeconds"]["maximum"]) == (
        5,
        300,
    )
    assert (properties["maxItems"]["minimum"], properties["maxItems"]["maximum"]) == (1, 100)
    # leaseSeconds and maxItems too: an unsent one reads as 0, which is out of its bounds.
    assert set(body["required"]) == {"workerId", "workerClass", "leaseSeconds", "maxItems"}
    worker = _schema(document, "Worker")["properties"]
    assert worker["workerId"]["maxLength"] == 128
    assert worker["workerId"]["pattern"] == "^(?:[A-Za-z0-9][A-Za-z0-9._:@-]{0,127})$"
    assert worker["capabilities"]["maxItems"] == 64
    assert worker["capabilities"]["items"]["maxLength"] == 64
    assert worker["labels"]["maxProperties"] == 32
    assert worker["memoryBytes"]["type"] == "string"  # int64 → string
    assert _without_description(worker["observeTime"]) == {
        "type": "string",
        "format": "date-time",
        "readOnly": True,
    }
    # Descriptions come from the contract's comments (the committed descriptor set).
    assert (
        worker["observeTime"]["description"] == "When the server recorded the latest observation."
    )


def test_types_follow_the_proto3_json_mapping() -> None:
    document = openapi_document()
    lane = _schema(document, "Lane")["properties"]
    assert lane["state"]["readOnly"] is True
    assert "ACTIVE" in lane["state"]["enum"]
    assert lane["inputs"]["type"] == "object"
    assert lane["items"]["type"] == "array"
    assert lane["items"]["items"] == {"$ref": "#/components/schemas/Item"}
    # OUTPUT_ONLY message fields wrap their $ref so readOnly is not ignored.
    assert _without_description(lane["receipt"]) == {
        "allOf": [{"$ref": "#/components/schemas/Receipt"}],
        "readOnly": True,
    }
    capacity = _schema(document, "WorkCoordinator")["properties"]["classCapacity"]
    assert capacity["additionalProperties"]["maximum"] == 10000
    policy = _schema(document, "RetryPolicy")["properties"]
    # A Duration without bounds keeps the mapping's pattern; bounded ones get their own.
    report = _schema(document, "MaintenanceReport")["properties"]
    assert report["duration"]["pattern"] == r"^-?[0-9]+(\.[0-9]+)?s$"
    interval = re.compile(policy["initialInterval"]["pattern"])
    assert interval.fullmatch("1.5s") and not interval.fullmatch("86401s")
    assert policy["backoffCoefficient"]["type"] == "number"
    _, _, events = _operations(document)["WorkCoordinatorService_ListEvents"]
    query = {p["name"]: p for p in events["parameters"] if p["in"] == "query"}
    assert set(query) >= {"sinceRevision", "pageSize", "pageToken"}
    assert query["pageSize"]["schema"]["maximum"] == 500
    _, _, settings = _operations(document)["AdminService_UpdateSettings"]
    assert "updateMask" in {p["name"] for p in settings["parameters"]}


def _without_description(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "description"}


def test_every_reference_resolves() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref is not None:
                assert ref.removeprefix("#/components/schemas/") in schemas, ref
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)


def test_the_document_is_valid_openapi_3_0() -> None:
    definitions = pytest.importorskip("schemathesis.specs.openapi.definitions")
    validator = definitions.OPENAPI_30_VALIDATOR
    errors = [str(error) for error in validator.iter_errors(openapi_document())]
    assert errors == []
    loaders = pytest.importorskip("schemathesis.openapi")
    schema = loaders.from_dict(openapi_document())
    assert schema is not None
