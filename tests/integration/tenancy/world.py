"""A small tenancy world on top of :class:`~tests.support.harness.Stack`: humans with org roles
(each with an admin token), the GLOBAL work coordinator as parent of the stack's coordinator,
grants, and a browser session."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from google.protobuf import field_mask_pb2

from tests.support.harness import Stack, create_coordinator, create_work_key
from workcoord.api.v1 import admin_pb2, session_pb2, session_pb2_grpc, work_coordinator_pb2
from workcoord.client import WorkcoordClient

if TYPE_CHECKING:
    from workcoord.api.v1.session_pb2_grpc import SessionServiceAsyncStub

Role = admin_pb2.OrgMember.Role
Permission = work_coordinator_pb2.Grant.Permission
ALL_PERMISSIONS = (
    Permission.SUMMARY,
    Permission.ESCALATIONS,
    Permission.ASSIGN,
    Permission.STEER,
    Permission.ESCALATE,
)


@dataclass
class Human:
    user_id: str
    token_id: str
    secret: str
    client: WorkcoordClient


async def new_user(
    stack: Stack,
    *,
    org: str | None = None,
    role: admin_pb2.OrgMember.Role | None = None,
    platform_admin: bool = False,
    verified: bool = True,
    expire_time: datetime | None = None,
) -> Human:
    """A user (with ``role`` in ``org`` if given) holding a fresh admin token."""
    created = await stack.admin.admin.CreateUser(
        admin_pb2.CreateUserRequest(
            user=admin_pb2.User(
                email=f"u-{secrets.token_hex(4)}@example.test",
                display_name="someone",
                platform_admin=platform_admin,
                verified=verified,
            )
        )
    )
    user_id = created.user.user_id
    if role is not None:
        await stack.admin.admin.AddOrgMember(
            admin_pb2.AddOrgMemberRequest(
                org_slug=org or stack.org,
                member=admin_pb2.OrgMember(user_id=user_id, role=role),
            )
        )
    token = admin_pb2.UserToken(display_name="laptop")
    if expire_time is not None:
        token.expire_time.FromDatetime(expire_time)
    issued = await stack.admin.admin.CreateUserToken(
        admin_pb2.CreateUserTokenRequest(user_id=user_id, token=token)
    )
    return Human(user_id, issued.token_id, issued.secret, stack.client(issued.secret))


async def new_org(stack: Stack) -> str:
    slug = f"org-{secrets.token_hex(4)}"
    await stack.admin.admin.CreateOrg(
        admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=slug, display_name="Other"))
    )
    return slug


async def other_org_coordinator(stack: Stack) -> tuple[str, str]:
    """Another org and its ORG work coordinator."""
    org = await new_org(stack)
    return org, await create_coordinator(stack.admin, org)


async def create_global(stack: Stack) -> str:
    response = await stack.admin.coordinators.CreateWorkCoordinator(
        work_coordinator_pb2.CreateWorkCoordinatorRequest(
            work_coordinator=work_coordinator_pb2.WorkCoordinator(
                scope=work_coordinator_pb2.WorkCoordinator.GLOBAL, display_name="Platform"
            )
        )
    )
    return response.work_coordinator.coordinator_id


async def set_parent(client: WorkcoordClient, child_id: str, parent_id: str) -> None:
    await client.coordinators.UpdateWorkCoordinator(
        work_coordinator_pb2.UpdateWorkCoordinatorRequest(
            coordinator_id=child_id,
            # The contract marks scope required on every WorkCoordinator body, updates too.
            work_coordinator=work_coordinator_pb2.WorkCoordinator(
                scope=work_coordinator_pb2.WorkCoordinator.ORG, parent_coordinator_id=parent_id
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["parent_coordinator_id"]),
        )
    )


async def grant(
    client: WorkcoordClient,
    child_id: str,
    parent_id: str,
    permissions: Sequence[work_coordinator_pb2.Grant.Permission],
    expire_time: datetime,
) -> work_coordinator_pb2.Grant:
    g = work_coordinator_pb2.Grant(parent_coordinator_id=parent_id, permissions=list(permissions))
    g.expire_time.FromDatetime(expire_time)
    response = await client.coordinators.CreateGrant(
        work_coordinator_pb2.CreateGrantRequest(coordinator_id=child_id, grant=g)
    )
    return response.grant


def in_days(stack: Stack, days: float) -> datetime:
    return stack.clock.now() + timedelta(days=days)


def sessions(client: WorkcoordClient) -> SessionServiceAsyncStub:
    return session_pb2_grpc.SessionServiceStub(client.channel)


async def login(stack: Stack, user_id: str = "") -> session_pb2.ExchangeLoginCodeResponse:
    """A browser session for ``user_id`` (default: the bootstrap admin)."""
    code = await sessions(stack.admin).CreateLoginCode(
        session_pb2.CreateLoginCodeRequest(user_id=user_id)
    )
    anonymous = stack.client(None)
    return await sessions(anonymous).ExchangeLoginCode(
        session_pb2.ExchangeLoginCodeRequest(code=code.code)
    )


def session_metadata(secret: str, csrf: str | None = None) -> tuple[tuple[str, str], ...]:
    pairs = [("x-workcoord-session", secret)]
    if csrf is not None:
        pairs.append(("x-workcoord-csrf", csrf))
    return tuple(pairs)


async def switch_off(stack: Stack, switch: str, *, on: bool = False) -> None:
    """Turn the platform switch (``"platform"``) or the stack coordinator's off (or on)."""
    if switch == "platform":
        await stack.admin.admin.UpdateSettings(
            admin_pb2.UpdateSettingsRequest(
                settings=admin_pb2.Settings(work_coordinator_enabled=on),
                update_mask=field_mask_pb2.FieldMask(paths=["work_coordinator_enabled"]),
            )
        )
        return
    await stack.admin.coordinators.UpdateWorkCoordinator(
        work_coordinator_pb2.UpdateWorkCoordinatorRequest(
            coordinator_id=stack.cid,
            work_coordinator=work_coordinator_pb2.WorkCoordinator(
                scope=work_coordinator_pb2.WorkCoordinator.ORG, enabled=on
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["enabled"]),
        )
    )


async def key_for(
    stack: Stack,
    capabilities: Sequence[admin_pb2.WorkKey.Capability],
    coordinator_ids: Sequence[str],
    org: str = "",
) -> tuple[str, str, WorkcoordClient]:
    """A work key (id, secret, client) with no org given: it takes its coordinators' org."""
    response = await create_work_key(stack.admin, coordinator_ids, capabilities, org=org)
    return response.key_id, response.secret, stack.client(response.secret)
