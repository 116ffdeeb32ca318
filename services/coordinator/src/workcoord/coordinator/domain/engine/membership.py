"""Orgs, users and org members: who belongs to which org, with which role. Orgs and users are
made by platform admins; an org's admins manage its members."""

from __future__ import annotations

from workcoord.kit.errors import AlreadyExists, NotFound

from ..auth import (
    Principal,
    can_see_org,
    require_org_admin,
    require_org_role,
    require_platform_admin,
    require_self_or_platform_admin,
)
from ..grants import MemberRecord
from ..inputs import AddOrgMemberInput, CreateUserInput, ListOrgMembersInput
from ..ports import OrgRecord, UserRecord
from ..results import Page
from ._base import EngineCore, new_id
from .paging import PageRequest

__all__ = ["Membership"]


class Membership:
    """Orgs, users and org members, over the engine's shared core."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    # ------------------------------------------------------------------ orgs

    async def create_org(self, principal: Principal, slug: str, display_name: str) -> OrgRecord:
        require_platform_admin(principal)
        async with self.core.store.write() as tx:
            if await tx.get_org(slug) is not None:
                raise AlreadyExists(f"org {slug!r} already exists")
            org = OrgRecord(slug=slug, display_name=display_name or slug, create_time=tx.now)
            await tx.insert_org(org)
            return org

    async def get_org(self, principal: Principal, slug: str) -> OrgRecord:
        async with self.core.store.read() as reader:
            org = await reader.get_org(slug)
        if org is None or not can_see_org(principal, slug):
            raise NotFound(f"org {slug!r} not found")
        return org

    async def list_orgs(
        self, principal: Principal, page_size: int, page_token: str
    ) -> Page[OrgRecord]:
        """The orgs the caller may see, by slug."""
        request = PageRequest.parse(page_size, page_token, ("ListOrgs",))
        async with self.core.store.read() as reader:
            orgs = await reader.list_orgs(request.after_id, request.fetch)
        visible = [o for o in orgs if can_see_org(principal, o.slug)]
        return request.page(visible, lambda o: [o.slug])

    # ------------------------------------------------------------------ users

    async def create_user(self, principal: Principal, new: CreateUserInput) -> UserRecord:
        require_platform_admin(principal)
        email = new.email.lower()
        async with self.core.store.write() as tx:
            if await tx.find_user_by_email(email) is not None:
                raise AlreadyExists(f"a user with email {new.email!r} already exists")
            user = UserRecord(
                user_id=new_id("usr"),
                email=email,
                display_name=new.display_name,
                platform_admin=new.platform_admin,
                verified=new.verified,
                create_time=tx.now,
            )
            await tx.insert_user(user)
            return user

    async def get_user(self, principal: Principal, user_id: str) -> UserRecord:
        require_self_or_platform_admin(principal, user_id)
        async with self.core.store.read() as reader:
            user = await reader.get_user(user_id)
        if user is None:
            raise NotFound(f"user {user_id} not found")
        return user

    async def list_users(
        self, principal: Principal, page_size: int, page_token: str
    ) -> Page[UserRecord]:
        require_platform_admin(principal)
        request = PageRequest.parse(page_size, page_token, ("ListUsers",))
        async with self.core.store.read() as reader:
            users = await reader.list_users(request.after_id, request.fetch)
        return request.page(users, lambda u: [u.user_id])

    # ------------------------------------------------------------------ org members

    async def add_org_member(self, principal: Principal, member: AddOrgMemberInput) -> MemberRecord:
        """Make the user a member with the role (an existing member gets the new role)."""
        require_org_admin(principal, member.org_slug)
        async with self.core.store.write() as tx:
            if await tx.get_org(member.org_slug) is None:
                raise NotFound(f"org {member.org_slug!r} not found")
            if await tx.get_user(member.user_id) is None:
                raise NotFound(f"user {member.user_id} not found")
            await tx.set_member(member.org_slug, member.user_id, member.role.value, tx.now)
            return MemberRecord(member.org_slug, member.user_id, member.role.value, tx.now)

    async def list_org_members(
        self, principal: Principal, listing: ListOrgMembersInput
    ) -> Page[MemberRecord]:
        require_org_role(principal, listing.org_slug, admin=False)
        request = PageRequest.parse(
            listing.page_size, listing.page_token, ("ListOrgMembers", listing.org_slug)
        )
        async with self.core.store.read() as reader:
            if await reader.get_org(listing.org_slug) is None:
                raise NotFound(f"org {listing.org_slug!r} not found")
            rows = await reader.list_members(listing.org_slug, request.after_id, request.fetch)
        return request.page(rows, lambda m: [m.user_id])

    async def remove_org_member(self, principal: Principal, org_slug: str, user_id: str) -> None:
        require_org_role(principal, org_slug, admin=True)
        async with self.core.store.write() as tx:
            if await tx.get_org(org_slug) is None:
                raise NotFound(f"org {org_slug!r} not found")
            if not await tx.remove_member(org_slug, user_id):
                raise NotFound(f"user {user_id} is not a member of org {org_slug!r}")
