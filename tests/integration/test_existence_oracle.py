"""A caller who may not see a work coordinator learns nothing about it: a worker write on
another org's *switched-off* coordinator answers NOT_FOUND, exactly as an unknown id does.

Before, the group of worker writes checked "coordination on" before authorizing, so such a
call answered 503 COORDINATION_DISABLED (and so revealed that the id exists). Both backends.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from google.protobuf import field_mask_pb2

from tests.integration.tenancy.world import other_org_coordinator
from tests.support.harness import Stack, create_work_key, expect_error
from workcoord.api.v1 import work_coordinator_pb2, worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import CoordinationDisabled, NotFound

WC = work_coordinator_pb2


async def _switch_off(stack: Stack, coordinator_id: str) -> None:
    await stack.admin.coordinators.UpdateWorkCoordinator(
        WC.UpdateWorkCoordinatorRequest(
            coordinator_id=coordinator_id,
            work_coordinator=WC.WorkCoordinator(scope=WC.WorkCoordinator.ORG, enabled=False),
            update_mask=field_mask_pb2.FieldMask(paths=["enabled"]),
        )
    )


def _writes(client: WorkcoordClient, coordinator_id: str) -> list[Awaitable[Any]]:
    lease_id, token = "ls_nothing", "t"
    return [
        client.workers.Heartbeat(
            worker_pb2.HeartbeatRequest(
                coordinator_id=coordinator_id, lease_id=lease_id, lease_token=token
            )
        ),
        client.workers.Complete(
            worker_pb2.CompleteRequest(
                coordinator_id=coordinator_id, lease_id=lease_id, lease_token=token
            )
        ),
    ]


async def test_a_switched_off_coordinator_of_another_org_is_not_found(stack: Stack) -> None:
    org, theirs = await other_org_coordinator(stack)
    await _switch_off(stack, theirs)
    for call in _writes(stack.worker, theirs):
        await expect_error(call, NotFound)
    for call in _writes(stack.worker, "wc_unknown"):
        await expect_error(call, NotFound)

    # Their own worker still learns that coordination is off.
    key = await create_work_key(stack.admin, [theirs], org=org)
    own = stack.client(key.secret)
    for call in _writes(own, theirs):
        await expect_error(call, CoordinationDisabled)
