"""``WorkCoordinatorService``: work coordinators and their configuration, views, explanations,
events, digests, pending actions, and a parent's grants over its children."""

from __future__ import annotations

from workcoord.api.v1 import work_coordinator_pb2, work_coordinator_pb2_grpc
from workcoord.coordinator.domain.grants import GrantPermission
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

    async def CreateGrant(
        self, request: work_coordinator_pb2.CreateGrantRequest, context: Context
    ) -> work_coordinator_pb2.CreateGrantResponse:
        p = caller().principal
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
            m.from_optional_ts(g, "expire_time"),
            request.request_id,
            fingerprint=request_fingerprint(request),
        )
        return work_coordinator_pb2.CreateGrantResponse(
            grant=tmap.grant_to_pb(grant, self.engine.clock.now())
        )

    async def ListGrants(
        self, request: work_coordinator_pb2.ListGrantsRequest, context: Context
    ) -> work_coordinator_pb2.ListGrantsResponse:
        p = caller().principal
        page = await self.tenancy.list_grants(
            p, request.coordinator_id, request.page_size, request.page_token
        )
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
        p = caller().principal
        grant = await self.tenancy.revoke_grant(p, request.coordinator_id, request.grant_id)
        return work_coordinator_pb2.RevokeGrantResponse(
            grant=tmap.grant_to_pb(grant, self.engine.clock.now())
        )

    GetChildSummary = rpc(
        work_coordinator_pb2.GetChildSummaryRequest,
        lambda s, p, r: s.tenancy.child_summary(p, r.coordinator_id, r.child_id),
        lambda summary: work_coordinator_pb2.GetChildSummaryResponse(
            summary=tmap.child_summary_to_pb(summary)
        ),
    )

    ListChildEscalations = rpc(
        work_coordinator_pb2.ListChildEscalationsRequest,
        lambda s, p, r: s.tenancy.child_escalations(p, r.coordinator_id, r.child_id),
        lambda escalations: work_coordinator_pb2.ListChildEscalationsResponse(
            escalations=[m.escalation_to_pb(e) for e in escalations]
        ),
    )

    AssignChildWork = rpc(
        work_coordinator_pb2.AssignChildWorkRequest,
        lambda s, p, r: s.tenancy.assign_child_work(
            p, r.coordinator_id, r.child_id, r.lane_id, r.item_id, r.worker_id
        ),
        lambda item: work_coordinator_pb2.AssignChildWorkResponse(
            item=tmap.item_summary_to_pb(item)
        ),
    )

    SteerChildWork = rpc(
        work_coordinator_pb2.SteerChildWorkRequest,
        lambda s, p, r: s.tenancy.steer_child_work(
            p, r.coordinator_id, r.child_id, r.lane_id, r.priority
        ),
        lambda lane: work_coordinator_pb2.SteerChildWorkResponse(
            lane=tmap.lane_summary_to_pb(lane)
        ),
    )

    EscalateChildWork = rpc(
        work_coordinator_pb2.EscalateChildWorkRequest,
        lambda s, p, r: s.tenancy.escalate_child_work(
            p, r.coordinator_id, r.child_id, r.lane_id, r.item_id, r.reason
        ),
        lambda escalation: work_coordinator_pb2.EscalateChildWorkResponse(
            escalation=m.escalation_to_pb(escalation)
        ),
    )
