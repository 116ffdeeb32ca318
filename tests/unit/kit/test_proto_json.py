"""Reading proto3 JSON refuses, naming the field, what json_format would misread: enum values
that are not exactly a declared name or number, and free-form JSON nested too deep."""

from __future__ import annotations

from typing import Any

import pytest

from workcoord.api.v1 import admin_pb2, lane_pb2
from workcoord.kit.errors import InvalidArgument
from workcoord.kit.proto_json import json_depth, parse_json_into
from workcoord.kit.validation import MAX_JSON_DEPTH


def _refused(js: dict[str, Any], message: Any) -> dict[str, str]:
    with pytest.raises(InvalidArgument) as caught:
        parse_json_into(js, message)
    return {v.field: v.description for v in caught.value.field_violations}


@pytest.mark.parametrize(
    "template",
    [
        "CUSTOM\u0000x",  # json_format read it as CUSTOM (a C string lookup stops at the NUL)
        "CUSTOM\u0000",
        4294967298,  # wrapped modulo 2**32 to 2, CUSTOM
        -4294967294,
        2**63 + 2,
        2.5,  # truncated to 2
        True,  # read as 1
        "2",
        99,
        [],
    ],
)
def test_an_enum_is_exactly_a_declared_name_or_number(template: Any) -> None:
    refused = _refused({"template": template}, lane_pb2.Lane())
    assert refused == {"template": "must be one of STANDARD, CUSTOM"}


def test_declared_enum_values_are_read() -> None:
    for template in ("CUSTOM", 2, "TEMPLATE_UNSPECIFIED", 0):
        lane = lane_pb2.Lane()
        parse_json_into({"template": template}, lane)
        assert lane.template in (lane_pb2.Lane.CUSTOM, lane_pb2.Lane.TEMPLATE_UNSPECIFIED)
    key = admin_pb2.WorkKey()
    parse_json_into({"capabilities": ["READ", 3]}, key)
    assert list(key.capabilities) == [admin_pb2.WorkKey.READ, admin_pb2.WorkKey.WRITE]


def test_repeated_and_nested_enums_are_named_by_their_place() -> None:
    refused = _refused({"capabilities": ["READ", "READ\u0000x"]}, admin_pb2.WorkKey())
    assert refused == {"capabilities[1]": "must be one of READ, LEASE, WRITE"}
    refused = _refused({"items": [{}, {"kind": 4294967297}]}, lane_pb2.Lane())
    assert list(refused) == ["items[1].kind"]


def _nest(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def test_json_depth() -> None:
    assert json_depth("x") == 0
    assert json_depth({}) == 1
    assert json_depth({"a": [1, {"b": []}]}) == 4
    assert json_depth(_nest(5000)) == 5000  # no recursion


def test_free_form_json_nests_at_most_the_limit() -> None:
    lane = lane_pb2.Lane()
    parse_json_into({"inputs": _nest(MAX_JSON_DEPTH)}, lane)
    assert lane.inputs.fields["a"].struct_value
    too_deep = f"must nest at most {MAX_JSON_DEPTH} levels of JSON objects and arrays"
    assert _refused({"inputs": _nest(MAX_JSON_DEPTH + 1)}, lane_pb2.Lane()) == {"inputs": too_deep}
    # Arrays count as levels too, and so does the depth of an item's inputs.
    mixed = {"l": [_nest(MAX_JSON_DEPTH - 1)]}
    refused = _refused({"items": [{"inputs": mixed}]}, lane_pb2.Lane())
    assert refused == {"items[0].inputs": too_deep}
    # The range where json_format read it but the coordinator could not decode it (33-48).
    for levels in (33, 40, 48, 60):
        assert list(_refused({"inputs": _nest(levels)}, lane_pb2.Lane())) == ["inputs"]


def test_an_unknown_field_nested_past_the_recursion_limit_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        parse_json_into({"bogus": _nest(5000)}, lane_pb2.Lane())
