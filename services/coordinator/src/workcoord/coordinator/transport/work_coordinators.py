"""``WorkCoordinatorService``: work coordinators and their configuration, views, explanations,
events, digests, pending actions, and a parent's grants over its children."""

from __future__ import annotations

from workcoord.api.v1 import work_coordinator_pb2, work_coordinator_pb2_grpc
from workcoord.coordinator.domain.grants import GrantPermission
from workcoord.coordinator.domain.inputs import (
    AssignChildWorkInput,
    CreateGrantInput,
    EscalateChildWorkInput,
    ListGrantsInput,
    SteerChildWorkInput,
)
from workcoord.coordinator.domain.model import PendingActionState, Scope
from workcoord.coordinator.domain.specs import CoordinatorSpec
from workcoord.kit.errors import InvalidArgument
from workcoord.kit.fingerprint import request_fingerprint

from . import mapping as m
from . import tenancy_mapping as tmap
from .base import Context, EngineServicer, rpc
from .gate import caller

__all__ = ["WorkCoordinatorServicer"]


class WorkCoordinatorServicer(
    EngineServicer, work_coordinator_pb2_grpc.WorkCoordinatorServiceServicer
):
    async def CreateWorkCoordinator(
        self, request: work_coordinator_pb2.CreateWorkCoordinatorRequest, context: Context
    ) -> work_coordinator_pb2.CreateWorkCoordinatorResponse:
        p = caller().principal
        wc = request.work_coordinator
        spec = CoordinatorSpec(
            scope=m.enum_from_pb(work_coordinator_pb2.WorkCoordinator.Scope, wc.scope, Scope),
            org_slug=wc.org_slug,
            display_name=wc.display_name,
            enabled=wc.enabled if wc.HasField("enabled") else None,
            changes=m.coordinator_changes(wc, m.populated_paths(wc, entries=False)),
        )
        created = await self.engine.create_coordinator(
            p, spec, request.request_id, fingerprint=request_fingerprint(request)
        )
        return work_coordinator_pb2.CreateWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(created)
        )

    ListWorkCoordinators = rpc(
        work_coordinator_pb2.ListWorkCoordinatorsRequest,
        lambda s, p, r: s.engine.list_coordinators(p, r.org_slug, r.page_size, r.page_token),
        lambda page: m.page_to_pb(
            work_coordinator_pb2.ListWorkCoordinatorsResponse,
            "work_coordinators",
            page,
            m.coordinator_to_pb,
        ),
    )

    GetWorkCoordinator = rpc(
        work_coordinator_pb2.GetWorkCoordinatorRequest,
        lambda s, p, r: s.engine.get_coordinator(p, r.coordinator_id),
        lambda c: work_coordinator_pb2.GetWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(c)
        ),
    )

    async def UpdateWorkCoordinator(
        self, request: work_coordinator_pb2.UpdateWorkCoordinatorRequest, context: Context
    ) -> work_coordinator_pb2.UpdateWorkCoordinatorResponse:
        p = caller().principal
        paths = list(request.update_mask.paths) or m.populated_paths(request.work_coordinator)
        m.check_update_paths(paths)
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

    GetView = rpc(
        work_coordinator_pb2.GetViewRequest,
        lambda s, p, r: s.engine.view(p, r.coordinator_id, r.page_size, r.page_token),
        m.view_response,
    )

    Explain = rpc(
        work_coordinator_pb2.ExplainRequest,
        lambda s, p, r: s.engine.explain(p, r.coordinator_id, r.lane_id, r.item_id),
        lambda x: work_coordinator_pb2.ExplainResponse(explanation=m.explanation_to_pb(x)),
    )

    ListEvents = rpc(
        work_coordinator_pb2.ListEventsRequest,
        lambda s, p, r: s.engine.list_events(
            p,
            r.coordinator_id,
            r.since_revision,
            r.page_size,
            r.page_token,
            r.lane_id,
            r.item_id,
        ),
        lambda page: work_coordinator_pb2.ListEventsResponse(
            events=[m.event_to_pb(e) for e in page.events],
            next_page_token=page.next_page_token,
            revision=page.revision,
        ),
    )

    GetDigest = rpc(
        work_coordinator_pb2.GetDigestRequest,
        lambda s, p, r: s.engine.get_digest(p, r.coordinator_id, r.day),
        lambda digest: work_coordinator_pb2.GetDigestResponse(digest=m.digest_to_pb(digest)),
    )

    ListPendingActions = rpc(
        work_coordinator_pb2.ListPendingActionsRequest,
        lambda s, p, r: s.engine.list_pending_actions(
            p,
            r.coordinator_id,
            m.enum_from_pb(work_coordinator_pb2.PendingAction.State, r.state, PendingActionState),
            r.page_size,
            r.page_token,
        ),
        lambda page: m.page_to_pb(
            work_coordinator_pb2.ListPendingActionsResponse,
            "pending_actions",
            page,
            m.pending_action_to_pb,
        ),
    )

    ResolvePendingAction = rpc(
        work_coordinator_pb2.ResolvePendingActionRequest,
        lambda s, p, r: s.engine.resolve_pending_action(
            p, r.coordinator_id, r.action_id, r.resolution
        ),
        lambda action: work_coordinator_pb2.ResolvePendingActionResponse(
            pending_action=m.pending_action_to_pb(action)
        ),
    )

    # ------------------------------------------------------------------ grants (child side)

    async def CreateGrant(
        self, request: work_coordinator_pb2.CreateGrantRequest, context: Context
    ) -> work_coordinator_pb2.CreateGrantResponse:
        g = request.grant
        new = CreateGrantInput(
            coordinator_id=request.coordinator_id,
            parent_coordinator_id=g.parent_coordinator_id,
            permissions=tuple(
                GrantPermission(work_coordinator_pb2.Grant.Permission.Name(x))
                for x in g.permissions
                if x != work_coordinator_pb2.Grant.PERMISSION_UNSPECIFIED
            ),
            expire_time=m.from_optional_ts(g, "expire_time"),
            request_id=request.request_id,
            fingerprint=request_fingerprint(request),
        )
        grant = await self.engine.grants.create_grant(caller().principal, new)
        return work_coordinator_pb2.CreateGrantResponse(
            grant=tmap.grant_to_pb(grant, self.engine.clock.now())
        )

    async def ListGrants(
        self, request: work_coordinator_pb2.ListGrantsRequest, context: Context
    ) -> work_coordinator_pb2.ListGrantsResponse:
        listing = ListGrantsInput(request.coordinator_id, request.page_size, request.page_token)
        page = await self.engine.grants.list_grants(caller().principal, listing)
        now = self.engine.clock.now()
        return m.page_to_pb(
            work_coordinator_pb2.ListGrantsResponse,
            "grants",
            page,
            lambda grant: tmap.grant_to_pb(grant, now),
        )

    async def RevokeGrant(
        self, request: work_coordinator_pb2.RevokeGrantRequest, context: Context
    ) -> work_coordinator_pb2.RevokeGrantResponse:
        grant = await self.engine.grants.revoke_grant(
            caller().principal, request.coordinator_id, request.grant_id
        )
        return work_coordinator_pb2.RevokeGrantResponse(
            grant=tmap.grant_to_pb(grant, self.engine.clock.now())
        )

    # ------------------------------------------------------------------ children (parent side)

    async def GetChildSummary(
        self, request: work_coordinator_pb2.GetChildSummaryRequest, context: Context
    ) -> work_coordinator_pb2.GetChildSummaryResponse:
        summary = await self.engine.children.child_summary(
            caller().principal, request.coordinator_id, request.child_id
        )
        return work_coordinator_pb2.GetChildSummaryResponse(
            summary=tmap.child_summary_to_pb(summary)
        )

    async def ListChildEscalations(
        self, request: work_coordinator_pb2.ListChildEscalationsRequest, context: Context
    ) -> work_coordinator_pb2.ListChildEscalationsResponse:
        escalations = await self.engine.children.child_escalations(
            caller().principal, request.coordinator_id, request.child_id
        )
        return work_coordinator_pb2.ListChildEscalationsResponse(
            escalations=[m.escalation_to_pb(e) for e in escalations]
        )

    async def AssignChildWork(
        self, request: work_coordinator_pb2.AssignChildWorkRequest, context: Context
    ) -> work_coordinator_pb2.AssignChildWorkResponse:
        assign = AssignChildWorkInput(
            parent_id=request.coordinator_id,
            child_id=request.child_id,
            lane_id=request.lane_id,
            item_id=request.item_id,
            worker_id=request.worker_id,
        )
        item = await self.engine.children.assign_child_work(caller().principal, assign)
        return work_coordinator_pb2.AssignChildWorkResponse(item=tmap.item_summary_to_pb(item))

    async def SteerChildWork(
        self, request: work_coordinator_pb2.SteerChildWorkRequest, context: Context
    ) -> work_coordinator_pb2.SteerChildWorkResponse:
        steer = SteerChildWorkInput(
            parent_id=request.coordinator_id,
            child_id=request.child_id,
            lane_id=request.lane_id,
            priority=request.priority,
        )
        lane = await self.engine.children.steer_child_work(caller().principal, steer)
        return work_coordinator_pb2.SteerChildWorkResponse(lane=tmap.lane_summary_to_pb(lane))

    async def EscalateChildWork(
        self, request: work_coordinator_pb2.EscalateChildWorkRequest, context: Context
    ) -> work_coordinator_pb2.EscalateChildWorkResponse:
        escalate = EscalateChildWorkInput(
            parent_id=request.coordinator_id,
            child_id=request.child_id,
            lane_id=request.lane_id,
            reason=request.reason,
            item_id=request.item_id,
        )
        escalation = await self.engine.children.escalate_child_work(caller().principal, escalate)
        return work_coordinator_pb2.EscalateChildWorkResponse(
            escalation=m.escalation_to_pb(escalation)
        )
