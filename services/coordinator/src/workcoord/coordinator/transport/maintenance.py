"""``MaintenanceService``: what the recovery service calls to drive time (maintenance passes
over each work coordinator), to elect its leader and to mail the digest owners.

Each RPC is one method: read the request into the engine command's input, call the engine as
the caller (:func:`~.gate.caller`), map the answer back to protobuf."""

from __future__ import annotations

from workcoord.api.v1 import maintenance_pb2, maintenance_pb2_grpc
from workcoord.coordinator.domain.inputs import (
    AcquireLeadershipInput,
    MarkMailSentInput,
    ReleaseLeadershipInput,
    RunMaintenanceInput,
)

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller

__all__ = ["MaintenanceServicer"]


class MaintenanceServicer(EngineServicer, maintenance_pb2_grpc.MaintenanceServiceServicer):
    async def ListMaintenanceTargets(
        self, request: maintenance_pb2.ListMaintenanceTargetsRequest, context: Context
    ) -> maintenance_pb2.ListMaintenanceTargetsResponse:
        found = await self.engine.maintenance.maintenance_targets(caller().principal)
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
        command = RunMaintenanceInput(
            coordinator_id=request.coordinator_id, batch_size=request.batch_size
        )
        report = await self.engine.maintenance.run_maintenance(caller().principal, command)
        return maintenance_pb2.RunMaintenanceResponse(report=m.report_to_pb(report))

    async def AcquireLeadership(
        self, request: maintenance_pb2.AcquireLeadershipRequest, context: Context
    ) -> maintenance_pb2.AcquireLeadershipResponse:
        command = AcquireLeadershipInput(
            name=request.name, holder_id=request.holder_id, lease_seconds=request.lease_seconds
        )
        claim = await self.engine.maintenance.acquire_leadership(caller().principal, command)
        return maintenance_pb2.AcquireLeadershipResponse(
            leadership=m.leadership_to_pb(claim.leadership, claim.held)
        )

    async def GetMailDue(
        self, request: maintenance_pb2.GetMailDueRequest, context: Context
    ) -> maintenance_pb2.GetMailDueResponse:
        due = await self.engine.mail.mail_due(caller().principal, request.coordinator_id)
        answer = maintenance_pb2.GetMailDueResponse(
            owner=due.owner,
            owner_display_name=due.owner_display_name,
            org_slug=due.org_slug,
            display_name=due.display_name,
            human_needed=[m.event_to_pb(e) for e in due.human_needed],
            human_needed_through=due.human_needed_through,
            lane_titles=due.lane_titles,
        )
        if due.digest is not None:
            answer.digest.CopyFrom(m.digest_to_pb(due.digest))
        return answer

    async def MarkMailSent(
        self, request: maintenance_pb2.MarkMailSentRequest, context: Context
    ) -> maintenance_pb2.MarkMailSentResponse:
        command = MarkMailSentInput(
            coordinator_id=request.coordinator_id,
            digest_day=request.digest_day,
            human_needed_revision=request.human_needed_revision,
            mailed=request.mailed,
        )
        moved = await self.engine.mail.mark_mail_sent(caller().principal, command)
        return maintenance_pb2.MarkMailSentResponse(moved=moved)

    async def DeliverWebhooks(
        self, request: maintenance_pb2.DeliverWebhooksRequest, context: Context
    ) -> maintenance_pb2.DeliverWebhooksResponse:
        tried = await self.engine.webhooks.deliver(
            caller().principal, request.wait_seconds, request.public_url
        )
        return maintenance_pb2.DeliverWebhooksResponse(tried=tried)

    async def ReleaseLeadership(
        self, request: maintenance_pb2.ReleaseLeadershipRequest, context: Context
    ) -> maintenance_pb2.ReleaseLeadershipResponse:
        command = ReleaseLeadershipInput(name=request.name, holder_id=request.holder_id)
        leadership = await self.engine.maintenance.release_leadership(caller().principal, command)
        if leadership is None:
            return maintenance_pb2.ReleaseLeadershipResponse(
                leadership=maintenance_pb2.Leadership(name=request.name)
            )
        return maintenance_pb2.ReleaseLeadershipResponse(
            leadership=m.leadership_to_pb(leadership, False)
        )
