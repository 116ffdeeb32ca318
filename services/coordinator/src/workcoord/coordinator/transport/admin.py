"""``AdminService``: orgs, users and their tokens, org members, work keys, platform settings,
and who the caller is."""

from __future__ import annotations

from workcoord.api.v1 import admin_pb2, admin_pb2_grpc
from workcoord.coordinator.domain.auth import Capability, OrgRole
from workcoord.coordinator.domain.grants import MemberRecord, TokenRecord
from workcoord.kit.errors import InvalidArgument

from . import mapping as m
from . import tenancy_mapping as tmap
from .base import Context, EngineServicer, rpc
from .gate import caller

__all__ = ["AdminServicer"]


class AdminServicer(EngineServicer, admin_pb2_grpc.AdminServiceServicer):
    async def GetCurrentPrincipal(
        self, request: admin_pb2.GetCurrentPrincipalRequest, context: Context
    ) -> admin_pb2.GetCurrentPrincipalResponse:
        principal = m.principal_to_pb(caller().principal)
        return admin_pb2.GetCurrentPrincipalResponse(principal=principal)

    CreateOrg = rpc(
        admin_pb2.CreateOrgRequest,
        lambda s, p, r: s.engine.create_org(p, r.org.slug, r.org.display_name),
        lambda org: admin_pb2.CreateOrgResponse(org=m.org_to_pb(org)),
    )

    ListOrgs = rpc(
        admin_pb2.ListOrgsRequest,
        lambda s, p, r: s.engine.list_orgs(p, r.page_size, r.page_token),
        lambda page: m.page_to_pb(admin_pb2.ListOrgsResponse, "orgs", page, m.org_to_pb),
    )

    GetOrg = rpc(
        admin_pb2.GetOrgRequest,
        lambda s, p, r: s.engine.get_org(p, r.org_slug),
        lambda org: admin_pb2.GetOrgResponse(org=m.org_to_pb(org)),
    )

    CreateUser = rpc(
        admin_pb2.CreateUserRequest,
        lambda s, p, r: s.engine.create_user(
            p, r.user.email, r.user.display_name, r.user.platform_admin, r.user.verified
        ),
        lambda user: admin_pb2.CreateUserResponse(user=m.user_to_pb(user)),
    )

    ListUsers = rpc(
        admin_pb2.ListUsersRequest,
        lambda s, p, r: s.engine.list_users(p, r.page_size, r.page_token),
        lambda page: m.page_to_pb(admin_pb2.ListUsersResponse, "users", page, m.user_to_pb),
    )

    GetUser = rpc(
        admin_pb2.GetUserRequest,
        lambda s, p, r: s.engine.get_user(p, r.user_id),
        lambda user: admin_pb2.GetUserResponse(user=m.user_to_pb(user)),
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

    ListOrgMembers = rpc(
        admin_pb2.ListOrgMembersRequest,
        lambda s, p, r: s.tenancy.list_org_members(p, r.org_slug, r.page_size, r.page_token),
        lambda page: m.page_to_pb(
            admin_pb2.ListOrgMembersResponse, "members", page, tmap.member_to_pb
        ),
    )

    RemoveOrgMember = rpc(
        admin_pb2.RemoveOrgMemberRequest,
        lambda s, p, r: s.tenancy.remove_org_member(p, r.org_slug, r.user_id),
        lambda _: admin_pb2.RemoveOrgMemberResponse(),
    )

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

    RevokeUserToken = rpc(
        admin_pb2.RevokeUserTokenRequest,
        lambda s, p, r: s.tenancy.revoke_user_token(p, r.user_id, r.token_id),
        lambda token: admin_pb2.RevokeUserTokenResponse(token=tmap.token_to_pb(token)),
    )

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

    ListWorkKeys = rpc(
        admin_pb2.ListWorkKeysRequest,
        lambda s, p, r: s.engine.list_work_keys(p, r.org_slug, r.page_size, r.page_token),
        lambda page: m.page_to_pb(
            admin_pb2.ListWorkKeysResponse, "work_keys", page, m.work_key_to_pb
        ),
    )

    GetWorkKey = rpc(
        admin_pb2.GetWorkKeyRequest,
        lambda s, p, r: s.engine.get_work_key(p, r.key_id),
        lambda key: admin_pb2.GetWorkKeyResponse(work_key=m.work_key_to_pb(key)),
    )

    RevokeWorkKey = rpc(
        admin_pb2.RevokeWorkKeyRequest,
        lambda s, p, r: s.engine.revoke_work_key(p, r.key_id),
        lambda key: admin_pb2.RevokeWorkKeyResponse(work_key=m.work_key_to_pb(key)),
    )

    GetSettings = rpc(
        admin_pb2.GetSettingsRequest,
        lambda s, p, r: s.engine.get_settings(p),
        lambda settings: admin_pb2.GetSettingsResponse(settings=m.settings_to_pb(settings)),
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
