"""Users and roles, admin tokens and work keys: current roles on every request, revocation and
expiry on the very next request, keys that never inherit their creator's privileges."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import timedelta

from google.protobuf import field_mask_pb2, timestamp_pb2

from tests.integration.tenancy.world import (
    Permission,
    Role,
    create_global,
    grant,
    in_days,
    key_for,
    new_user,
    other_org_coordinator,
    set_parent,
)
from tests.support.harness import ALL_CAPABILITIES, Stack, expect_error, task, violated_fields
from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2
from workcoord.kit.errors import InvalidArgument, NotFound, PermissionDenied, Unauthenticated

A = admin_pb2
W = work_coordinator_pb2
Capability = A.WorkKey.Capability


def _get(cid: str) -> W.GetWorkCoordinatorRequest:
    return W.GetWorkCoordinatorRequest(coordinator_id=cid)


# ----------------------------------------------------------------------------- members


async def test_members_are_listed_and_removed_by_the_orgs_admins_only(stack: Stack) -> None:
    admin = await new_user(stack, role=Role.ORG_ADMIN)
    viewer = await new_user(stack, role=Role.ORG_VIEWER)
    other_org, _ = await other_org_coordinator(stack)
    outsider = await new_user(stack, org=other_org, role=Role.ORG_ADMIN)
    nobody = await new_user(stack)

    listing = A.ListOrgMembersRequest(org_slug=stack.org)
    for reader in (admin, viewer):
        members = (await reader.client.admin.ListOrgMembers(listing)).members
        assert {(m.user_id, m.role) for m in members} == {
            (admin.user_id, Role.ORG_ADMIN),
            (viewer.user_id, Role.ORG_VIEWER),
        }
        assert all(m.org_slug == stack.org and m.HasField("create_time") for m in members)
    for stranger in (outsider, nobody):
        await expect_error(stranger.client.admin.ListOrgMembers(listing), NotFound)
    await expect_error(stack.worker.admin.ListOrgMembers(listing), PermissionDenied)
    page = await stack.admin.admin.ListOrgMembers(
        A.ListOrgMembersRequest(org_slug=stack.org, page_size=1)
    )
    assert len(page.members) == 1 and page.next_page_token
    rest = await stack.admin.admin.ListOrgMembers(
        A.ListOrgMembersRequest(org_slug=stack.org, page_token=page.next_page_token)
    )
    assert len(rest.members) == 1 and not rest.next_page_token

    remove = A.RemoveOrgMemberRequest(org_slug=stack.org, user_id=viewer.user_id)
    await expect_error(viewer.client.admin.RemoveOrgMember(remove), PermissionDenied)
    await expect_error(outsider.client.admin.RemoveOrgMember(remove), NotFound)
    await expect_error(
        outsider.client.admin.AddOrgMember(
            A.AddOrgMemberRequest(
                org_slug=stack.org,
                member=A.OrgMember(user_id=outsider.user_id, role=Role.ORG_ADMIN),
            )
        ),
        NotFound,
    )
    # The viewer reads the org's work coordinator until removed; the very next call after the
    # removal no longer sees it.
    await viewer.client.coordinators.GetWorkCoordinator(_get(stack.cid))
    await admin.client.admin.RemoveOrgMember(remove)
    await expect_error(viewer.client.coordinators.GetWorkCoordinator(_get(stack.cid)), NotFound)
    await expect_error(admin.client.admin.RemoveOrgMember(remove), NotFound)


async def test_viewers_read_and_never_write(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"))
    viewer = await new_user(stack, role=Role.ORG_VIEWER)
    await viewer.client.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    await viewer.client.coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid))
    await expect_error(stack.create_lane(task("b"), client=viewer.client), PermissionDenied)
    await expect_error(
        viewer.client.lanes.PauseLane(
            lane_pb2.PauseLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
        ),
        PermissionDenied,
    )
    await expect_error(
        viewer.client.admin.CreateWorkKey(
            A.CreateWorkKeyRequest(
                work_key=A.WorkKey(
                    display_name="k", coordinator_ids=[stack.cid], capabilities=[Capability.READ]
                )
            )
        ),
        PermissionDenied,
    )


# ----------------------------------------------------------------------------- user tokens


async def test_revoked_and_expired_user_tokens_fail_on_the_next_request(stack: Stack) -> None:
    user = await new_user(stack, role=Role.ORG_ADMIN)
    other = await new_user(stack, role=Role.ORG_ADMIN)
    await user.client.coordinators.GetWorkCoordinator(_get(stack.cid))
    revoke = A.RevokeUserTokenRequest(user_id=user.user_id, token_id=user.token_id)
    # Only its user (or a platform admin) may revoke it; to anyone else it does not exist.
    await expect_error(other.client.admin.RevokeUserToken(revoke), NotFound)
    await expect_error(
        user.client.admin.RevokeUserToken(
            A.RevokeUserTokenRequest(user_id=user.user_id, token_id=other.token_id)
        ),
        NotFound,
    )
    revoked = await user.client.admin.RevokeUserToken(revoke)
    assert revoked.token.HasField("revoke_time") and revoked.token.token_id == user.token_id
    await expect_error(
        user.client.coordinators.GetWorkCoordinator(_get(stack.cid)), Unauthenticated
    )
    # Idempotent for an admin; the other user's token still works.
    await stack.admin.admin.RevokeUserToken(revoke)
    await other.client.coordinators.GetWorkCoordinator(_get(stack.cid))

    expiring = await new_user(stack, role=Role.ORG_VIEWER, expire_time=in_days(stack, 1))
    await expiring.client.coordinators.GetWorkCoordinator(_get(stack.cid))
    stack.clock.advance(timedelta(days=1))
    await expect_error(
        expiring.client.coordinators.GetWorkCoordinator(_get(stack.cid)), Unauthenticated
    )


async def test_other_kinds_of_credential_are_refused(stack: Stack) -> None:
    await stack.create_lane(task("a"))
    (lease,) = await stack.lease()
    for secret in (
        lease.lease_token,  # a lease token is no credential
        "wcadm_" + "A" * 43,
        "Basic dXNlcjpwYXNz",
        stack.key_secret + "x",
    ):
        await expect_error(
            stack.client(secret).coordinators.GetWorkCoordinator(_get(stack.cid)),
            Unauthenticated,
        )


# ----------------------------------------------------------------------------- work keys


async def test_work_keys_never_inherit_their_creators_privileges(stack: Stack) -> None:
    other = await stack.new_coordinator()
    parent = await create_global(stack)
    await set_parent(stack.admin, stack.cid, parent)
    lane = await stack.create_lane(task("a"))
    # Created by a platform admin, holding every capability on one coordinator.
    _, _, key = await key_for(stack, ALL_CAPABILITIES, [stack.cid])
    await key.coordinators.GetWorkCoordinator(_get(stack.cid))
    await expect_error(key.coordinators.GetWorkCoordinator(_get(other)), NotFound)
    await expect_error(key.coordinators.GetWorkCoordinator(_get(parent)), NotFound)
    forbidden: list[Awaitable[object]] = [
        key.coordinators.UpdateWorkCoordinator(
            W.UpdateWorkCoordinatorRequest(
                coordinator_id=stack.cid,
                work_coordinator=W.WorkCoordinator(scope=W.WorkCoordinator.ORG, display_name="x"),
                update_mask=field_mask_pb2.FieldMask(paths=["display_name"]),
            )
        ),
        key.admin.CreateWorkKey(
            A.CreateWorkKeyRequest(
                work_key=A.WorkKey(
                    display_name="child",
                    coordinator_ids=[stack.cid],
                    capabilities=[Capability.READ],
                )
            )
        ),
        grant(key, stack.cid, parent, [Permission.SUMMARY], in_days(stack, 1)),
        key.lanes.ApproveItem(
            lane_pb2.ApproveItemRequest(
                coordinator_id=stack.cid, lane_id=lane.lane_id, item_id=lane.items[0].item_id
            )
        ),
        key.admin.CreateOrg(A.CreateOrgRequest(org=A.Org(slug="keys-org"))),
        key.admin.ListUsers(A.ListUsersRequest()),
        key.admin.GetSettings(A.GetSettingsRequest()),
    ]
    for call in forbidden:
        await expect_error(call, PermissionDenied)


async def test_keys_are_made_by_an_admin_of_their_coordinators_org(stack: Stack) -> None:
    other_org, other_cid = await other_org_coordinator(stack)
    admin = await new_user(stack, role=Role.ORG_ADMIN)

    def make(client_org: str, cids: list[str]) -> A.CreateWorkKeyRequest:
        return A.CreateWorkKeyRequest(
            work_key=A.WorkKey(
                display_name="k",
                org_slug=client_org,
                coordinator_ids=cids,
                capabilities=[Capability.READ],
            )
        )

    made = await admin.client.admin.CreateWorkKey(make("", [stack.cid]))
    assert made.work_key.org_slug == stack.org  # taken from its coordinators
    got = await admin.client.admin.GetWorkKey(A.GetWorkKeyRequest(key_id=made.key_id))
    assert got.work_key.key_id == made.key_id and not got.work_key.HasField("revoke_time")
    # Another org's coordinator (named with either org) and an unknown id: all NOT_FOUND.
    for request in (
        make("", [other_cid]),
        make(stack.org, [other_cid]),
        make(other_org, [other_cid]),
        make("", ["wc_doesnotexist"]),
        make("", [stack.cid, other_cid]),
    ):
        await expect_error(admin.client.admin.CreateWorkKey(request), NotFound)
    # A platform admin may not mix orgs in one key, nor name the wrong org.
    err = await expect_error(
        stack.admin.admin.CreateWorkKey(make("", [stack.cid, other_cid])), InvalidArgument
    )
    assert violated_fields(err) == {"work_key.coordinator_ids"}
    err = await expect_error(
        stack.admin.admin.CreateWorkKey(make(other_org, [stack.cid])), InvalidArgument
    )
    assert violated_fields(err) == {"work_key.org_slug"}
    # GLOBAL keys: platform admins only.
    parent = await create_global(stack)
    await expect_error(admin.client.admin.CreateWorkKey(make("", [parent])), NotFound)
    global_key = await stack.admin.admin.CreateWorkKey(make("", [parent]))
    assert global_key.work_key.org_slug == ""


async def test_revoked_and_expired_keys_fail_on_the_next_request(stack: Stack) -> None:
    key_id, _, key = await key_for(stack, ALL_CAPABILITIES, [stack.cid])
    await key.coordinators.GetWorkCoordinator(_get(stack.cid))
    await stack.admin.admin.RevokeWorkKey(A.RevokeWorkKeyRequest(key_id=key_id))
    await expect_error(key.coordinators.GetWorkCoordinator(_get(stack.cid)), Unauthenticated)

    expiring = await stack.admin.admin.CreateWorkKey(
        A.CreateWorkKeyRequest(
            work_key=A.WorkKey(
                display_name="short",
                coordinator_ids=[stack.cid],
                capabilities=[Capability.READ],
                expire_time=in_days_ts(stack, 1 / 24),
            )
        )
    )
    client = stack.client(expiring.secret)
    await client.coordinators.GetWorkCoordinator(_get(stack.cid))
    stack.clock.advance(timedelta(hours=1))
    await expect_error(client.coordinators.GetWorkCoordinator(_get(stack.cid)), Unauthenticated)


def in_days_ts(stack: Stack, days: float) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(in_days(stack, days))
    return out
