"""A waiting ``Lease`` claims with the authority its caller has at the moment of the claim.

Before, a long-poll reused the principal resolved when the call began: a work key revoked (or
an org admin removed from the org) while its Lease waited was handed the next ready item, with
its private inputs, about a second later, and the log recorded ITEM_LEASED by it. Now every
look after a wait resolves the caller again: a credential gone is UNAUTHENTICATED, a lost role
or scope PERMISSION_DENIED, and nothing is leased. Runs on both backends.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.tenancy.world import login, new_user, session_metadata, sessions
from tests.support.harness import Stack, event_type, expect_error, task
from workcoord.api.v1 import admin_pb2, lane_pb2, session_pb2, worker_pb2
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import PermissionDenied, Unauthenticated

WAIT = 60  # the longest a Lease may wait: the call must end long before, refused
SECRET = {"deploy_token": "only-for-whoever-leases-this"}


async def waiting_lease(
    client: WorkcoordClient,
    stack: Stack,
    worker_id: str,
    metadata: tuple[tuple[str, str], ...] | None = None,
) -> asyncio.Task[worker_pb2.LeaseResponse]:
    """A Lease of ``client`` for ``worker_id`` that waits up to WAIT, once it waits."""

    async def lease() -> worker_pb2.LeaseResponse:
        request = worker_pb2.LeaseRequest(
            coordinator_id=stack.cid,
            worker_id=worker_id,
            worker_class="machine",
            max_items=1,
            lease_seconds=30,
            wait_seconds=WAIT,
        )
        response: worker_pb2.LeaseResponse = await client.workers.Lease(request, metadata=metadata)
        return response

    waiting = asyncio.create_task(lease())
    await stack.until_asked(worker_id, waiting)
    return waiting


async def assert_nothing_leased(stack: Stack, item: lane_pb2.Item) -> None:
    """The item is still queued and no ITEM_LEASED event exists."""
    assert (await stack.get_item(item)).state == lane_pb2.Item.QUEUED
    assert "ITEM_LEASED" not in [event_type(e) for e in await stack.events()]


async def test_a_key_revoked_while_its_lease_waits_gets_nothing(stack: Stack) -> None:
    key_id, client = await stack.work_key()
    waiting = await waiting_lease(client, stack, "poller")
    await stack.admin.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=key_id))
    lane = await stack.create_lane(task("a", inputs=SECRET))
    await expect_error(asyncio.wait_for(waiting, WAIT / 2), Unauthenticated)
    await assert_nothing_leased(stack, lane.items[0])


async def test_an_org_admin_removed_while_the_lease_waits_gets_nothing(stack: Stack) -> None:
    admin = await new_user(stack, role=admin_pb2.OrgMember.ORG_ADMIN)
    waiting = await waiting_lease(admin.client, stack, "human-poller")
    await stack.admin.admin.RemoveOrgMember(
        admin_pb2.RemoveOrgMemberRequest(org_slug=stack.org, user_id=admin.user_id)
    )
    lane = await stack.create_lane(task("a", inputs=SECRET))
    await expect_error(asyncio.wait_for(waiting, WAIT / 2), PermissionDenied)
    await assert_nothing_leased(stack, lane.items[0])


@pytest.mark.parametrize("revoke", ["token", "nothing"])
async def test_a_user_token_revoked_while_the_lease_waits(stack: Stack, revoke: str) -> None:
    """The user keeps their role; only the credential the call came with goes (or nothing
    does, and the waiter gets the item as before)."""
    admin = await new_user(stack, role=admin_pb2.OrgMember.ORG_ADMIN)
    waiting = await waiting_lease(admin.client, stack, "user-poller")
    if revoke == "token":
        await stack.admin.admin.RevokeUserToken(
            admin_pb2.RevokeUserTokenRequest(user_id=admin.user_id, token_id=admin.token_id)
        )
    lane = await stack.create_lane(task("a", inputs=SECRET))
    if revoke == "token":
        await expect_error(asyncio.wait_for(waiting, WAIT / 2), Unauthenticated)
        await assert_nothing_leased(stack, lane.items[0])
        return
    response = await asyncio.wait_for(waiting, WAIT / 2)
    assert [lease.item.key for lease in response.leases] == ["a"]


async def test_a_browser_session_ended_while_its_lease_waits_gets_nothing(stack: Stack) -> None:
    """A session re-checks like a bearer credential (with its CSRF token, as the gate did)."""
    admin = await new_user(stack, role=admin_pb2.OrgMember.ORG_ADMIN)
    issued = await login(stack, admin.user_id)
    browser = stack.client(None)
    metadata = session_metadata(issued.session_secret, issued.csrf_token)
    waiting = await waiting_lease(browser, stack, "browser-poller", metadata)
    await sessions(browser).EndSession(session_pb2.EndSessionRequest(), metadata=metadata)
    lane = await stack.create_lane(task("a", inputs=SECRET))
    await expect_error(asyncio.wait_for(waiting, WAIT / 2), Unauthenticated)
    await assert_nothing_leased(stack, lane.items[0])
