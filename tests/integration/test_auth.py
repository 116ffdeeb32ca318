"""The authorization baseline over gRPC, and the platform switch."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from google.protobuf import field_mask_pb2
from sqlalchemy import update

from tests.support.harness import ALL_CAPABILITIES, Stack, create_work_key, expect_error, task
from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.coordinator.storage import schema
from workcoord.kit.errors import (
    CoordinationDisabled,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    WorkcoordError,
)
from workcoord.kit.secrets import hash_secret

Capability = admin_pb2.WorkKey.Capability


def get_coordinator(cid: str) -> work_coordinator_pb2.GetWorkCoordinatorRequest:
    return work_coordinator_pb2.GetWorkCoordinatorRequest(coordinator_id=cid)


async def test_missing_or_unknown_credential_is_unauthenticated(stack: Stack) -> None:
    for token in (None, "wck_" + "0" * 43, "garbage"):
        client = stack.client(token)
        await expect_error(
            client.coordinators.GetWorkCoordinator(get_coordinator(stack.cid)),
            Unauthenticated,
            "UNAUTHENTICATED",
        )
        await expect_error(stack.lease(client=client), Unauthenticated)


async def test_work_key_out_of_scope_sees_nothing(stack: Stack) -> None:
    other = await stack.new_coordinator()
    await stack.create_lane(task("a"), coordinator_id=other, client=stack.admin)
    for call in (
        stack.worker.coordinators.GetWorkCoordinator(get_coordinator(other)),
        stack.lease(coordinator_id=other),
        stack.create_lane(task("x"), coordinator_id=other),
        stack.worker.lanes.ListLanes(lane_pb2.ListLanesRequest(coordinator_id=other)),
    ):
        await expect_error(call, NotFound, "NOT_FOUND")
    # The same answer as for an id that does not exist at all: no existence oracle.
    err = await expect_error(
        stack.worker.coordinators.GetWorkCoordinator(get_coordinator("wc_doesnotexist")), NotFound
    )
    assert err.code.name == "NOT_FOUND"


async def test_capabilities_are_enforced(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    _, reader = await stack.work_key([Capability.READ])
    _, leaser = await stack.work_key([Capability.READ, Capability.LEASE])
    _, writer = await stack.work_key([Capability.READ, Capability.WRITE])

    await reader.coordinators.GetWorkCoordinator(get_coordinator(stack.cid))
    await expect_error(stack.lease(client=reader), PermissionDenied, "PERMISSION_DENIED")
    await expect_error(stack.lease(client=writer), PermissionDenied)
    await expect_error(stack.create_lane(task("b"), client=reader), PermissionDenied)
    await expect_error(stack.create_lane(task("b"), client=leaser), PermissionDenied)
    (lease,) = await stack.lease(client=leaser)
    await stack.create_lane(task("b"), client=writer)
    # A worker write needs LEASE too.
    await expect_error(
        writer.workers.Release(
            worker_pb2.ReleaseRequest(
                coordinator_id=stack.cid, lease_id=lease.lease_id, lease_token=lease.lease_token
            )
        ),
        PermissionDenied,
    )


async def test_revoked_key_fails_on_the_very_next_call(stack: Stack) -> None:
    key_id, client = await stack.work_key()
    await client.coordinators.GetWorkCoordinator(get_coordinator(stack.cid))
    await stack.admin.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=key_id))
    await expect_error(
        client.coordinators.GetWorkCoordinator(get_coordinator(stack.cid)),
        Unauthenticated,
        "UNAUTHENTICATED",
    )
    await expect_error(stack.lease(client=client), Unauthenticated)


async def test_a_cached_principal_never_outlives_a_change_made_anywhere(stack: Stack) -> None:
    """Principals are reused while the credentials epoch stands still; a change made behind
    this coordinator's back (another replica, an older release, an operator in SQL) moves the
    epoch through the database's triggers, so it still applies on the very next request."""
    made = await create_work_key(stack.admin, [stack.cid], ALL_CAPABILITIES, org=stack.org)
    key_id, secret, client = made.key_id, made.secret, stack.client(made.secret)
    cache = stack.running.engine.principals
    await client.coordinators.GetWorkCoordinator(get_coordinator(stack.cid))
    assert hash_secret(secret) in cache  # resolved once, kept
    await client.coordinators.GetWorkCoordinator(get_coordinator(stack.cid))  # from the cache

    # Narrowed in the database directly: the next call already sees it.
    async with stack.running.store.engine.begin() as conn:
        await conn.execute(
            update(schema.work_keys)
            .where(schema.work_keys.c.key_id == key_id)
            .values(coordinator_ids=[])
        )
    await expect_error(client.coordinators.GetWorkCoordinator(get_coordinator(stack.cid)), NotFound)
    # Revoked in the database directly: the next call is refused.
    async with stack.running.store.engine.begin() as conn:
        await conn.execute(
            update(schema.work_keys)
            .where(schema.work_keys.c.key_id == key_id)
            .values(coordinator_ids=[stack.cid], revoke_time=stack.clock.now())
        )
    await expect_error(
        client.coordinators.GetWorkCoordinator(get_coordinator(stack.cid)), Unauthenticated
    )


async def test_a_work_key_can_never_administer_or_decide(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"))
    item = lane.items[0]
    forbidden: list[Awaitable[Any]] = [
        stack.worker.admin.CreateWorkKey(
            admin_pb2.CreateWorkKeyRequest(
                work_key=admin_pb2.WorkKey(
                    display_name="escalate",
                    org_slug=stack.org,
                    coordinator_ids=[stack.cid],
                    capabilities=[Capability.READ],
                )
            )
        ),
        stack.worker.admin.UpdateSettings(
            admin_pb2.UpdateSettingsRequest(
                settings=admin_pb2.Settings(work_coordinator_enabled=False)
            )
        ),
        stack.worker.lanes.ApproveItem(
            lane_pb2.ApproveItemRequest(
                coordinator_id=stack.cid, lane_id=item.lane_id, item_id=item.item_id
            )
        ),
        stack.worker.lanes.RetryItem(
            lane_pb2.RetryItemRequest(
                coordinator_id=stack.cid, lane_id=item.lane_id, item_id=item.item_id
            )
        ),
        stack.worker.coordinators.UpdateWorkCoordinator(
            work_coordinator_pb2.UpdateWorkCoordinatorRequest(
                coordinator_id=stack.cid,
                work_coordinator=work_coordinator_pb2.WorkCoordinator(
                    scope=work_coordinator_pb2.WorkCoordinator.ORG,
                    org_slug=stack.org,
                    class_capacity={"machine": 99},
                ),
                update_mask=field_mask_pb2.FieldMask(paths=["class_capacity"]),
            )
        ),
    ]
    for call in forbidden:
        await expect_error(call, PermissionDenied, "PERMISSION_DENIED")
    settings = await stack.admin.admin.GetSettings(admin_pb2.GetSettingsRequest())
    assert settings.settings.work_coordinator_enabled


async def test_platform_switch(isolated_stack: Stack) -> None:
    stack = isolated_stack
    lane = await stack.create_lane(task("a"), task("b"))
    (held,) = await stack.lease()

    async def switch(enabled: bool) -> None:
        response = await stack.admin.admin.UpdateSettings(
            admin_pb2.UpdateSettingsRequest(
                settings=admin_pb2.Settings(work_coordinator_enabled=enabled)
            )
        )
        assert response.settings.work_coordinator_enabled is enabled

    await switch(False)
    work_calls: list[Awaitable[Any]] = [
        stack.lease(),
        stack.start(held),
        stack.create_lane(task("c")),
        stack.worker.lanes.GetLane(
            lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
        ),
    ]
    for call in work_calls:
        err: WorkcoordError = await expect_error(
            call, CoordinationDisabled, "COORDINATION_DISABLED"
        )
        assert err.code.name == "UNAVAILABLE"
    # Administration keeps working, so the switch can be turned back on.
    await stack.admin.coordinators.GetWorkCoordinator(get_coordinator(stack.cid))
    await stack.admin.admin.GetSettings(admin_pb2.GetSettingsRequest())
    report = (await stack.maintain()).report
    assert report.skipped_disabled

    await switch(True)
    # Nothing was lost while it was off.
    assert (await stack.get_item(held.item)).state == lane_pb2.Item.LEASED
    await stack.start(held)
    await stack.complete(held)
    (second,) = await stack.lease()
    assert second.item.key == "b"
