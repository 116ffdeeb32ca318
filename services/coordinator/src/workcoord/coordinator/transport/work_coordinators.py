"""``WorkCoordinatorService``: work coordinators and their configuration, views, explanations,
events, digests, pending actions, and a parent's grants over its children.

Each RPC is one method: read the request into the engine command's input, call the engine (or,
for grants and a parent's work on its children, the tenancy commands) as the caller
(:func:`~.gate.caller`), map the answer back to protobuf."""

from __future__ import annotations

from workcoord.api.v1 import work_coordinator_pb2, work_coordinator_pb2_grpc
from workcoord.coordinator.domain.grants import GrantPermission
from workcoord.coordinator.domain.inputs import (
    AssignChildWorkInput,
    CreateCoordinatorInput,
    CreateGrantInput,
    EscalateChildWorkInput,
    ExplainInput,
    GetUsageInput,
    GetViewInput,
    ListCoordinatorsInput,
    ListEventsInput,
    ListGrantsInput,
    ListPendingActionsInput,
    ResolvePendingActionInput,
    SteerChildWorkInput,
    UpdateCoordinatorInput,
)
from workcoord.coordinator.domain.model import PendingActionState, Scope
from workcoord.coordinator.domain.specs import CoordinatorSpec
from workcoord.kit.errors import InvalidArgument
from workcoord.kit.fingerprint import request_fingerprint

from . import mapping as m
from . import tenancy_mapping as tmap
from .base import Context, EngineServicer
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
        command = CreateCoordinatorInput(
            spec=spec, request_id=request.request_id, fingerprint=request_fingerprint(request)
        )
        created = await self.engine.coordinators.create_coordinator(p, command)
        return work_coordinator_pb2.CreateWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(created)
        )

    async def ListWorkCoordinators(
        self, request: work_coordinator_pb2.ListWorkCoordinatorsRequest, context: Context
    ) -> work_coordinator_pb2.ListWorkCoordinatorsResponse:
        query = ListCoordinatorsInput(
            org_slug=request.org_slug, page_size=request.page_size, page_token=request.page_token
        )
        page = await self.engine.coordinators.list_coordinators(caller().principal, query)
        return m.page_to_pb(
            work_coordinator_pb2.ListWorkCoordinatorsResponse,
            "work_coordinators",
            page,
            m.coordinator_to_pb,
        )

    async def GetWorkCoordinator(
        self, request: work_coordinator_pb2.GetWorkCoordinatorRequest, context: Context
    ) -> work_coordinator_pb2.GetWorkCoordinatorResponse:
        coordinator = await self.engine.coordinators.get_coordinator(
            caller().principal, request.coordinator_id
        )
        return work_coordinator_pb2.GetWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(coordinator)
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
        command = UpdateCoordinatorInput(
            coordinator_id=request.coordinator_id,
            spec=spec,
            etag=wc.etag,
            budget=m.budget_change(wc, paths),
        )
        updated = await self.engine.coordinators.update_coordinator(p, command)
        return work_coordinator_pb2.UpdateWorkCoordinatorResponse(
            work_coordinator=m.coordinator_to_pb(updated)
        )

    async def GetView(
        self, request: work_coordinator_pb2.GetViewRequest, context: Context
    ) -> work_coordinator_pb2.GetViewResponse:
        query = GetViewInput(
            coordinator_id=request.coordinator_id,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        view = await self.engine.reads.view(caller().principal, query)
        return m.view_response(view)

    async def Explain(
        self, request: work_coordinator_pb2.ExplainRequest, context: Context
    ) -> work_coordinator_pb2.ExplainResponse:
        query = ExplainInput(
            coordinator_id=request.coordinator_id,
            lane_id=request.lane_id,
            item_id=request.item_id,
        )
        explanation = await self.engine.reads.explain(caller().principal, query)
        return work_coordinator_pb2.ExplainResponse(explanation=m.explanation_to_pb(explanation))

    async def GetUsage(
        self, request: work_coordinator_pb2.GetUsageRequest, context: Context
    ) -> work_coordinator_pb2.GetUsageResponse:
        group_by = request.group_by
        query = GetUsageInput(
            coordinator_id=request.coordinator_id,
            day=request.day,
            lane_id=request.lane_id,
            group_by=work_coordinator_pb2.GetUsageRequest.GroupBy.Name(group_by)
            if group_by
            else "",
        )
        report = await self.engine.usage.get_usage(caller().principal, query)
        return m.usage_report_to_pb(report)

    async def GetBudget(
        self, request: work_coordinator_pb2.GetBudgetRequest, context: Context
    ) -> work_coordinator_pb2.GetBudgetResponse:
        query = GetUsageInput(coordinator_id=request.coordinator_id, lane_id=request.lane_id)
        day, lane = await self.engine.usage.get_budget(caller().principal, query)
        return work_coordinator_pb2.GetBudgetResponse(
            work_coordinator=m.budget_report_to_pb(day), lane=m.budget_report_to_pb(lane)
        )

    async def ListEvents(
        self, request: work_coordinator_pb2.ListEventsRequest, context: Context
    ) -> work_coordinator_pb2.ListEventsResponse:
        query = ListEventsInput(
            coordinator_id=request.coordinator_id,
            since_revision=request.since_revision,
            page_size=request.page_size,
            page_token=request.page_token,
            lane_id=request.lane_id,
            item_id=request.item_id,
        )
        page = await self.engine.reads.list_events(caller().principal, query)
        return work_coordinator_pb2.ListEventsResponse(
            events=[m.event_to_pb(e) for e in page.events],
            next_page_token=page.next_page_token,
            revision=page.revision,
        )

    async def GetDigest(
        self, request: work_coordinator_pb2.GetDigestRequest, context: Context
    ) -> work_coordinator_pb2.GetDigestResponse:
        digest = await self.engine.follow_ups.get_digest(
            caller().principal, request.coordinator_id, request.day
        )
        return work_coordinator_pb2.GetDigestResponse(digest=m.digest_to_pb(digest))

    async def ListPendingActions(
        self, request: work_coordinator_pb2.ListPendingActionsRequest, context: Context
    ) -> work_coordinator_pb2.ListPendingActionsResponse:
        query = ListPendingActionsInput(
            coordinator_id=request.coordinator_id,
            state=m.enum_from_pb(
                work_coordinator_pb2.PendingAction.State, request.state, PendingActionState
            ),
            page_size=request.page_size,
            page_token=request.page_token,
        )
        page = await self.engine.follow_ups.list_pending_actions(caller().principal, query)
        return m.page_to_pb(
            work_coordinator_pb2.ListPendingActionsResponse,
            "pending_actions",
            page,
            m.pending_action_to_pb,
        )

    async def ResolvePendingAction(
        self, request: work_coordinator_pb2.ResolvePendingActionRequest, context: Context
    ) -> work_coordinator_pb2.ResolvePendingActionResponse:
        command = ResolvePendingActionInput(
            coordinator_id=request.coordinator_id,
            action_id=request.action_id,
            resolution=request.resolution,
        )
        action = await self.engine.follow_ups.resolve_pending_action(caller().principal, command)
        return work_coordinator_pb2.ResolvePendingActionResponse(
            pending_action=m.pending_action_to_pb(action)
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
