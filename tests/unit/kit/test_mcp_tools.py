"""The MCP tool table walks the descriptors: every tool is one existing RPC, every schema field
one request field, and the contract an agent needs is in the descriptions."""

from __future__ import annotations

from typing import Any

import pytest
from google.api import annotations_pb2
from google.protobuf import descriptor as _descriptor
from jsonschema import Draft202012Validator

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.kit.descriptors import api_file_descriptors, is_output_only, method_descriptor
from workcoord.kit.errors import InvalidArgument, LeaseLost
from workcoord.kit.json_schema import is_required, schema_name
from workcoord.kit.mcp_tools import TOOL_RPCS, McpTool, error_body, mcp_tools, tool_named

_DEFS = "#/$defs/"
# Decisions only a human may take: never a tool, whatever credential an agent holds.
HUMAN_ONLY = {
    "workcoord.api.v1.LaneService.ApproveItem",
    "workcoord.api.v1.LaneService.DenyItem",
    "workcoord.api.v1.LaneService.ResumeItem",
    "workcoord.api.v1.LaneService.RetryItem",
    "workcoord.api.v1.WorkCoordinatorService.ResolvePendingAction",
}


def test_the_tools_are_the_contracts_names() -> None:
    assert [tool.name for tool in mcp_tools()] == [
        "work_coordinators",
        "lease_work",
        "start_work",
        "heartbeat",
        "checkpoint_work",
        "complete_work",
        "fail_work",
        "release_work",
        "view",
        "why",
        "create_lane",
        "budget",
    ]


def test_every_tool_is_one_unary_rpc_that_rest_serves_too() -> None:
    rpcs = [tool.method.full_name for tool in mcp_tools()]
    assert len(rpcs) == len(set(rpcs))
    known = {
        method.full_name
        for file in api_file_descriptors()
        for service in file.services_by_name.values()
        for method in service.methods
    }
    for tool in mcp_tools():
        assert tool.method.full_name in known
        assert method_descriptor(tool.method.full_name) is tool.method
        assert not tool.method.server_streaming and not tool.method.client_streaming
        handle: Any = annotations_pb2.http
        assert tool.method.GetOptions().HasExtension(handle), tool.name
        assert tool.full_method == (
            f"/{tool.method.containing_service.full_name}/{tool.method.name}"
        )
        assert tool.request_class.DESCRIPTOR.full_name == tool.method.input_type.full_name


def test_human_only_decisions_are_not_tools() -> None:
    assert HUMAN_ONLY.isdisjoint(TOOL_RPCS.values())
    for rpc in HUMAN_ONLY:
        method_descriptor(rpc)  # the RPCs exist: the exclusion is deliberate, not a typo


@pytest.mark.parametrize("tool", mcp_tools(), ids=lambda tool: tool.name)
def test_every_schema_field_is_a_request_field_by_its_json_name(tool: McpTool) -> None:
    schema = tool.input_schema
    Draft202012Validator.check_schema(schema)
    definitions: dict[str, Any] = schema.get("$defs", {})
    reached: set[str] = set()

    def walk(node: dict[str, Any], message: _descriptor.Descriptor) -> None:
        assert node["type"] == "object" and node["additionalProperties"] is False
        fields = {field.json_name: field for field in message.fields}
        properties: dict[str, Any] = node["properties"]
        # Every input field of the message is offered, and nothing else.
        offered = {name for name, field in fields.items() if not is_output_only(field)}
        assert set(properties) == offered, message.full_name
        required = [name for name, field in fields.items() if is_required(field)]
        assert node.get("required", []) == [name for name in required if name in offered]
        for name in offered:
            target = fields[name].message_type
            if target is not None and target.GetOptions().map_entry:
                target = target.fields_by_name["value"].message_type
            if target is None or target.full_name.startswith("google.protobuf."):
                assert _refs(properties[name]) == [], name
                continue
            assert _refs(properties[name]) == [_DEFS + schema_name(target)], name
            if schema_name(target) not in reached:
                reached.add(schema_name(target))
                walk(definitions[schema_name(target)], target)

    if tool.body_field:
        # REST's body shape: the body message's fields flat beside the request's own.
        request = tool.method.input_type
        body = request.fields_by_name[tool.body_field].message_type
        assert body is not None
        own = {f.json_name for f in request.fields if f.name != tool.body_field}
        flat = {k: v for k, v in schema["properties"].items() if k not in own}
        walk({**schema, "properties": flat, "required": _inner_required(schema, own)}, body)
    else:
        walk(schema, tool.method.input_type)
    assert reached == set(definitions)


def _inner_required(schema: dict[str, Any], own: set[str]) -> list[str]:
    return [name for name in schema.get("required", []) if name not in own]


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if "$ref" in node else []
        for value in node.values():
            found.extend(_refs(value))
        return found
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def test_the_descriptions_carry_the_contract() -> None:
    def described(name: str) -> str:
        tool = tool_named(name)
        assert tool is not None
        return tool.description

    assert "lease_token" in described("lease_work")
    assert "LEASE_LOST" in described("lease_work")
    assert "run identity before running" in described("lease_work")
    assert "before the work runs" in described("start_work")
    assert "LEASE_LOST" in described("heartbeat")
    assert "8 KiB" in described("checkpoint_work")
    assert "blocked_reason" in described("checkpoint_work")
    assert "the work coordinators the caller may read" in described("work_coordinators")
    for tool in mcp_tools():
        assert f"RPC: {tool.method.containing_service.name}.{tool.method.name}" in tool.description
    checkpoint = tool_named("checkpoint_work")
    assert checkpoint is not None
    blocked = checkpoint.input_schema["$defs"]["Checkpoint"]["properties"]["blockedReason"]
    assert blocked["pattern"] == "^(?:human|secret|destructive|policy|dependency|unavailable)$"


def test_arguments_become_the_request_by_the_json_mapping() -> None:
    start = tool_named("start_work")
    assert start is not None
    request = start.build_request(
        {
            "coordinatorId": "wc_1",
            "leaseId": "ls_1",
            "leaseToken": "secret",
            "runIdentity": {"pid": "42", "agentId": "a", "startedAt": "2030-01-02T03:04:05Z"},
        }
    )
    expected = worker_pb2.StartRequest(
        coordinator_id="wc_1",
        lease_id="ls_1",
        lease_token="secret",
        run_identity=lane_pb2.RunIdentity(pid=42, agent_id="a"),
    )
    expected.run_identity.started_at.FromJsonString("2030-01-02T03:04:05Z")
    assert request == expected


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"coordinatorId": "wc_1", "leaseid": "x"}, "leaseid"),
        ({"leaseSeconds": "soon"}, "lease_seconds"),
        ({"runIdentity": []}, "run_identity"),
        ({"runIdentity": {"pid": "x"}}, "run_identity.pid"),
    ],
)
def test_bad_arguments_name_the_field(arguments: dict[str, Any], field: str) -> None:
    lease = tool_named("lease_work")
    assert lease is not None
    with pytest.raises(InvalidArgument) as caught:
        lease.build_request(arguments)
    assert [v.field for v in caught.value.field_violations] == [field]


def test_create_lane_refuses_what_rest_refuses_while_reading_json() -> None:
    create = tool_named("create_lane")
    assert create is not None
    deep: Any = "leaf"
    for _ in range(40):  # json_format read it; the coordinator could not decode it: UNKNOWN
        deep = {"a": deep}
    for lane, field in (
        ({"title": "t", "template": "CUSTOM", "inputs": deep}, "lane.inputs"),
        ({"title": "t", "template": "CUSTOM\u0000x"}, "lane.template"),
        ({"title": "t", "template": 4294967298}, "lane.template"),
    ):
        with pytest.raises(InvalidArgument) as caught:
            create.build_request({"coordinatorId": "wc_1", "lane": lane})
        assert [v.field for v in caught.value.field_violations] == [field]


def test_errors_are_the_status_json_rest_answers() -> None:
    body = error_body(LeaseLost("expired"))
    assert body["code"] == 10
    assert body["details"] == [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "LEASE_LOST",
            "domain": "workcoord",
            "metadata": {"cause": "expired"},
        }
    ]


def _enum_values(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [v for v in node.get("enum", []) if isinstance(v, str)]
        for value in node.values():
            found.extend(_enum_values(value))
        return found
    if isinstance(node, list):
        return [v for item in node for v in _enum_values(item)]
    return []


@pytest.mark.parametrize("tool", mcp_tools(), ids=lambda tool: tool.name)
def test_no_schema_offers_an_unspecified_enum_value(tool: McpTool) -> None:
    values = _enum_values(tool.input_schema) + _enum_values(tool.output_schema)
    assert [v for v in values if v.endswith("_UNSPECIFIED")] == []


def test_lease_work_still_offers_the_real_enum_values() -> None:
    tool = tool_named("complete_work")
    assert tool is not None
    assert {"PASS", "FAIL"} <= set(_enum_values(tool.input_schema))


def test_why_requires_a_lane_or_an_item() -> None:
    tool = tool_named("why")
    assert tool is not None
    validator = Draft202012Validator(tool.input_schema)
    assert not validator.is_valid({"coordinatorId": "wc-1"})
    assert validator.is_valid({"coordinatorId": "wc-1", "laneId": "ln-1"})
    assert validator.is_valid({"coordinatorId": "wc-1", "itemId": "it-1"})


def test_create_lane_takes_the_flat_rest_body() -> None:
    tool = tool_named("create_lane")
    assert tool is not None and tool.body_field == "lane"
    arguments = {
        "coordinatorId": "wc-1",
        "requestId": "r-1",
        "title": "Fix the parser",
        "template": "CUSTOM",
        "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}],
    }
    Draft202012Validator(tool.input_schema).validate(arguments)
    assert not Draft202012Validator(tool.input_schema).is_valid(
        {"coordinatorId": "wc-1", "lane": {"title": "nested"}}
    )
    request = tool.build_request(arguments)
    assert isinstance(request, lane_pb2.CreateLaneRequest)
    assert (request.coordinator_id, request.request_id) == ("wc-1", "r-1")
    assert request.lane.title == "Fix the parser"
    assert [item.key for item in request.lane.items] == ["a"]
    # The request-shaped form agents were configured with before is still understood.
    nested = {k: v for k, v in arguments.items() if k not in ("coordinatorId", "requestId")}
    assert tool.build_request({"coordinatorId": "wc-1", "requestId": "r-1", "lane": nested}) == (
        request
    )
    with pytest.raises(InvalidArgument):
        tool.build_request({"coordinatorId": "wc-1", "titel": "typo"})


@pytest.mark.parametrize("tool", mcp_tools(), ids=lambda tool: tool.name)
def test_every_tool_has_an_output_schema_its_results_meet(tool: McpTool) -> None:
    schema = tool.output_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {f.json_name for f in tool.method.output_type.fields}
    Draft202012Validator(schema).validate(tool.result(tool.response_class()))


def test_a_leased_result_meets_the_output_schema() -> None:
    tool = tool_named("lease_work")
    assert tool is not None
    response = worker_pb2.LeaseResponse(
        leases=[
            worker_pb2.Lease(
                lease_id="l-1",
                lease_token="t",
                item=worker_pb2.LeasedItem(key="a", kind=lane_pb2.Item.TASK),
            )
        ]
    )
    Draft202012Validator(tool.output_schema).validate(tool.result(response))
