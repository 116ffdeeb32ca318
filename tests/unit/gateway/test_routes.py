"""The route table is derived from the google.api.http annotations."""

from __future__ import annotations

from google.api import annotations_pb2

from workcoord.gateway.routes import load_routes
from workcoord.kit.descriptors import api_file_descriptors


def _annotated_methods() -> set[str]:
    found = set()
    for file in api_file_descriptors():
        for service in file.services_by_name.values():
            for method in service.methods:
                handle: object = annotations_pb2.http
                if method.GetOptions().HasExtension(handle):  # type: ignore[arg-type]
                    found.add(method.full_name)
    return found


def test_every_annotated_rpc_has_exactly_one_route() -> None:
    table = load_routes()
    names = [route.method.full_name for route in table.routes]
    assert sorted(names) == sorted(_annotated_methods())
    assert len(names) == len(set(names))
    services = {route.method.containing_service.name for route in table.routes}
    assert services >= {
        "AdminService",
        "WorkCoordinatorService",
        "LaneService",
        "WorkerService",
        "FeedService",
        "RecoveryService",
        "MaintenanceService",
    }


def test_paths_use_json_names_and_keep_proto_fields() -> None:
    table = load_routes()
    by_id = {route.operation_id: route for route in table.routes}
    item = by_id["LaneService_GetItem"]
    assert item.path == "/v1/work-coordinators/{coordinatorId}/lanes/{laneId}/items/{itemId}"
    assert item.path_fields == ("coordinator_id", "lane_id", "item_id")
    assert item.http_method == "GET"
    assert item.response_body == "item"
    assert by_id["WorkerService_Lease"].body == "*"
    assert by_id["LaneService_CreateLane"].body == "lane"
    assert by_id["AdminService_UpdateSettings"].http_method == "PATCH"
    assert by_id["RecoveryService_Maintain"].upstream == "recovery"
    assert by_id["LaneService_GetItem"].upstream == "coordinator"
    assert by_id["FeedService_Watch"].streaming
    assert by_id["FeedService_Watch"].path == "/v1/work-coordinators/{coordinatorId}/ws"
    assert by_id["LaneService_GetItem"].full_method == "/workcoord.api.v1.LaneService/GetItem"


def test_resolve_decodes_variables_and_reports_allowed_methods() -> None:
    table = load_routes()
    found, _ = table.resolve("GET", "/v1/work-coordinators/a%20b/lanes/l1")
    assert found is not None
    assert found.route.operation_id == "LaneService_GetLane"
    assert found.path_values == {"coordinator_id": "a b", "lane_id": "l1"}
    # A literal segment wins over a variable at the same place.
    found, _ = table.resolve("GET", "/v1/work-coordinators/wc/view")
    assert found is not None and found.route.operation_id == "WorkCoordinatorService_GetView"
    found, allowed = table.resolve("PUT", "/v1/settings")
    assert found is None and sorted(allowed) == ["GET", "PATCH"]
    assert table.resolve("GET", "/v1/nothing") == (None, [])
    assert table.resolve("GET", "/v1/work-coordinators/wc/lanes/") == (None, [])
