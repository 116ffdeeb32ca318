"""``AdminService``: orgs, users and their tokens, org members, work keys, platform settings,
and who the caller is."""

from __future__ import annotations

from workcoord.api.v1 import admin_pb2, admin_pb2_grpc
from workcoord.coordinator.domain.auth import Capability, OrgRole
from workcoord.coordinator.domain.grants import MemberRecord, TokenRecord
from workcoord.kit.errors import InvalidArgument

from . import mapping as m
from . import tenancy_mapping as tmap
from .base import Context, EngineServicer
from .gate import caller

__all__ = ["AdminServicer"]


class AdminServicer(EngineServicer, admin_pb2_grpc.AdminServiceServicer):
    async def GetCurrentPrincipal(
        self, request: admin_pb2.GetCurrentPrincipalRequest, context: Context
    ) -> admin_pb2.GetCurrentPrincipalResponse:
        principal = m.principal_to_pb(caller().principal)
        return admin_pb2.GetCurrentPrincipalResponse(principal=principal)

    async def CreateOrg(
        self, request: admin_pb2.CreateOrgRequest, context: Context
    ) -> admin_pb2.CreateOrgResponse:
        p = caller().principal
        org = await self.engine.create_org(p, request.org.slug, request.org.display_name)
        return admin_pb2.CreateOrgResponse(org=m.org_to_pb(org))

    async def ListOrgs(
        self, request: admin_pb2.ListOrgsRequest, context: Context
    ) -> admin_pb2.ListOrgsResponse:
        p = caller().principal
        page = await self.engine.list_orgs(p, request.page_size, request.page_token)
        return m.page_to_pb(admin_pb2.ListOrgsResponse, "orgs", page, m.org_to_pb)

    async def GetOrg(
        self, request: admin_pb2.GetOrgRequest, context: Context
    ) -> admin_pb2.GetOrgResponse:
        p = caller().principal
        return admin_pb2.GetOrgResponse(
            org=m.org_to_pb(await self.engine.get_org(p, request.org_slug))
        )

    async def CreateUser(
        self, request: admin_pb2.CreateUserRequest, context: Context
    ) -> admin_pb2.CreateUserResponse:
        p = caller().principal
        u = request.user
        user = await self.engine.create_user(
            p, u.email, u.display_name, u.platform_admin, u.verified
        )
        return admin_pb2.CreateUserResponse(user=m.user_to_pb(user))

    async def ListUsers(
        self, request: admin_pb2.ListUsersRequest, context: Context
    ) -> admin_pb2.ListUsersResponse:
        p = caller().principal
        page = await self.engine.list_users(p, request.page_size, request.page_token)
        return m.page_to_pb(admin_pb2.ListUsersResponse, "users", page, m.user_to_pb)

    async def GetUser(
        self, request: admin_pb2.GetUserRequest, context: Context
    ) -> admin_pb2.GetUserResponse:
        p = caller().principal
        return admin_pb2.GetUserResponse(
            user=m.user_to_pb(await self.engine.get_user(p, request.user_id))
        )

    async def AddOrgMember(
        self, request: admin_pb2.AddOrgMemberRequest, context: Context
    ) -> admin_pb2.AddOrgMemberResponse:
        p = caller().principal
        role = admin_pb2.OrgMember.Role.Name(request.member.role)
        when = await self.engine.add_org_member(
            p, request.org_slug, request.member.user_id, OrgRole(role)
        )
        member = MemberRecord(request.org_slug, request.member.user_id, role, when)
        return admin_pb2.AddOrgMemberResponse(member=tmap.member_to_pb(member))

    async def ListOrgMembers(
        self, request: admin_pb2.ListOrgMembersRequest, context: Context
    ) -> admin_pb2.ListOrgMembersResponse:
        p = caller().principal
        page = await self.tenancy.list_org_members(
            p, request.org_slug, request.page_size, request.page_token
        )
        return m.page_to_pb(admin_pb2.ListOrgMembersResponse, "members", page, tmap.member_to_pb)

    async def RemoveOrgMember(
        self, request: admin_pb2.RemoveOrgMemberRequest, context: Context
    ) -> admin_pb2.RemoveOrgMemberResponse:
        p = caller().principal
        await self.tenancy.remove_org_member(p, request.org_slug, request.user_id)
        return admin_pb2.RemoveOrgMemberResponse()

    async def CreateUserToken(
        self, request: admin_pb2.CreateUserTokenRequest, context: Context
    ) -> admin_pb2.CreateUserTokenResponse:
        p = caller().principal
        expire = m.from_optional_ts(request.token, "expire_time")
        issued = await self.engine.create_user_token(
            p, request.user_id, request.token.display_name, expire
        )
        token = TokenRecord(
            issued.token_id,
            request.user_id,
            request.token.display_name,
            issued.create_time,
            expire,
        )
        return admin_pb2.CreateUserTokenResponse(
            token_id=issued.token_id, secret=issued.secret, token=tmap.token_to_pb(token)
        )

    async def RevokeUserToken(
        self, request: admin_pb2.RevokeUserTokenRequest, context: Context
    ) -> admin_pb2.RevokeUserTokenResponse:
        p = caller().principal
        token = await self.tenancy.revoke_user_token(p, request.user_id, request.token_id)
        return admin_pb2.RevokeUserTokenResponse(token=tmap.token_to_pb(token))

    async def CreateWorkKey(
        self, request: admin_pb2.CreateWorkKeyRequest, context: Context
    ) -> admin_pb2.CreateWorkKeyResponse:
        p = caller().principal
        k = request.work_key
        issued = await self.engine.create_work_key(
            p,
            k.display_name,
            k.org_slug,
            list(k.coordinator_ids),
            [Capability(admin_pb2.WorkKey.Capability.Name(c)) for c in k.capabilities],
            m.from_optional_ts(k, "expire_time"),
        )
        return admin_pb2.CreateWorkKeyResponse(
            key_id=issued.key.key_id, secret=issued.secret, work_key=m.work_key_to_pb(issued.key)
        )

    async def ListWorkKeys(
        self, request: admin_pb2.ListWorkKeysRequest, context: Context
    ) -> admin_pb2.ListWorkKeysResponse:
        p = caller().principal
        page = await self.engine.list_work_keys(
            p, request.org_slug, request.page_size, request.page_token
        )
        return m.page_to_pb(admin_pb2.ListWorkKeysResponse, "work_keys", page, m.work_key_to_pb)

    async def GetWorkKey(
        self, request: admin_pb2.GetWorkKeyRequest, context: Context
    ) -> admin_pb2.GetWorkKeyResponse:
        p = caller().principal
        return admin_pb2.GetWorkKeyResponse(
            work_key=m.work_key_to_pb(await self.engine.get_work_key(p, request.key_id))
        )

    async def RevokeWorkKey(
        self, request: admin_pb2.RevokeWorkKeyRequest, context: Context
    ) -> admin_pb2.RevokeWorkKeyResponse:
        p = caller().principal
        return admin_pb2.RevokeWorkKeyResponse(
            work_key=m.work_key_to_pb(await self.engine.revoke_work_key(p, request.key_id))
        )

    async def GetSettings(
        self, request: admin_pb2.GetSettingsRequest, context: Context
    ) -> admin_pb2.GetSettingsResponse:
        p = caller().principal
        return admin_pb2.GetSettingsResponse(
            settings=m.settings_to_pb(await self.engine.get_settings(p))
        )

    async def UpdateSettings(
        self, request: admin_pb2.UpdateSettingsRequest, context: Context
    ) -> admin_pb2.UpdateSettingsResponse:
        p = caller().principal
        paths = list(request.update_mask.paths) or m.populated_paths(request.settings)
        unknown = [path for path in paths if path not in ("work_coordinator_enabled", "etag")]
        if unknown:
            raise InvalidArgument.single("update_mask", f"cannot update {', '.join(unknown)}")
        enabled = (
            request.settings.work_coordinator_enabled
            if "work_coordinator_enabled" in paths
            else None
        )
        settings = await self.engine.update_settings(p, enabled, request.settings.etag)
        return admin_pb2.UpdateSettingsResponse(settings=m.settings_to_pb(settings))
