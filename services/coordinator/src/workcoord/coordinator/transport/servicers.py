"""gRPC servicers: validate the request against the contract's field rules, authenticate the
caller, call the engine, map the result. No domain rule lives here."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.message import Message

from workcoord.api.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    feed_pb2_grpc,
    lane_pb2,
    lane_pb2_grpc,
    maintenance_pb2,
    maintenance_pb2_grpc,
    work_coordinator_pb2,
    work_coordinator_pb2_grpc,
    worker_pb2,
    worker_pb2_grpc,
)
from workcoord.coordinator.domain.auth import Capability, OrgRole, Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.grants import GrantPermission
from workcoord.coordinator.domain.model import LaneState, PendingActionState, Scope, Ticket
from workcoord.coordinator.domain.specs import CoordinatorSpec, Decision
from workcoord.coordinator.domain.tenancy import Tenancy
from workcoord.kit.errors import InvalidArgument
from workcoord.kit.validation import raise_if_invalid

from . import mapping as m
from . import tenancy as tm
from .credentials import bearer
from .feed import FeedServicer

Context = grpc.aio.ServicerContext[Any, Any]


class _Base:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.tenancy = Tenancy(engine)

    async def begin(self, request: Message, context: Context) -> Principal:
        """Authenticate the caller (a bearer credential, or a browser session with CSRF on
        state-changing calls), then validate ``request`` against its field rules: an anonymous
        caller learns only that a credential is needed."""
        principal, _session = await tm.authenticate_call(
            self.engine, self.tenancy, request, context, bearer(context)
        )
        raise_if_invalid(request, self.engine.clock.now())
        return principal


class AdminServicer(_Base, admin_pb2_grpc.AdminServiceServicer):
    async def GetCurrentPrincipal(
        self, request: admin_pb2.GetCurrentPrincipalRequest, context: Context
    ) -> admin_pb2.GetCurrentPrincipalResponse:
        p = await self.begin(request, context)
        principal = admin_pb2.Principal(
            kind=p.kind.value,
            name=p.name,
            id=p.id,
            display_name=p.display_name,
            platform_admin=p.platform_admin,
            memberships=[
                admin_pb2.OrgMember(user_id=p.id, org_slug=slug, role=role.value)
                for slug, role in sorted(p.org_roles.items())
            ],
            capabilities=sorted(c.value for c in p.capabilities),
            coordinator_ids=sorted(p.coordinator_ids),
        )
        return admin_pb2.GetCurrentPrincipalResponse(principal=principal)

    async def CreateOrg(
        self, request: admin_pb2.CreateOrgRequest, context: Context
    ) -> admin_pb2.CreateOrgResponse:
        p = await self.begin(request, context)
        org = await self.engine.create_org(p, request.org.slug, request.org.display_name)
        return admin_pb2.CreateOrgResponse(org=m.org_to_pb(org))

    async def ListOrgs(
        self, request: admin_pb2.ListOrgsRequest, context: Context
    ) -> admin_pb2.ListOrgsResponse:
        p = await self.begin(request, context)
        page = await self.engine.list_orgs(p, request.page_size, request.page_token)
        return admin_pb2.ListOrgsResponse(
            orgs=[m.org_to_pb(o) for o in page.items], next_page_token=page.next_page_token
        )

    async def GetOrg(
        self, request: admin_pb2.GetOrgRequest, context: Context
    ) -> admin_pb2.GetOrgResponse:
        p = await self.begin(request, context)
        return admin_pb2.GetOrgResponse(
            org=m.org_to_pb(await self.engine.get_org(p, request.org_slug))
        )

    async def CreateUser(
        self, request: admin_pb2.CreateUserRequest, context: Context
    ) -> admin_pb2.CreateUserResponse:
        p = await self.begin(request, context)
        u = request.user
        user = await self.engine.create_user(
            p, u.email, u.display_name, u.platform_admin, u.verified
        )
        return admin_pb2.CreateUserResponse(user=m.user_to_pb(user))

    async def ListUsers(
        self, request: admin_pb2.ListUsersRequest, context: Context
    ) -> admin_pb2.ListUsersResponse:
        p = await self.begin(request, context)
        page = await self.engine.list_users(p, request.page_size, request.page_token)
        return admin_pb2.ListUsersResponse(
            users=[m.user_to_pb(u) for u in page.items], next_page_token=page.next_page_token
        )

    async def GetUser(
        self, request: admin_pb2.GetUserRequest, context: Context
    ) -> admin_pb2.GetUserResponse:
        p = await self.begin(request, context)
        return admin_pb2.GetUserResponse(
            user=m.user_to_pb(await self.engine.get_user(p, request.user_id))
        )

    async def AddOrgMember(
        self, request: admin_pb2.AddOrgMemberRequest, context: Context
    ) -> admin_pb2.AddOrgMemberResponse:
        p = await self.begin(request, context)
        role = admin_pb2.OrgMember.Role.Name(request.member.role)
        when = await self.engine.add_org_member(
            p, request.org_slug, request.member.user_id, OrgRole(role)
        )
        member = admin_pb2.OrgMember(
            user_id=request.member.user_id, org_slug=request.org_slug, role=request.member.role
        )
        member.create_time.CopyFrom(m.ts(when))
        return admin_pb2.AddOrgMemberResponse(member=member)

    async def ListOrgMembers(
        self, request: admin_pb2.ListOrgMembersRequest, context: Context
    ) -> admin_pb2.ListOrgMembersResponse:
        p = await self.begin(request, context)
        page = await self.tenancy.list_org_members(
            p, request.org_slug, request.page_size, request.page_token
        )
        return admin_pb2.ListOrgMembersResponse(
            members=[tm.member_to_pb(r) for r in page.items], next_page_token=page.next_page_token
        )

    async def RemoveOrgMember(
        self, request: admin_pb2.RemoveOrgMemberRequest, context: Context
    ) -> admin_pb2.RemoveOrgMemberResponse:
        p = await self.begin(request, context)
        await self.tenancy.remove_org_member(p, request.org_slug, request.user_id)
        return admin_pb2.RemoveOrgMemberResponse()

    async def CreateUserToken(
        self, request: admin_pb2.CreateUserTokenRequest, context: Context
    ) -> admin_pb2.CreateUserTokenResponse:
        p = await self.begin(request, context)
        expire = (
            m.from_ts(request.token.expire_time) if request.token.HasField("expire_time") else None
        )
        issued = await self.engine.create_user_token(
            p, request.user_id, request.token.display_name, expire
        )
        token = admin_pb2.UserToken(
            token_id=issued.token_id,
            user_id=request.user_id,
            display_name=request.token.display_name,
        )
        token.create_time.CopyFrom(m.ts(issued.create_time))
        if expire is not None:
            token.expire_time.CopyFrom(m.ts(expire))
        return admin_pb2.CreateUserTokenResponse(
            token_id=issued.token_id, secret=issued.secret, token=token
        )

    async def RevokeUserToken(
        self, request: admin_pb2.RevokeUserTokenRequest, context: Context
    ) -> admin_pb2.RevokeUserTokenResponse:
        p = await self.begin(request, context)
        token = await self.tenancy.revoke_user_token(p, request.user_id, request.token_id)
        return admin_pb2.RevokeUserTokenResponse(token=tm.token_to_pb(token))

    async def CreateWorkKey(
        self, request: admin_pb2.CreateWorkKeyRequest, context: Context
    ) -> admin_pb2.CreateWorkKeyResponse:
        p = await self.begin(request, context)
        k = request.work_key
        issued = await self.engine.create_work_key(
            p,
            k.display_name,
            k.org_slug,
            list(k.coordinator_ids),
            [Capability(admin_pb2.WorkKey.Capability.Name(c)) for c in k.capabilities],
            m.from_ts(k.expire_time) if k.HasField("expire_time") else None,
        )
        return admin_pb2.CreateWorkKeyResponse(
            key_id=issued.key.key_id, secret=issued.secret, work_key=m.work_key_to_pb(issued.key)
        )

    async def ListWorkKeys(
        self, request: admin_pb2.ListWorkKeysRequest, context: Context
    ) -> admin_pb2.ListWorkKeysResponse:
        p = await self.begin(request, context)
        page = await self.engine.list_work_keys(
            p, request.org_slug, request.page_size, request.page_token
        )
        return admin_pb2.ListWorkKeysResponse(
            work_keys=[m.work_key_to_pb(k) for k in page.items],
            next_page_token=page.next_page_token,
        )

    async def GetWorkKey(
        self, request: admin_pb2.GetWorkKeyRequest, context: Context
    ) -> admin_pb2.GetWorkKeyResponse:
        p = await self.begin(request, context)
        return admin_pb2.GetWorkKeyResponse(
            work_key=m.work_key_to_pb(await self.engine.get_work_key(p, request.key_id))
        )

    async def RevokeWorkKey(
        self, request: admin_pb2.RevokeWorkKeyRequest, context: Context
    ) -> admin_pb2.RevokeWorkKeyResponse:
        p = await self.begin(request, context)
        return admin_pb2.RevokeWorkKeyResponse(
            work_key=m.work_key_to_pb(await self.engine.revoke_work_key(p, request.key_id))
        )

    async def GetSettings(
        self, request: admin_pb2.GetSettingsRequest, context: Context
    ) -> admin_pb2.GetSettingsResponse:
        p = await self.begin(request, context)
        return admin_pb2.GetSettingsResponse(
            settings=m.settings_to_pb(await self.engine.get_settings(p))
        )

    async def UpdateSettings(
        self, request: admin_pb2.UpdateSettingsRequest, context: Context
    ) -> admin_pb2.UpdateSettingsResponse:
        p = await self.begin(request, context)
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


class WorkCoordinatorServicer(_Base, work_coordinator_pb2_grpc.WorkCoordinatorServiceServicer):
    async def CreateWorkCoordinator(
        self, request: work_coordinator_pb2.CreateWorkCoordinatorRequest, context: Context
    ) -> work_coordinator_pb2.CreateWorkCoordinatorResponse:
        p = await self.begin(request, context)
        wc = request.work_coordinator
        scope = work_coordinator_pb2.WorkCoordinator.Scope.Name(wc.scope)
        spec = CoordinatorSpec(
            scope=None if scope == "SCOPE_UNSPECIFIED" else Scope(scope),
            org_slug=wc.org_slug,
            display_name=wc.display_name,
            enabled=wc.enabled if wc.HasField("enabled") else None,
            changes=m.coordinator_changes(wc, m.populated_paths(wc)),
        )
        created = await self.engine.create_coordinator(p, spec, request.request_id)
        return work_coordinator_pb2.CreateWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(created)
        )

    async def ListWorkCoordinators(
        self, request: work_coordinator_pb2.ListWorkCoordinatorsRequest, context: Context
    ) -> work_coordinator_pb2.ListWorkCoordinatorsResponse:
        p = await self.begin(request, context)
        page = await self.engine.list_coordinators(
            p, request.org_slug, request.page_size, request.page_token
        )
        return work_coordinator_pb2.ListWorkCoordinatorsResponse(
            work_coordinators=[m.coordinator_to_pb(c) for c in page.items],
            next_page_token=page.next_page_token,
        )

    async def GetWorkCoordinator(
        self, request: work_coordinator_pb2.GetWorkCoordinatorRequest, context: Context
    ) -> work_coordinator_pb2.GetWorkCoordinatorResponse:
        p = await self.begin(request, context)
        c = await self.engine.get_coordinator(p, request.coordinator_id)
        return work_coordinator_pb2.GetWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(c)
        )

    async def UpdateWorkCoordinator(
        self, request: work_coordinator_pb2.UpdateWorkCoordinatorRequest, context: Context
    ) -> work_coordinator_pb2.UpdateWorkCoordinatorResponse:
        paths = list(request.update_mask.paths) or m.populated_paths(request.work_coordinator)
        if not request.work_coordinator.scope:
            # `scope` is required on create only (and immutable): an update body may leave it
            # out, as in api.md's `PATCH …/{child} {"parentCoordinatorId": …}`. Fill it for the
            # field rules only; it is not among `paths`, so it changes nothing.
            filled = work_coordinator_pb2.UpdateWorkCoordinatorRequest()
            filled.CopyFrom(request)
            filled.work_coordinator.scope = work_coordinator_pb2.WorkCoordinator.ORG
            request = filled
        p = await self.begin(request, context)
        wc = request.work_coordinator
        immutable = [
            path for path in paths if path.split(".")[0] in ("scope", "org_slug", "coordinator_id")
        ]
        if immutable:
            raise InvalidArgument.single("update_mask", f"immutable: {', '.join(immutable)}")
        spec = CoordinatorSpec(
            scope=None,
            display_name=wc.display_name if "display_name" in paths else "",
            enabled=wc.enabled if "enabled" in paths else None,
            changes=m.coordinator_changes(wc, paths),
        )
        updated = await self.engine.update_coordinator(p, request.coordinator_id, spec, wc.etag)
        return work_coordinator_pb2.UpdateWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(updated)
        )

    async def GetView(
        self, request: work_coordinator_pb2.GetViewRequest, context: Context
    ) -> work_coordinator_pb2.GetViewResponse:
        p = await self.begin(request, context)
        view = await self.engine.view(
            p, request.coordinator_id, request.page_size, request.page_token
        )
        return work_coordinator_pb2.GetViewResponse(view=m.view_to_pb(view))

    async def Explain(
        self, request: work_coordinator_pb2.ExplainRequest, context: Context
    ) -> work_coordinator_pb2.ExplainResponse:
        p = await self.begin(request, context)
        x = await self.engine.explain(p, request.coordinator_id, request.lane_id, request.item_id)
        return work_coordinator_pb2.ExplainResponse(explanation=m.explanation_to_pb(x))

    async def ListEvents(
        self, request: work_coordinator_pb2.ListEventsRequest, context: Context
    ) -> work_coordinator_pb2.ListEventsResponse:
        p = await self.begin(request, context)
        page = await self.engine.list_events(
            p,
            request.coordinator_id,
            request.since_revision,
            request.page_size,
            request.page_token,
            request.lane_id,
            request.item_id,
        )
        return work_coordinator_pb2.ListEventsResponse(
            events=[m.event_to_pb(e) for e in page.events],
            next_page_token=page.next_page_token,
            revision=page.revision,
        )

    async def GetDigest(
        self, request: work_coordinator_pb2.GetDigestRequest, context: Context
    ) -> work_coordinator_pb2.GetDigestResponse:
        p = await self.begin(request, context)
        digest = await self.engine.get_digest(p, request.coordinator_id, request.day)
        return work_coordinator_pb2.GetDigestResponse(digest=m.digest_to_pb(digest))

    async def ListPendingActions(
        self, request: work_coordinator_pb2.ListPendingActionsRequest, context: Context
    ) -> work_coordinator_pb2.ListPendingActionsResponse:
        p = await self.begin(request, context)
        name = work_coordinator_pb2.PendingAction.State.Name(request.state)
        state = None if name == "STATE_UNSPECIFIED" else PendingActionState(name)
        page = await self.engine.list_pending_actions(
            p, request.coordinator_id, state, request.page_size, request.page_token
        )
        return work_coordinator_pb2.ListPendingActionsResponse(
            pending_actions=[m.pending_action_to_pb(a) for a in page.items],
            next_page_token=page.next_page_token,
        )

    async def ResolvePendingAction(
        self, request: work_coordinator_pb2.ResolvePendingActionRequest, context: Context
    ) -> work_coordinator_pb2.ResolvePendingActionResponse:
        p = await self.begin(request, context)
        action = await self.engine.resolve_pending_action(
            p, request.coordinator_id, request.action_id, request.resolution
        )
        return work_coordinator_pb2.ResolvePendingActionResponse(
            pending_action=m.pending_action_to_pb(action)
        )

    async def CreateGrant(
        self, request: work_coordinator_pb2.CreateGrantRequest, context: Context
    ) -> work_coordinator_pb2.CreateGrantResponse:
        p = await self.begin(request, context)
        g = request.grant
        grant = await self.tenancy.create_grant(
            p,
            request.coordinator_id,
            g.parent_coordinator_id,
            [
                GrantPermission(work_coordinator_pb2.Grant.Permission.Name(x))
                for x in g.permissions
                if x != work_coordinator_pb2.Grant.PERMISSION_UNSPECIFIED
            ],
            m.from_ts(g.expire_time) if g.HasField("expire_time") else None,
            request.request_id,
        )
        return work_coordinator_pb2.CreateGrantResponse(
            grant=tm.grant_to_pb(grant, self.engine.clock.now())
        )

    async def ListGrants(
        self, request: work_coordinator_pb2.ListGrantsRequest, context: Context
    ) -> work_coordinator_pb2.ListGrantsResponse:
        p = await self.begin(request, context)
        page = await self.tenancy.list_grants(
            p, request.coordinator_id, request.page_size, request.page_token
        )
        now = self.engine.clock.now()
        return work_coordinator_pb2.ListGrantsResponse(
            grants=[tm.grant_to_pb(g, now) for g in page.items],
            next_page_token=page.next_page_token,
        )

    async def RevokeGrant(
        self, request: work_coordinator_pb2.RevokeGrantRequest, context: Context
    ) -> work_coordinator_pb2.RevokeGrantResponse:
        p = await self.begin(request, context)
        grant = await self.tenancy.revoke_grant(p, request.coordinator_id, request.grant_id)
        return work_coordinator_pb2.RevokeGrantResponse(
            grant=tm.grant_to_pb(grant, self.engine.clock.now())
        )

    async def GetChildSummary(
        self, request: work_coordinator_pb2.GetChildSummaryRequest, context: Context
    ) -> work_coordinator_pb2.GetChildSummaryResponse:
        p = await self.begin(request, context)
        summary = await self.tenancy.child_summary(p, request.coordinator_id, request.child_id)
        return work_coordinator_pb2.GetChildSummaryResponse(summary=tm.child_summary_to_pb(summary))

    async def ListChildEscalations(
        self, request: work_coordinator_pb2.ListChildEscalationsRequest, context: Context
    ) -> work_coordinator_pb2.ListChildEscalationsResponse:
        p = await self.begin(request, context)
        escalations = await self.tenancy.child_escalations(
            p, request.coordinator_id, request.child_id
        )
        return work_coordinator_pb2.ListChildEscalationsResponse(
            escalations=[m.escalation_to_pb(e) for e in escalations]
        )

    async def AssignChildWork(
        self, request: work_coordinator_pb2.AssignChildWorkRequest, context: Context
    ) -> work_coordinator_pb2.AssignChildWorkResponse:
        p = await self.begin(request, context)
        item = await self.tenancy.assign_child_work(
            p,
            request.coordinator_id,
            request.child_id,
            request.lane_id,
            request.item_id,
            request.worker_id,
        )
        return work_coordinator_pb2.AssignChildWorkResponse(item=tm.item_summary_to_pb(item))

    async def SteerChildWork(
        self, request: work_coordinator_pb2.SteerChildWorkRequest, context: Context
    ) -> work_coordinator_pb2.SteerChildWorkResponse:
        p = await self.begin(request, context)
        lane = await self.tenancy.steer_child_work(
            p, request.coordinator_id, request.child_id, request.lane_id, request.priority
        )
        return work_coordinator_pb2.SteerChildWorkResponse(lane=tm.lane_summary_to_pb(lane))

    async def EscalateChildWork(
        self, request: work_coordinator_pb2.EscalateChildWorkRequest, context: Context
    ) -> work_coordinator_pb2.EscalateChildWorkResponse:
        p = await self.begin(request, context)
        escalation = await self.tenancy.escalate_child_work(
            p,
            request.coordinator_id,
            request.child_id,
            request.lane_id,
            request.item_id,
            request.reason,
        )
        return work_coordinator_pb2.EscalateChildWorkResponse(
            escalation=m.escalation_to_pb(escalation)
        )


class LaneServicer(_Base, lane_pb2_grpc.LaneServiceServicer):
    async def CreateLane(
        self, request: lane_pb2.CreateLaneRequest, context: Context
    ) -> lane_pb2.CreateLaneResponse:
        p = await self.begin(request, context)
        detail = await self.engine.create_lane(
            p, request.coordinator_id, m.lane_spec_from_pb(request.lane), request.request_id
        )
        return lane_pb2.CreateLaneResponse(lane=m.lane_to_pb(detail))

    async def ListLanes(
        self, request: lane_pb2.ListLanesRequest, context: Context
    ) -> lane_pb2.ListLanesResponse:
        p = await self.begin(request, context)
        state_name = lane_pb2.Lane.State.Name(request.state)
        state = None if state_name == "STATE_UNSPECIFIED" else LaneState(state_name)
        page = await self.engine.list_lanes(
            p, request.coordinator_id, state, request.page_size, request.page_token
        )
        return lane_pb2.ListLanesResponse(
            lanes=[m.lane_to_pb(d) for d in page.items], next_page_token=page.next_page_token
        )

    async def GetLane(
        self, request: lane_pb2.GetLaneRequest, context: Context
    ) -> lane_pb2.GetLaneResponse:
        p = await self.begin(request, context)
        detail = await self.engine.get_lane(p, request.coordinator_id, request.lane_id)
        return lane_pb2.GetLaneResponse(lane=m.lane_to_pb(detail))

    async def PauseLane(
        self, request: lane_pb2.PauseLaneRequest, context: Context
    ) -> lane_pb2.PauseLaneResponse:
        p = await self.begin(request, context)
        detail = await self.engine.pause_lane(
            p, request.coordinator_id, request.lane_id, request.reason, True
        )
        return lane_pb2.PauseLaneResponse(lane=m.lane_to_pb(detail))

    async def ResumeLane(
        self, request: lane_pb2.ResumeLaneRequest, context: Context
    ) -> lane_pb2.ResumeLaneResponse:
        p = await self.begin(request, context)
        detail = await self.engine.pause_lane(
            p, request.coordinator_id, request.lane_id, request.reason, False
        )
        return lane_pb2.ResumeLaneResponse(lane=m.lane_to_pb(detail))

    async def CancelLane(
        self, request: lane_pb2.CancelLaneRequest, context: Context
    ) -> lane_pb2.CancelLaneResponse:
        p = await self.begin(request, context)
        detail = await self.engine.cancel_lane(
            p, request.coordinator_id, request.lane_id, request.reason
        )
        return lane_pb2.CancelLaneResponse(lane=m.lane_to_pb(detail))

    async def AddBlocker(
        self, request: lane_pb2.AddBlockerRequest, context: Context
    ) -> lane_pb2.AddBlockerResponse:
        p = await self.begin(request, context)
        detail = await self.engine.add_blocker(
            p, request.coordinator_id, request.lane_id, request.blocker.reason
        )
        return lane_pb2.AddBlockerResponse(lane=m.lane_to_pb(detail))

    async def ResolveBlocker(
        self, request: lane_pb2.ResolveBlockerRequest, context: Context
    ) -> lane_pb2.ResolveBlockerResponse:
        p = await self.begin(request, context)
        detail = await self.engine.resolve_blocker(
            p, request.coordinator_id, request.lane_id, request.blocker_id
        )
        return lane_pb2.ResolveBlockerResponse(lane=m.lane_to_pb(detail))

    async def LinkTicket(
        self, request: lane_pb2.LinkTicketRequest, context: Context
    ) -> lane_pb2.LinkTicketResponse:
        p = await self.begin(request, context)
        t = request.ticket
        detail = await self.engine.link_ticket(
            p, request.coordinator_id, request.lane_id, Ticket("", t.tracker, t.key, t.url)
        )
        return lane_pb2.LinkTicketResponse(lane=m.lane_to_pb(detail))

    async def CreateItem(
        self, request: lane_pb2.CreateItemRequest, context: Context
    ) -> lane_pb2.CreateItemResponse:
        p = await self.begin(request, context)
        detail = await self.engine.create_item(
            p,
            request.coordinator_id,
            request.lane_id,
            m.item_spec_from_pb(request.item),
            request.request_id,
        )
        return lane_pb2.CreateItemResponse(item=m.item_detail_to_pb(detail))

    async def GetItem(
        self, request: lane_pb2.GetItemRequest, context: Context
    ) -> lane_pb2.GetItemResponse:
        p = await self.begin(request, context)
        detail = await self.engine.get_item(
            p, request.coordinator_id, request.lane_id, request.item_id
        )
        return lane_pb2.GetItemResponse(item=m.item_detail_to_pb(detail))

    async def _decide(self, request: Any, context: Context, decision: Decision) -> lane_pb2.Item:
        p = await self.begin(request, context)
        detail = await self.engine.decide_item(
            p, request.coordinator_id, request.lane_id, request.item_id, decision, request.note
        )
        return m.item_detail_to_pb(detail)

    async def ApproveItem(
        self, request: lane_pb2.ApproveItemRequest, context: Context
    ) -> lane_pb2.ApproveItemResponse:
        item = await self._decide(request, context, Decision.APPROVE)
        return lane_pb2.ApproveItemResponse(item=item)

    async def DenyItem(
        self, request: lane_pb2.DenyItemRequest, context: Context
    ) -> lane_pb2.DenyItemResponse:
        item = await self._decide(request, context, Decision.DENY)
        return lane_pb2.DenyItemResponse(item=item)

    async def ResumeItem(
        self, request: lane_pb2.ResumeItemRequest, context: Context
    ) -> lane_pb2.ResumeItemResponse:
        item = await self._decide(request, context, Decision.RESUME)
        return lane_pb2.ResumeItemResponse(item=item)

    async def CancelItem(
        self, request: lane_pb2.CancelItemRequest, context: Context
    ) -> lane_pb2.CancelItemResponse:
        item = await self._decide(request, context, Decision.CANCEL)
        return lane_pb2.CancelItemResponse(item=item)

    async def RetryItem(
        self, request: lane_pb2.RetryItemRequest, context: Context
    ) -> lane_pb2.RetryItemResponse:
        item = await self._decide(request, context, Decision.RETRY)
        return lane_pb2.RetryItemResponse(item=item)


class WorkerServicer(_Base, worker_pb2_grpc.WorkerServiceServicer):
    async def ReportWorker(
        self, request: worker_pb2.ReportWorkerRequest, context: Context
    ) -> worker_pb2.ReportWorkerResponse:
        p = await self.begin(request, context)
        worker = await self.engine.report_worker(
            p, request.coordinator_id, m.worker_from_pb(request.worker, self.engine.clock.now())
        )
        return worker_pb2.ReportWorkerResponse(worker=m.worker_to_pb(worker))

    async def ListWorkers(
        self, request: worker_pb2.ListWorkersRequest, context: Context
    ) -> worker_pb2.ListWorkersResponse:
        p = await self.begin(request, context)
        page = await self.engine.list_workers(
            p, request.coordinator_id, request.page_size, request.page_token
        )
        return worker_pb2.ListWorkersResponse(
            workers=[m.worker_to_pb(w) for w in page.items], next_page_token=page.next_page_token
        )

    async def Lease(
        self, request: worker_pb2.LeaseRequest, context: Context
    ) -> worker_pb2.LeaseResponse:
        p = await self.begin(request, context)
        granted = await self.engine.lease(p, request.coordinator_id, m.lease_ask_from_pb(request))
        return worker_pb2.LeaseResponse(leases=[m.lease_to_pb(g) for g in granted])

    async def Start(
        self, request: worker_pb2.StartRequest, context: Context
    ) -> worker_pb2.StartResponse:
        p = await self.begin(request, context)
        attempt = await self.engine.start(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.run_identity_from_pb(request.run_identity),
        )
        return worker_pb2.StartResponse(attempt=m.attempt_to_pb(attempt))

    async def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: Context
    ) -> worker_pb2.HeartbeatResponse:
        p = await self.begin(request, context)
        expire = await self.engine.heartbeat(
            p, request.coordinator_id, request.lease_id, request.lease_token, request.progress
        )
        return worker_pb2.HeartbeatResponse(lease_expire_time=m.ts(expire))

    async def Complete(
        self, request: worker_pb2.CompleteRequest, context: Context
    ) -> worker_pb2.CompleteResponse:
        p = await self.begin(request, context)
        attempt = await self.engine.complete(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.evidence_from_pb(request.evidence),
        )
        return worker_pb2.CompleteResponse(attempt=m.attempt_to_pb(attempt))

    async def Fail(
        self, request: worker_pb2.FailRequest, context: Context
    ) -> worker_pb2.FailResponse:
        p = await self.begin(request, context)
        attempt = await self.engine.fail(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.failure_from_pb(request.error),
        )
        return worker_pb2.FailResponse(attempt=m.attempt_to_pb(attempt))

    async def Checkpoint(
        self, request: worker_pb2.CheckpointRequest, context: Context
    ) -> worker_pb2.CheckpointResponse:
        p = await self.begin(request, context)
        attempt = await self.engine.checkpoint(
            p,
            request.coordinator_id,
            request.lease_id,
            request.lease_token,
            m.checkpoint_from_pb(request.checkpoint),
        )
        return worker_pb2.CheckpointResponse(attempt=m.attempt_to_pb(attempt))

    async def Release(
        self, request: worker_pb2.ReleaseRequest, context: Context
    ) -> worker_pb2.ReleaseResponse:
        p = await self.begin(request, context)
        attempt = await self.engine.release(
            p, request.coordinator_id, request.lease_id, request.lease_token, request.reason
        )
        return worker_pb2.ReleaseResponse(attempt=m.attempt_to_pb(attempt))


class MaintenanceServicer(_Base, maintenance_pb2_grpc.MaintenanceServiceServicer):
    async def ListMaintenanceTargets(
        self, request: maintenance_pb2.ListMaintenanceTargetsRequest, context: Context
    ) -> maintenance_pb2.ListMaintenanceTargetsResponse:
        p = await self.begin(request, context)
        found = await self.engine.maintenance_targets(p)
        return maintenance_pb2.ListMaintenanceTargetsResponse(
            platform_enabled=found.platform_enabled,
            targets=[
                maintenance_pb2.MaintenanceTarget(
                    coordinator_id=t.coordinator_id, revision=t.revision
                )
                for t in found.targets
            ],
        )

    async def RunMaintenance(
        self, request: maintenance_pb2.RunMaintenanceRequest, context: Context
    ) -> maintenance_pb2.RunMaintenanceResponse:
        p = await self.begin(request, context)
        report = await self.engine.run_maintenance(p, request.coordinator_id, request.batch_size)
        return maintenance_pb2.RunMaintenanceResponse(report=m.report_to_pb(report))

    async def AcquireLeadership(
        self, request: maintenance_pb2.AcquireLeadershipRequest, context: Context
    ) -> maintenance_pb2.AcquireLeadershipResponse:
        p = await self.begin(request, context)
        claim = await self.engine.acquire_leadership(
            p, request.name, request.holder_id, request.lease_seconds
        )
        return maintenance_pb2.AcquireLeadershipResponse(
            leadership=_leadership(claim.leadership, claim.held)
        )

    async def ReleaseLeadership(
        self, request: maintenance_pb2.ReleaseLeadershipRequest, context: Context
    ) -> maintenance_pb2.ReleaseLeadershipResponse:
        p = await self.begin(request, context)
        leadership = await self.engine.release_leadership(p, request.name, request.holder_id)
        if leadership is None:
            return maintenance_pb2.ReleaseLeadershipResponse(
                leadership=maintenance_pb2.Leadership(name=request.name)
            )
        return maintenance_pb2.ReleaseLeadershipResponse(leadership=_leadership(leadership, False))


def _leadership(leadership: Any, held: bool) -> maintenance_pb2.Leadership:
    out = maintenance_pb2.Leadership(
        name=leadership.name, holder_id=leadership.holder_id, held=held, term=leadership.term
    )
    out.expire_time.CopyFrom(m.ts(leadership.expire_time))
    return out


SERVICES = (
    (admin_pb2_grpc.add_AdminServiceServicer_to_server, AdminServicer, "AdminService"),
    (
        work_coordinator_pb2_grpc.add_WorkCoordinatorServiceServicer_to_server,
        WorkCoordinatorServicer,
        "WorkCoordinatorService",
    ),
    (lane_pb2_grpc.add_LaneServiceServicer_to_server, LaneServicer, "LaneService"),
    (worker_pb2_grpc.add_WorkerServiceServicer_to_server, WorkerServicer, "WorkerService"),
    (feed_pb2_grpc.add_FeedServiceServicer_to_server, FeedServicer, "FeedService"),
    (
        maintenance_pb2_grpc.add_MaintenanceServiceServicer_to_server,
        MaintenanceServicer,
        "MaintenanceService",
    ),
    *tm.SESSION_SERVICES,
)

__all__ = ["SERVICES"]
