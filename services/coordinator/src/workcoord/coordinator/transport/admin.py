"""``AdminService``: orgs, users and their tokens, org members, work keys, platform settings,
and who the caller is. Each method reads its request, calls the engine's concern
(``membership``, ``credentials`` or ``platform``) and maps the answer."""

from __future__ import annotations

from workcoord.api.v1 import admin_pb2, admin_pb2_grpc
from workcoord.coordinator.domain.auth import Capability, OrgRole
from workcoord.coordinator.domain.inputs import (
    AddOrgMemberInput,
    CreateUserInput,
    CreateUserTokenInput,
    CreateWorkKeyInput,
    ListOrgMembersInput,
    ListWorkKeysInput,
)
from workcoord.kit.errors import InvalidArgument

from . import mapping as m
from . import tenancy_mapping as tmap
from .base import Context, EngineServicer
from .gate import caller

__all__ = ["AdminServicer"]

_SETTABLE = ("work_coordinator_enabled", "etag")


class AdminServicer(EngineServicer, admin_pb2_grpc.AdminServiceServicer):
    async def GetCurrentPrincipal(
        self, request: admin_pb2.GetCurrentPrincipalRequest, context: Context
    ) -> admin_pb2.GetCurrentPrincipalResponse:
        principal = m.principal_to_pb(caller().principal)
        return admin_pb2.GetCurrentPrincipalResponse(principal=principal)

    # ------------------------------------------------------------------ orgs

    async def CreateOrg(
        self, request: admin_pb2.CreateOrgRequest, context: Context
    ) -> admin_pb2.CreateOrgResponse:
        org = await self.engine.membership.create_org(
            caller().principal, request.org.slug, request.org.display_name
        )
        return admin_pb2.CreateOrgResponse(org=m.org_to_pb(org))

    async def ListOrgs(
        self, request: admin_pb2.ListOrgsRequest, context: Context
    ) -> admin_pb2.ListOrgsResponse:
        page = await self.engine.membership.list_orgs(
            caller().principal, request.page_size, request.page_token
        )
        return m.page_to_pb(admin_pb2.ListOrgsResponse, "orgs", page, m.org_to_pb)

    async def GetOrg(
        self, request: admin_pb2.GetOrgRequest, context: Context
    ) -> admin_pb2.GetOrgResponse:
        org = await self.engine.membership.get_org(caller().principal, request.org_slug)
        return admin_pb2.GetOrgResponse(org=m.org_to_pb(org))

    # ------------------------------------------------------------------ users

    async def CreateUser(
        self, request: admin_pb2.CreateUserRequest, context: Context
    ) -> admin_pb2.CreateUserResponse:
        u = request.user
        new = CreateUserInput(u.email, u.display_name, u.platform_admin, u.verified)
        user = await self.engine.membership.create_user(caller().principal, new)
        return admin_pb2.CreateUserResponse(user=m.user_to_pb(user))

    async def ListUsers(
        self, request: admin_pb2.ListUsersRequest, context: Context
    ) -> admin_pb2.ListUsersResponse:
        page = await self.engine.membership.list_users(
            caller().principal, request.page_size, request.page_token
        )
        return m.page_to_pb(admin_pb2.ListUsersResponse, "users", page, m.user_to_pb)

    async def GetUser(
        self, request: admin_pb2.GetUserRequest, context: Context
    ) -> admin_pb2.GetUserResponse:
        user = await self.engine.membership.get_user(caller().principal, request.user_id)
        return admin_pb2.GetUserResponse(user=m.user_to_pb(user))

    # ------------------------------------------------------------------ org members

    async def AddOrgMember(
        self, request: admin_pb2.AddOrgMemberRequest, context: Context
    ) -> admin_pb2.AddOrgMemberResponse:
        role = OrgRole(admin_pb2.OrgMember.Role.Name(request.member.role))
        new = AddOrgMemberInput(request.org_slug, request.member.user_id, role)
        member = await self.engine.membership.add_org_member(caller().principal, new)
        return admin_pb2.AddOrgMemberResponse(member=tmap.member_to_pb(member))

    async def ListOrgMembers(
        self, request: admin_pb2.ListOrgMembersRequest, context: Context
    ) -> admin_pb2.ListOrgMembersResponse:
        listing = ListOrgMembersInput(request.org_slug, request.page_size, request.page_token)
        page = await self.engine.membership.list_org_members(caller().principal, listing)
        return m.page_to_pb(admin_pb2.ListOrgMembersResponse, "members", page, tmap.member_to_pb)

    async def RemoveOrgMember(
        self, request: admin_pb2.RemoveOrgMemberRequest, context: Context
    ) -> admin_pb2.RemoveOrgMemberResponse:
        await self.engine.membership.remove_org_member(
            caller().principal, request.org_slug, request.user_id
        )
        return admin_pb2.RemoveOrgMemberResponse()

    # ------------------------------------------------------------------ user tokens

    async def CreateUserToken(
        self, request: admin_pb2.CreateUserTokenRequest, context: Context
    ) -> admin_pb2.CreateUserTokenResponse:
        new = CreateUserTokenInput(
            request.user_id,
            request.token.display_name,
            m.from_optional_ts(request.token, "expire_time"),
        )
        issued = await self.engine.credentials.create_user_token(caller().principal, new)
        return admin_pb2.CreateUserTokenResponse(
            token_id=issued.token.token_id,
            secret=issued.secret,
            token=tmap.token_to_pb(issued.token),
        )

    async def RevokeUserToken(
        self, request: admin_pb2.RevokeUserTokenRequest, context: Context
    ) -> admin_pb2.RevokeUserTokenResponse:
        token = await self.engine.credentials.revoke_user_token(
            caller().principal, request.user_id, request.token_id
        )
        return admin_pb2.RevokeUserTokenResponse(token=tmap.token_to_pb(token))

    # ------------------------------------------------------------------ work keys

    async def CreateWorkKey(
        self, request: admin_pb2.CreateWorkKeyRequest, context: Context
    ) -> admin_pb2.CreateWorkKeyResponse:
        k = request.work_key
        new = CreateWorkKeyInput(
            display_name=k.display_name,
            coordinator_ids=tuple(k.coordinator_ids),
            capabilities=tuple(
                Capability(admin_pb2.WorkKey.Capability.Name(c)) for c in k.capabilities
            ),
            org_slug=k.org_slug,
            expire_time=m.from_optional_ts(k, "expire_time"),
        )
        issued = await self.engine.credentials.create_work_key(caller().principal, new)
        return admin_pb2.CreateWorkKeyResponse(
            key_id=issued.key.key_id, secret=issued.secret, work_key=m.work_key_to_pb(issued.key)
        )

    async def ListWorkKeys(
        self, request: admin_pb2.ListWorkKeysRequest, context: Context
    ) -> admin_pb2.ListWorkKeysResponse:
        listing = ListWorkKeysInput(request.org_slug, request.page_size, request.page_token)
        page = await self.engine.credentials.list_work_keys(caller().principal, listing)
        return m.page_to_pb(admin_pb2.ListWorkKeysResponse, "work_keys", page, m.work_key_to_pb)

    async def GetWorkKey(
        self, request: admin_pb2.GetWorkKeyRequest, context: Context
    ) -> admin_pb2.GetWorkKeyResponse:
        key = await self.engine.credentials.get_work_key(caller().principal, request.key_id)
        return admin_pb2.GetWorkKeyResponse(work_key=m.work_key_to_pb(key))

    async def RevokeWorkKey(
        self, request: admin_pb2.RevokeWorkKeyRequest, context: Context
    ) -> admin_pb2.RevokeWorkKeyResponse:
        key = await self.engine.credentials.revoke_work_key(caller().principal, request.key_id)
        return admin_pb2.RevokeWorkKeyResponse(work_key=m.work_key_to_pb(key))

    # ------------------------------------------------------------------ platform settings

    async def GetSettings(
        self, request: admin_pb2.GetSettingsRequest, context: Context
    ) -> admin_pb2.GetSettingsResponse:
        settings = await self.engine.platform.get_settings(caller().principal)
        return admin_pb2.GetSettingsResponse(settings=m.settings_to_pb(settings))

    async def UpdateSettings(
        self, request: admin_pb2.UpdateSettingsRequest, context: Context
    ) -> admin_pb2.UpdateSettingsResponse:
        paths = list(request.update_mask.paths) or m.populated_paths(request.settings)
        unknown = [path for path in paths if path not in _SETTABLE]
        if unknown:
            raise InvalidArgument.single("update_mask", f"cannot update {', '.join(unknown)}")
        enabled = (
            request.settings.work_coordinator_enabled
            if "work_coordinator_enabled" in paths
            else None
        )
        settings = await self.engine.platform.update_settings(
            caller().principal, enabled, request.settings.etag
        )
        return admin_pb2.UpdateSettingsResponse(settings=m.settings_to_pb(settings))
