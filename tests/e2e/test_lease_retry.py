"""``LeaseRequest.request_id``: a retry answers the same leases (ids and tokens) and writes
nothing, end to end through the SDK and the real processes."""

from __future__ import annotations

import pytest

from workcoord.client import WorkcoordClient, Worker

from .harness import System
from .rest import make_tenant

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.pg,
    pytest.mark.redis,
    pytest.mark.xdist_group(name="e2e"),
]


async def test_a_retry_with_the_same_request_id_returns_the_same_leases(system: System) -> None:
    tenant = make_tenant(system)
    try:
        tenant.create_lane(
            {
                "title": "retry",
                "template": "CUSTOM",
                "items": [
                    {"key": key, "kind": "TASK", "workerClass": "machine"} for key in ("a", "b")
                ],
            }
        )
        revision = tenant.revision()
        async with WorkcoordClient(system.coordinator_address, tenant.key["secret"]) as client:
            worker = Worker(client, tenant.coordinator_id, "retrier", "machine")
            first = await worker.lease(request_id="lost-reply-1")
            after_first = tenant.revision()
            again = await worker.lease(request_id="lost-reply-1")
        assert len(first) == 1
        assert [(x.lease_id, x.lease_token) for x in again] == [
            (x.lease_id, x.lease_token) for x in first
        ]
        assert after_first > revision
        assert tenant.revision() == after_first  # the retry wrote nothing
    finally:
        tenant.close()


def test_rest_request_id_answers_the_same_leases_and_an_admin_forgets_the_worker(
    system: System,
) -> None:
    tenant = make_tenant(system)
    try:
        tenant.create_lane(
            {
                "title": "retry over REST",
                "template": "CUSTOM",
                "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}],
            }
        )
        first = tenant.lease("machine", requestId="rest-call-1")
        after_first = tenant.revision()
        again = tenant.lease("machine", requestId="rest-call-1")
        assert len(first) == 1
        assert [(x["leaseId"], x["leaseToken"]) for x in again] == [
            (x["leaseId"], x["leaseToken"]) for x in first
        ]
        assert tenant.revision() == after_first
        # A worker holding a lease is not forgotten; once it holds none, an admin may.
        forget = f"{tenant.base}/workers/machine-1/forget"
        refused = tenant.admin.post(forget, json={})
        assert refused.status_code == 400, refused.text
        assert "machine-1" in refused.text
        assert tenant.lease_call(first[0], "release", reason="done").status_code == 200
        assert tenant.worker.post(forget, json={}).status_code == 403  # work keys never
        forgotten = tenant.admin.post(forget, json={})
        assert forgotten.status_code == 200, forgotten.text
        assert forgotten.json()["worker"]["workerId"] == "machine-1"
        workers = tenant.admin.get(f"{tenant.base}/workers").json().get("workers", [])
        assert [w["workerId"] for w in workers] == []
    finally:
        tenant.close()
