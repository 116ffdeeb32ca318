"""``MaintenanceService``: what the recovery service calls to drive time (maintenance passes
over each work coordinator) and to elect its leader."""

from __future__ import annotations

from workcoord.api.v1 import maintenance_pb2, maintenance_pb2_grpc

from . import mapping as m
from .base import Context, EngineServicer, rpc
from .gate import caller

__all__ = ["MaintenanceServicer"]


class MaintenanceServicer(EngineServicer, maintenance_pb2_grpc.MaintenanceServiceServicer):
    ListMaintenanceTargets = rpc(
        maintenance_pb2.ListMaintenanceTargetsRequest,
        lambda s, p, r: s.engine.maintenance_targets(p),
        lambda found: maintenance_pb2.ListMaintenanceTargetsResponse(
            platform_enabled=found.platform_enabled,
            targets=[
                maintenance_pb2.MaintenanceTarget(
                    coordinator_id=t.coordinator_id, revision=t.revision
                )
                for t in found.targets
            ],
        ),
    )

    RunMaintenance = rpc(
        maintenance_pb2.RunMaintenanceRequest,
        lambda s, p, r: s.engine.run_maintenance(p, r.coordinator_id, r.batch_size),
        lambda report: maintenance_pb2.RunMaintenanceResponse(report=m.report_to_pb(report)),
    )

    AcquireLeadership = rpc(
        maintenance_pb2.AcquireLeadershipRequest,
        lambda s, p, r: s.engine.acquire_leadership(p, r.name, r.holder_id, r.lease_seconds),
        lambda claim: maintenance_pb2.AcquireLeadershipResponse(
            leadership=m.leadership_to_pb(claim.leadership, claim.held)
        ),
    )

    async def ReleaseLeadership(
        self, request: maintenance_pb2.ReleaseLeadershipRequest, context: Context
    ) -> maintenance_pb2.ReleaseLeadershipResponse:
        p = caller().principal
        leadership = await self.engine.release_leadership(p, request.name, request.holder_id)
        if leadership is None:
            return maintenance_pb2.ReleaseLeadershipResponse(
                leadership=maintenance_pb2.Leadership(name=request.name)
            )
        return maintenance_pb2.ReleaseLeadershipResponse(
            leadership=m.leadership_to_pb(leadership, False)
        )
