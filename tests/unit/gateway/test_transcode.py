"""Transcoding without a server: requests built from path, query and body; responses to JSON."""

from __future__ import annotations

import pytest
from google.protobuf import duration_pb2, timestamp_pb2

from workcoord.api.v1 import admin_pb2, feed_pb2, lane_pb2, recovery_pb2, work_coordinator_pb2
from workcoord.gateway.routes import Route, load_routes
from workcoord.gateway.transcode import build_request, parse_json_body, response_to_json
from workcoord.kit.errors import InvalidArgument


def _route(operation_id: str) -> Route:
    for route in load_routes().routes:
        if route.operation_id == operation_id:
            return route
    raise AssertionError(operation_id)


def test_query_accepts_proto_and_json_names_enums_by_number_and_repeated() -> None:
    request = build_request(
        _route("AdminService_ListWorkKeys"),
        {},
        [("org_slug", "acme"), ("pageSize", "7")],
        None,
    )
    assert request == admin_pb2.ListWorkKeysRequest(org_slug="acme", page_size=7)
    lanes = build_request(
        _route("LaneService_ListLanes"), {"coordinator_id": "wc"}, [("state", "2")], None
    )
    assert lanes == lane_pb2.ListLanesRequest(coordinator_id="wc", state=lane_pb2.Lane.LIVE)


def test_optional_int64_query_param_for_the_feed() -> None:
    request = build_request(
        _route("FeedService_Watch"), {"coordinator_id": "wc"}, [("since", "38")], None
    )
    assert isinstance(request, feed_pb2.WatchRequest)
    assert request.HasField("since") and request.since == 38


def test_update_mask_is_filled_only_when_absent() -> None:
    route = _route("WorkCoordinatorService_UpdateWorkCoordinator")
    request = build_request(
        route,
        {"coordinator_id": "wc"},
        [],
        {"parentCoordinatorId": "g", "display_name": "x", "escalateAfter": "60s"},
    )
    assert isinstance(request, work_coordinator_pb2.UpdateWorkCoordinatorRequest)
    assert list(request.update_mask.paths) == [
        "parent_coordinator_id",
        "display_name",
        "escalate_after",
    ]
    assert request.work_coordinator.escalate_after == duration_pb2.Duration(seconds=60)
    explicit = build_request(
        route, {"coordinator_id": "wc"}, [("updateMask", "displayName")], {"displayName": "x"}
    )
    assert isinstance(explicit, work_coordinator_pb2.UpdateWorkCoordinatorRequest)
    assert list(explicit.update_mask.paths) == ["display_name"]


def test_bad_values_name_the_field_in_proto_form() -> None:
    route = _route("LaneService_CreateLane")
    with pytest.raises(InvalidArgument) as caught:
        build_request(route, {"coordinator_id": "wc"}, [], {"items": [{"kind": "NOPE"}]})
    assert [v.field for v in caught.value.field_violations] == ["lane.items[0].kind"]
    with pytest.raises(InvalidArgument) as caught:
        build_request(route, {"coordinator_id": "wc"}, [], {"items": [{"title": 5}]})
    assert [v.field for v in caught.value.field_violations] == ["lane.items.title"]
    with pytest.raises(InvalidArgument) as caught:
        build_request(route, {"coordinator_id": "wc"}, [], {"items": [{"dependsOn": "a"}]})
    assert [v.field for v in caught.value.field_violations] == ["lane.items[0].depends_on"]
    with pytest.raises(InvalidArgument) as caught:
        build_request(route, {"coordinator_id": "wc"}, [("lane.title", "x")], {})
    assert [v.field for v in caught.value.field_violations] == ["lane.title"]


def test_parse_json_body() -> None:
    assert parse_json_body(b"") == {}
    assert parse_json_body(b' {"a": 1} ') == {"a": 1}
    with pytest.raises(InvalidArgument):
        parse_json_body(b"{")
    with pytest.raises(InvalidArgument):
        parse_json_body(b"[" * 100_000)


def test_responses_follow_the_proto3_json_mapping() -> None:
    maintain = _route("RecoveryService_Maintain")
    report = recovery_pb2.MaintenanceReport(
        revision=12,
        duration=duration_pb2.Duration(seconds=5),
        start_time=timestamp_pb2.Timestamp(seconds=0),
    )
    assert response_to_json(maintain, recovery_pb2.MaintainResponse(report=report)) == {
        "revision": "12",
        "duration": "5s",
        "startTime": "1970-01-01T00:00:00Z",
    }
    # An unset response_body message answers {} rather than null.
    assert response_to_json(maintain, recovery_pb2.MaintainResponse()) == {}
    list_route = _route("LaneService_ListLanes")
    assert response_to_json(list_route, lane_pb2.ListLanesResponse()) == {}
