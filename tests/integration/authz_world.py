"""The authorization matrix's world: a coordinator stack over real PostgreSQL with a child
coordinator (granted to the GLOBAL parent), an ungranted sibling, another org, and one client
and bearer secret per credential column of :mod:`tests.integration.authz_table`.

``world`` is a module-scoped fixture: a test module registers it (``world = authz_world.world``)
and gets a world of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from google.protobuf import timestamp_pb2

from tests.integration.tenancy.world import (
    ALL_PERMISSIONS,
    Human,
    create_global,
    grant,
    key_for,
    new_org,
    new_user,
    set_parent,
)
from tests.support.databases import PostgresDatabases, delete_redis_keys
from tests.support.harness import (
    ALL_CAPABILITIES,
    Stack,
    TestClock,
    create_coordinator,
    identity,
    start_stack,
    task,
)
from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.client import WorkcoordClient

A = admin_pb2
W = work_coordinator_pb2
L = lane_pb2
K = worker_pb2
Cap = A.WorkKey.Capability
Role = A.OrgMember.Role


@dataclass
class World:
    stack: Stack
    child: str  # ORG work coordinator of the stack's org; GLOBAL holds a live grant from it
    child_ungranted: str  # same org; its grant to GLOBAL was revoked
    parent: str  # GLOBAL
    other_cid: str
    lane_id: str
    waiting_item: str  # a WAITING item (of class person) parents may assign
    target_user: Human  # a user with no role, for per-user calls
    key_read_id: str
    full_key: WorkcoordClient  # every capability on the child: builds leases for worker calls
    clients: dict[str, WorkcoordClient] = field(default_factory=dict)
    tokens: dict[str, str | None] = field(default_factory=dict)  # each column's bearer secret

    @property
    def admin(self) -> WorkcoordClient:
        return self.stack.admin

    def cid_for(self, column: str) -> str:
        return self.child_ungranted if column == "g" else self.child

    async def new_lane(self, *items: L.Item) -> L.Lane:
        lane = L.Lane(title="matrix", template=L.Lane.CUSTOM, items=list(items or [task("a")]))
        response = await self.admin.lanes.CreateLane(
            L.CreateLaneRequest(coordinator_id=self.child, lane=lane)
        )
        return response.lane

    async def new_lease(self, start: bool = True) -> K.Lease:
        lane = await self.new_lane(task("w", priority=100))
        request = K.LeaseRequest(
            coordinator_id=self.child,
            worker_id="matrix-builder",
            worker_class="machine",
            max_items=1,
            lease_seconds=300,
        )
        if start:
            request.run_identity.CopyFrom(identity(self.stack.clock))
        # Some lease of this class (a released one may come back first): any live one will do.
        del lane
        (lease,) = (await self.full_key.workers.Lease(request)).leases
        return lease


@pytest.fixture(scope="module")
async def world(pg_databases: PostgresDatabases, redis: str) -> AsyncIterator[World]:
    url = await pg_databases.create()
    stack = await start_stack(
        "postgres",
        url,
        redis,
        clock=TestClock(),
        oidc_issuer="https://idp.invalid",
        oidc_client_id="matrix",
    )
    try:
        yield await _build_world(stack)
    finally:
        await stack.close()
        await delete_redis_keys(stack.coordinator_ids, redis)
        await pg_databases.drop(url)


async def _build_world(stack: Stack) -> World:
    parent = await create_global(stack)
    child = await create_coordinator(
        stack.admin, stack.org, class_capacity={"machine": 10_000, "person": 1, "codex": 4}
    )
    ungranted = await create_coordinator(stack.admin, stack.org)
    for cid in (child, ungranted):
        await set_parent(stack.admin, cid, parent)
    expiry = stack.clock.now() + timedelta(days=30)
    await grant(stack.admin, child, parent, list(ALL_PERMISSIONS), expiry)
    revoked = await grant(stack.admin, ungranted, parent, list(ALL_PERMISSIONS), expiry)
    await stack.admin.coordinators.RevokeGrant(
        W.RevokeGrantRequest(coordinator_id=ungranted, grant_id=revoked.grant_id)
    )
    other_org = await new_org(stack)
    other_cid = await create_coordinator(stack.admin, other_org)

    lane = (
        await stack.admin.lanes.CreateLane(
            L.CreateLaneRequest(
                coordinator_id=child,
                lane=L.Lane(
                    title="matrix",
                    template=L.Lane.CUSTOM,
                    items=[task("gate", "person"), task("waits", "person", depends_on=["gate"])],
                ),
            )
        )
    ).lane
    waiting = next(i for i in lane.items if i.key == "waits")

    admin = await new_user(stack, role=Role.ORG_ADMIN)
    viewer = await new_user(stack, role=Role.ORG_VIEWER)
    outsider = await new_user(stack, org=other_org, role=Role.ORG_ADMIN)
    target = await new_user(stack)
    key_read_id, read_secret, key_read = await key_for(stack, [Cap.READ], [child])
    _, lease_secret, key_lease = await key_for(stack, [Cap.LEASE], [child])
    _, write_secret, key_write = await key_for(stack, [Cap.WRITE], [child])
    _, out_secret, key_out = await key_for(stack, ALL_CAPABILITIES, [other_cid])
    revoked_id, revoked_secret, key_revoked = await key_for(stack, ALL_CAPABILITIES, [child])
    await stack.admin.admin.RevokeWorkKey(A.RevokeWorkKeyRequest(key_id=revoked_id))
    expiring = await stack.admin.admin.CreateWorkKey(
        A.CreateWorkKeyRequest(
            work_key=A.WorkKey(
                display_name="expiring",
                coordinator_ids=[child],
                capabilities=list(ALL_CAPABILITIES),
                expire_time=ts_at(stack, timedelta(minutes=5)),
            )
        )
    )
    key_expired = stack.client(expiring.secret)
    _, parent_secret, parent_key = await key_for(stack, [Cap.READ, Cap.WRITE], [parent])
    _, _, full_key = await key_for(stack, ALL_CAPABILITIES, [child])
    stack.clock.advance(timedelta(minutes=10))  # the expiring key is now expired
    stack.extra_coordinators.extend([parent, child, ungranted, other_cid])

    clients = {
        "P": stack.admin,
        "A": admin.client,
        "O": outsider.client,
        "V": viewer.client,
        "R": key_read,
        "L": key_lease,
        "W": key_write,
        "X": key_out,
        "K": key_revoked,
        "E": key_expired,
        "G": parent_key,
        "g": parent_key,
        "S": stack.service,
        "-": stack.client(None),
    }
    tokens: dict[str, str | None] = {
        "P": stack.admin_token,
        "A": admin.secret,
        "O": outsider.secret,
        "V": viewer.secret,
        "R": read_secret,
        "L": lease_secret,
        "W": write_secret,
        "X": out_secret,
        "K": revoked_secret,
        "E": expiring.secret,
        "G": parent_secret,
        "g": parent_secret,
        "S": stack.service_key,
        "-": None,
    }
    return World(
        stack=stack,
        child=child,
        child_ungranted=ungranted,
        parent=parent,
        other_cid=other_cid,
        lane_id=lane.lane_id,
        waiting_item=waiting.item_id,
        target_user=target,
        key_read_id=key_read_id,
        full_key=full_key,
        clients=clients,
        tokens=tokens,
    )


def ts_at(stack: Stack, delta: timedelta) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(stack.clock.now() + delta)
    return out
