"""Free-form JSON (``Struct`` fields such as a lane's ``inputs``) is checked at every depth.

NaN, infinities (``1e400`` parses to one) and NUL characters used to get through: PostgreSQL
answered 500 on them while SQLite stored them. Both must refuse alike, at validation.
"""

from __future__ import annotations

import json
import math

import pytest
from google.protobuf import json_format

from workcoord.api.v1 import lane_pb2
from workcoord.kit import validation


def _lane_with_inputs(inputs_json: str) -> lane_pb2.CreateLaneRequest:
    request = lane_pb2.CreateLaneRequest(
        coordinator_id="wc_a", lane=lane_pb2.Lane(title="t", template=lane_pb2.Lane.CUSTOM)
    )
    # Python's json reads NaN, Infinity and 1e400 (as inf), as the gateway's parser does.
    json_format.ParseDict(json.loads(inputs_json), request.lane.inputs)
    return request


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ('{"x": NaN}', "lane.inputs[x]"),
        ('{"x": Infinity}', "lane.inputs[x]"),
        ('{"x": -Infinity}', "lane.inputs[x]"),
        ('{"x": 1e400}', "lane.inputs[x]"),
        ('{"a": {"b": [1, {"c": 1e999}]}}', "lane.inputs[a][b][1][c]"),
        ('{"x": "a\\u0000b"}', "lane.inputs[x]"),
        ('{"a": {"b": ["ok", "\\u0000"]}}', "lane.inputs[a][b][1]"),
        ('{"a": {"k\\u0000": 1}}', "lane.inputs[a][k\x00]"),
    ],
)
def test_bad_json_values_are_refused_naming_their_place(inputs: str, field: str) -> None:
    violations = validation.validate(_lane_with_inputs(inputs))
    assert [v.field for v in violations] == [field]


def test_ordinary_json_passes() -> None:
    request = _lane_with_inputs('{"a": {"b": [1, 2.5, "x", true, null, {"c": -1e300}]}}')
    assert validation.validate(request) == []


def test_many_bad_values_are_reported_a_few_at_a_time() -> None:
    inputs = json.dumps({f"k{i}": math.inf for i in range(50)}).replace("Infinity", "1e400")
    assert len(validation.validate(_lane_with_inputs(inputs))) == 5
