"""The three services as separate processes, driven through the gateway's REST routes with the
request and response shapes of the README's worked example."""

from __future__ import annotations

from datetime import datetime

import httpx

from tests.support.rest import (
    JSON,
    error_info,
    expect_status,
    field_violations,
    items_by_key,
    ok,
    parse_time,
    run_identity,
)

from .harness import ON_THE_SYSTEM, System
from .rest import Tenant, contains_key, make_tenant

pytestmark = ON_THE_SYSTEM

DEFAULT_CAPACITY = {"codex": 4, "claude": 4, "machine": 2, "agent": 4, "person": 1}


def test_org_coordinator_and_work_key_have_the_documented_shapes(system: System) -> None:
    tenant = make_tenant(system)
    try:
        coordinator = tenant.coordinator
        assert coordinator["coordinatorId"]
        assert coordinator["scope"] == "ORG"
        assert coordinator["orgSlug"] == tenant.org_slug
        assert coordinator["enabled"] is True
        assert coordinator["revision"] == "1"  # int64 as a string
        assert coordinator["classCapacity"] == DEFAULT_CAPACITY
        assert coordinator["retryPolicy"] == {
            "initialInterval": "5s",
            "backoffCoefficient": 3,
            "maximumInterval": "300s",
            "maximumAttempts": 4,
        }

        key = tenant.key
        assert key["keyId"]
        assert key["secret"].startswith("wck_")
        # The secret is shown once: neither GET nor LIST ever carries it.
        shown = ok(tenant.admin.get(f"/v1/work-keys/{key['keyId']}"))
        assert shown["keyId"] == key["keyId"]
        assert sorted(shown["capabilities"]) == ["LEASE", "READ", "WRITE"]
        assert shown["coordinatorIds"] == [tenant.coordinator_id]
        assert key["secret"] not in str(shown)
        assert not contains_key(shown, "secret")
        listed = ok(tenant.admin.get("/v1/work-keys"))
        assert key["secret"] not in str(listed)
        assert not contains_key(listed, "secret")
        # The key works on its own coordinator.
        assert ok(tenant.worker.get(tenant.base))["coordinatorId"] == tenant.coordinator_id
    finally:
        tenant.close()


def test_custom_lane_runs_to_done_through_rest(tenant: Tenant) -> None:
    lane = tenant.create_lane()
    lane_id = lane["laneId"]
    assert lane["state"] == "ACTIVE"
    assert lane["nextAction"]
    items = items_by_key(lane)
    assert {key: item["state"] for key, item in items.items()} == {
        "a": "QUEUED",
        "b": "QUEUED",
        "c": "WAITING",
    }
    assert all(item["itemId"] for item in items.values())
    assert not contains_key(lane, "leaseToken")

    # c waits on its dependencies, and `why` says so.
    why_c = ok(tenant.worker.get(f"{tenant.base}/why", params={"itemId": items["c"]["itemId"]}))
    assert why_c["state"] == "WAITING"
    assert [gate["gate"] for gate in why_c["gates"]] == ["DEPENDENCIES"]
    assert why_c["gates"][0]["since"]

    # Nothing is ready for a person yet.
    assert tenant.lease("person") == []

    leases = tenant.lease("machine")
    assert sorted(lease["item"]["key"] for lease in leases) == ["a", "b"]
    for lease in leases:
        assert lease["leaseId"] and lease["leaseToken"].startswith("wcl_")
        assert lease["attempt"] == 1
        assert parse_time(lease["leaseExpireTime"]) > datetime.now(
            parse_time(lease["leaseExpireTime"]).tzinfo
        )
        assert lease["item"]["kind"] == "TASK"
        assert lease["item"]["workerClass"] == "machine"
        assert lease["item"]["laneId"] == lane_id
        # The worker holding the lease gets the lane's inputs.
        assert lease["item"]["inputs"] == {"repo": "acme/parser", "hint": "private input"}

    first, second = sorted(leases, key=lambda lease: str(lease["item"]["key"]))
    identity = run_identity(pid=4242, hostname="build-3")
    started = ok(tenant.lease_call(first, "start", runIdentity=identity))
    assert started["status"] == "RUNNING"
    beat = ok(tenant.lease_call(first, "heartbeat", progress="tests 40/120"))
    assert set(beat) == {"leaseExpireTime"}
    assert parse_time(beat["leaseExpireTime"]) >= parse_time(first["leaseExpireTime"])
    evidence: JSON = {
        "summary": "fixed the flaky parser",
        "links": ["https://ci.example.test/runs/1"],
        "checks": [{"name": "pytest", "status": "PASSED"}],
    }
    ok(tenant.lease_call(first, "complete", evidence=evidence))

    # c still waits for b.
    assert tenant.item(lane_id, items["c"]["itemId"])["state"] == "WAITING"
    tenant.start(second)
    tenant.complete(second)

    # Both dependencies succeeded: c is queued and leasable by a person.
    assert tenant.item(lane_id, items["c"]["itemId"])["state"] == "QUEUED"
    [lease_c] = tenant.lease("person", runIdentity=run_identity(engine="human"))
    assert lease_c["item"]["key"] == "c"
    assert lease_c["status"] == "RUNNING"  # a Lease carrying a runIdentity starts at once
    tenant.complete(lease_c, "reviewed")

    done = tenant.lane(lane_id)
    assert done["state"] == "DONE"
    assert {item["state"] for item in done["items"]} == {"SUCCEEDED"}

    # The item: attempts with the run identity and principal, evidence, never a lease token.
    item_a = tenant.item(lane_id, items["a"]["itemId"])
    assert item_a["state"] == "SUCCEEDED"
    assert item_a["attemptCount"] == 1
    assert item_a["evidence"]["summary"] == "fixed the flaky parser"
    assert item_a["evidence"]["checks"] == [{"name": "pytest", "status": "PASSED"}]
    [attempt] = item_a["attempts"]
    assert attempt["leaseId"] == first["leaseId"]
    assert attempt["attempt"] == 1
    assert attempt["status"] == "COMPLETED"
    assert attempt["workerId"] == "machine-1"
    assert attempt["principal"] == f"key:{tenant.key['keyId']}"
    assert attempt["leaseExpireTime"]
    assert attempt["runIdentity"]["pid"] == "4242"  # int64 as a string
    assert attempt["runIdentity"]["hostname"] == "build-3"
    assert attempt["runIdentity"]["worktreePath"] == "/srv/lanes/parser"
    assert not contains_key(item_a, "leaseToken")
    assert first["leaseToken"] not in str(item_a)

    # The event log: gap-free revisions across pages, ending at the coordinator's revision,
    # never carrying inputs or lease tokens.
    events = tenant.events(page_size=3)
    revisions = [int(event["revision"]) for event in events]
    assert revisions == list(range(1, len(events) + 1))
    assert revisions[-1] == tenant.revision()
    assert events[0]["type"] == "COORDINATOR_CREATED"
    types = [event["type"] for event in events]
    for expected in ("LANE_CREATED", "ITEM_LEASED", "ITEM_STARTED", "ITEM_SUCCEEDED"):
        assert expected in types
    assert types.count("ITEM_SUCCEEDED") == 3
    text = str(events)
    assert "private input" not in text
    assert not contains_key(events, "leaseToken")
    for lease in (first, second, lease_c):
        assert lease["leaseToken"] not in text
    # Resuming from a revision returns exactly the rest.
    middle = revisions[len(revisions) // 2]
    assert tenant.events(page_size=2, since=middle) == events[middle:]


def test_why_names_capacity_and_exclusive_gates(tenant: Tenant) -> None:
    """c holds the only person slot and the exclusive key: other work waits behind them."""
    lane = tenant.create_lane()
    for lease in tenant.lease("machine"):
        tenant.start(lease)
        tenant.complete(lease)
    [lease_c] = tenant.lease("person", runIdentity=run_identity())
    other = tenant.create_lane(
        {
            "title": "Second",
            "template": "CUSTOM",
            "items": [
                {"key": "p", "kind": "TASK", "workerClass": "person"},
                {
                    "key": "x",
                    "kind": "TASK",
                    "workerClass": "machine",
                    "exclusiveKey": "repo:parser",
                },
            ],
        }
    )
    waiting = items_by_key(other)
    assert tenant.lease("person") == []
    assert tenant.lease("machine") == []

    def gates(item_id: str) -> dict[str, str]:
        why = ok(tenant.worker.get(f"{tenant.base}/why", params={"itemId": item_id}))
        assert why["state"] == "QUEUED"
        return {gate["gate"]: gate["detail"] for gate in why["gates"]}

    capacity = gates(waiting["p"]["itemId"])
    assert "CAPACITY" in capacity
    assert "1/1" in capacity["CAPACITY"]
    assert lease_c["leaseId"] in capacity["CAPACITY"]
    assert "EXCLUSIVE" in gates(waiting["x"]["itemId"])

    # Completing c frees both.
    tenant.complete(lease_c)
    assert tenant.lane(lane["laneId"])["state"] == "DONE"
    assert [lease["item"]["key"] for lease in tenant.lease("person")] == ["p"]
    assert [lease["item"]["key"] for lease in tenant.lease("machine")] == ["x"]


def test_patch_updates_only_what_the_body_or_mask_names(tenant: Tenant) -> None:
    """Updates take a body naming what changes (no create-only fields), an optional
    ``updateMask`` and an ``etag``; a stale etag is a 409."""
    before = ok(tenant.admin.get(tenant.base))
    renamed = ok(tenant.admin.patch(tenant.base, json={"displayName": "Renamed"}))
    assert renamed["displayName"] == "Renamed"
    assert renamed["scope"] == "ORG"
    assert renamed["classCapacity"] == DEFAULT_CAPACITY
    assert renamed["etag"] != before["etag"]

    resized = ok(
        tenant.admin.patch(
            tenant.base,
            params={"updateMask": "classCapacity"},
            json={
                "classCapacity": {**DEFAULT_CAPACITY, "machine": 3},
                "displayName": "ignored: not in the mask",
                "etag": renamed["etag"],
            },
        )
    )
    assert resized["classCapacity"]["machine"] == 3
    assert resized["displayName"] == "Renamed"
    assert ok(tenant.admin.get(tenant.base))["classCapacity"]["machine"] == 3

    stale = tenant.admin.patch(
        tenant.base,
        params={"updateMask": "displayName"},
        json={"displayName": "lost update", "etag": renamed["etag"]},
    )
    expect_status(stale, 409, 10, "ETAG_MISMATCH")
    immutable = tenant.admin.patch(tenant.base, json={"scope": "GLOBAL"})
    expect_status(immutable, 400, 3, "INVALID_ARGUMENT")
    # A work key never configures, whatever its capabilities.
    denied = tenant.worker.patch(tenant.base, json={"displayName": "by a key"})
    expect_status(denied, 403, 7, "PERMISSION_DENIED")
    assert ok(tenant.admin.get(tenant.base))["displayName"] == "Renamed"


# --------------------------------------------------------------------------- errors


def test_bad_input_is_a_400_status_naming_every_field(tenant: Tenant) -> None:
    response = tenant.worker.post(
        f"{tenant.base}/leases",
        json={"workerId": "w1", "workerClass": "machine", "maxItems": 0, "leaseSeconds": 3},
    )
    body = expect_status(response, 400, 3, "INVALID_ARGUMENT")
    violations = field_violations(body)
    assert violations["lease_seconds"] == "must be between 5 and 300"
    assert "max_items" in violations
    assert set(body) == {"code", "message", "details"}

    # An unknown JSON field is named too.
    response = tenant.worker.post(
        f"{tenant.base}/leases",
        json={"workerId": "w1", "workerClass": "machine", "maxItems": 1, "leaseSecs": 30},
    )
    assert "leaseSecs" in field_violations(expect_status(response, 400, 3, "INVALID_ARGUMENT"))

    # Bad items inside a lane: the path names the item.
    response = tenant.worker.post(
        f"{tenant.base}/lanes",
        json={
            "title": "bad",
            "template": "CUSTOM",
            "items": [{"key": "a", "kind": "TASK", "workerClass": "Not A Class"}],
        },
    )
    violations = field_violations(expect_status(response, 400, 3, "INVALID_ARGUMENT"))
    assert any("worker_class" in name for name in violations), violations

    # Malformed JSON is bad input as well, never a 500.
    response = tenant.worker.post(
        f"{tenant.base}/leases",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    expect_status(response, 400, 3, "INVALID_ARGUMENT")


def test_credentials_and_tenancy(system: System, tenant: Tenant) -> None:
    with httpx.Client(base_url=system.gateway_url, timeout=30.0) as anonymous:
        expect_status(anonymous.get(tenant.base), 401, 16, "UNAUTHENTICATED")
        expect_status(
            anonymous.post(
                f"{tenant.base}/leases",
                json={
                    "workerId": "w1",
                    "workerClass": "machine",
                    "maxItems": 1,
                    "leaseSeconds": 30,
                },
            ),
            401,
            16,
            "UNAUTHENTICATED",
        )
        expect_status(
            anonymous.get(tenant.base, headers={"Authorization": "Bearer wck_not-a-real-key"}),
            401,
            16,
            "UNAUTHENTICATED",
        )

    # Another tenant's key cannot see this coordinator: 404, not 403 (no existence oracle).
    stranger = make_tenant(system)
    try:
        expect_status(stranger.worker.get(tenant.base), 404, 5, "NOT_FOUND")
        expect_status(
            stranger.worker.post(
                f"{tenant.base}/leases",
                json={
                    "workerId": "w1",
                    "workerClass": "machine",
                    "maxItems": 1,
                    "leaseSeconds": 30,
                },
            ),
            404,
            5,
            "NOT_FOUND",
        )
        expect_status(
            stranger.worker.get(f"{tenant.base}/events", params={"sinceRevision": 0}),
            404,
            5,
            "NOT_FOUND",
        )
        # The same answer as for an id that does not exist at all.
        expect_status(
            stranger.worker.get("/v1/work-coordinators/wc_doesnotexist000000"), 404, 5, "NOT_FOUND"
        )
    finally:
        stranger.close()


def test_expired_lease_is_lost_with_409(system: System, tenant: Tenant) -> None:
    tenant.create_lane()
    lease, _ = tenant.lease("machine", lease_seconds=5)
    tenant.start(lease)
    system.advance_clock(6)

    # Fenced by the server clock even before recovery has swept it.
    body = expect_status(
        tenant.lease_call(lease, "heartbeat", progress="still here"), 409, 10, "LEASE_LOST"
    )
    assert error_info(body)["metadata"] == {"cause": "expired"}
    expect_status(
        tenant.lease_call(lease, "complete", evidence={"summary": "late"}), 409, 10, "LEASE_LOST"
    )

    # A wrong token is lost too, whatever the lease's state.
    forged = {**lease, "leaseToken": "wcl_forged"}
    expect_status(tenant.lease_call(forged, "heartbeat"), 409, 10, "LEASE_LOST")


def test_platform_switch_disables_work_calls_with_503(system: System, tenant: Tenant) -> None:
    tenant.create_lane()
    settings = ok(tenant.admin.get("/v1/settings"))
    assert settings["workCoordinatorEnabled"] is True
    try:
        switched = ok(tenant.admin.patch("/v1/settings", json={"workCoordinatorEnabled": False}))
        assert switched["workCoordinatorEnabled"] is False
        body = expect_status(
            tenant.worker.post(
                f"{tenant.base}/leases",
                json={
                    "workerId": "w1",
                    "workerClass": "machine",
                    "maxItems": 1,
                    "leaseSeconds": 30,
                },
            ),
            503,
            14,
            "COORDINATION_DISABLED",
        )
        assert body["message"]
        # Administration stays available so the switch can be turned back on.
        assert ok(tenant.admin.get("/v1/settings"))["workCoordinatorEnabled"] is False
    finally:
        restored = ok(tenant.admin.patch("/v1/settings", json={"workCoordinatorEnabled": True}))
    assert restored["workCoordinatorEnabled"] is True
    # Nothing was lost: the queued work is leased as soon as the switch is back on.
    assert len(tenant.lease("machine")) == 2


# --------------------------------------------------------------------------- recovery


def test_maintain_requeues_an_expired_lease(system: System, tenant: Tenant) -> None:
    lane = tenant.create_lane()
    leases = tenant.lease("machine", lease_seconds=10)
    assert len(leases) == 2
    expiring, kept = leases
    tenant.start(expiring)
    tenant.start(kept)
    system.advance_clock(8)
    ok(tenant.lease_call(kept, "heartbeat"))  # extends by 10 s from the moved clock
    system.advance_clock(3)  # expiring is now 1 s past its expiry; kept is alive

    report = ok(tenant.admin.post(f"{tenant.base}/maintain", json={}))
    assert report["expiredAttempts"] == 1
    assert report["requeued"] == 1
    assert report.get("deadLettered", 0) == 0
    assert report["coordinatorId"] == tenant.coordinator_id
    assert int(report["revision"]) == tenant.revision()

    item = tenant.item(lane["laneId"], expiring["item"]["itemId"])
    assert item["state"] == "QUEUED"
    assert item["notBefore"]  # retried with backoff
    [attempt] = item["attempts"]
    assert attempt["status"] == "DEAD"  # the expired attempt is over; the item lives on
    assert attempt["endTime"]
    types = [event["type"] for event in tenant.events()]
    assert "ATTEMPT_EXPIRED" in types
    why = ok(tenant.worker.get(f"{tenant.base}/why", params={"itemId": item["itemId"]}))
    assert "BACKOFF" in [gate["gate"] for gate in why["gates"]]

    # A second pass finds nothing more to do (idempotent), and the live lease still works.
    again = ok(tenant.admin.post(f"{tenant.base}/maintain", json={}))
    assert again.get("expiredAttempts", 0) == 0
    assert again.get("requeued", 0) == 0
    tenant.complete(kept)

    # After the backoff (5 s ± 10 %) the item is leased again as attempt 2.
    system.advance_clock(6)
    [retry] = tenant.lease("machine")
    assert retry["item"]["itemId"] == expiring["item"]["itemId"]
    assert retry["attempt"] == 2

    status = ok(tenant.admin.get("/v1/recovery/status"))
    assert status["leader"] is True
    assert status["leaderId"] == status["replicaId"]
    assert any(entry["coordinatorId"] == tenant.coordinator_id for entry in status["coordinators"])


def test_maintain_and_recovery_status_need_authority(system: System, tenant: Tenant) -> None:
    with httpx.Client(base_url=system.gateway_url, timeout=30.0) as anonymous:
        expect_status(
            anonymous.post(f"{tenant.base}/maintain", json={}), 401, 16, "UNAUTHENTICATED"
        )
        expect_status(anonymous.get("/v1/recovery/status"), 401, 16, "UNAUTHENTICATED")
    response = tenant.worker.get("/v1/recovery/status")
    expect_status(response, 403, 7, "PERMISSION_DENIED")


# --------------------------------------------------------------------------- OpenAPI


def test_openapi_lists_every_annotated_route(system: System) -> None:
    from google.api import annotations_pb2, http_pb2

    from workcoord.api.v1 import (
        admin_pb2,
        feed_pb2,
        lane_pb2,
        maintenance_pb2,
        recovery_pb2,
        work_coordinator_pb2,
        worker_pb2,
    )

    document = ok(httpx.get(f"{system.gateway_url}/v1/openapi.json", timeout=30.0))
    assert document["openapi"].startswith("3.")
    paths: dict[str, JSON] = document["paths"]
    assert "post" in paths["/v1/work-coordinators/{coordinatorId}/leases"]
    assert "post" in paths["/v1/work-coordinators/{coordinatorId}/maintain"]
    assert "get" in paths["/v1/recovery/status"]

    expected: set[tuple[str, str]] = set()
    for module in (
        admin_pb2,
        feed_pb2,
        lane_pb2,
        maintenance_pb2,
        recovery_pb2,
        work_coordinator_pb2,
        worker_pb2,
    ):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                options = method.GetOptions()
                if not options.HasExtension(annotations_pb2.http):
                    continue
                rule: http_pb2.HttpRule = options.Extensions[annotations_pb2.http]
                verb = rule.WhichOneof("pattern")
                assert verb is not None and verb != "custom"
                expected.add((verb, _json_path(getattr(rule, verb))))
    assert len(expected) > 40
    listed = {(verb, path) for path, operations in paths.items() for verb in operations}
    missing = expected - listed
    assert not missing, sorted(missing)


def _json_path(template: str) -> str:
    """``/v1/x/{coordinator_id}`` → ``/v1/x/{coordinatorId}`` (path parameters by JSON name)."""
    parts = []
    for segment in template.split("/"):
        if segment.startswith("{") and segment.endswith("}"):
            head, *rest = segment[1:-1].split("_")
            segment = "{" + head + "".join(word.title() for word in rest) + "}"
        parts.append(segment)
    return "/".join(parts)
