"""``RecoveryService``: run a pass now (``Maintain``) and report status (``GetRecoveryStatus``).

Authorization is the coordinator's: ``Maintain`` forwards the caller's credential (a bearer
credential or a browser session) to ``RunMaintenance`` and ``GetRecoveryStatus`` asks
``GetCurrentPrincipal`` who the caller is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc.aio

from workcoord.api.v1 import admin_pb2, maintenance_pb2, recovery_pb2, recovery_pb2_grpc
from workcoord.kit.errors import PermissionDenied
from workcoord.kit.status import abort_with
from workcoord.recovery.recoverer import Recoverer
from workcoord.recovery.upstream import (
    abort_with_upstream,
    require_caller_credentials,
)

if TYPE_CHECKING:
    from workcoord.api.v1.admin_pb2_grpc import AdminServiceAsyncStub
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub

__all__ = ["RecoveryServicer"]

_Context = grpc.aio.ServicerContext[Any, Any]


class RecoveryServicer(recovery_pb2_grpc.RecoveryServiceServicer):
    """Serves ``RecoveryService`` over one :class:`Recoverer` and the coordinator's stubs."""

    def __init__(
        self,
        recoverer: Recoverer,
        maintenance: MaintenanceServiceAsyncStub,
        admin: AdminServiceAsyncStub,
        *,
        rpc_timeout_seconds: float = 60.0,
    ) -> None:
        self._recoverer = recoverer
        self._maintenance = maintenance
        self._admin = admin
        self._rpc_timeout_seconds = rpc_timeout_seconds

    async def Maintain(
        self, request: recovery_pb2.MaintainRequest, context: _Context
    ) -> recovery_pb2.MaintainResponse:
        """Run one coordinator's pass now, as the caller (the coordinator authorizes it)."""
        credentials = await require_caller_credentials(context)
        try:
            response = await self._maintenance.RunMaintenance(
                maintenance_pb2.RunMaintenanceRequest(coordinator_id=request.coordinator_id),
                metadata=credentials,
                timeout=self._rpc_timeout_seconds,
            )
        except grpc.aio.AioRpcError as exc:
            await abort_with_upstream(context, exc)
        self._recoverer.record_report(response.report)
        return recovery_pb2.MaintainResponse(report=response.report)

    async def GetRecoveryStatus(
        self, request: recovery_pb2.GetRecoveryStatusRequest, context: _Context
    ) -> recovery_pb2.GetRecoveryStatusResponse:
        """This replica's status; platform admins and the service principal only."""
        credentials = await require_caller_credentials(context)
        try:
            response = await self._admin.GetCurrentPrincipal(
                admin_pb2.GetCurrentPrincipalRequest(),
                metadata=credentials,
                timeout=self._rpc_timeout_seconds,
            )
        except grpc.aio.AioRpcError as exc:
            await abort_with_upstream(context, exc)
        principal = response.principal
        if not (principal.platform_admin or principal.kind == admin_pb2.Principal.SERVICE):
            await abort_with(
                context,
                PermissionDenied("recovery status is for platform admins and the service key"),
            )
        return recovery_pb2.GetRecoveryStatusResponse(status=self._recoverer.status())
