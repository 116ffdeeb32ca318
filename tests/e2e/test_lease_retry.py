"""``LeaseRequest.request_id``: a retry answers the same leases. SERVER SIDE PENDING.

Written ahead of the coordinator's side (see tests/support/pending.py) and marked as an expected
failure, strictly: the day the coordinator implements it, this test passes, the strict marker
turns that into a failure, and whoever landed it removes the marker.
"""

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


@pytest.mark.xfail(strict=True, reason="server side pending: Lease does not yet honour request_id")
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
