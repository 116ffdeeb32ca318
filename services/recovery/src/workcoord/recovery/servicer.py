"""``RecoveryService``: run a pass now (``Maintain``) and report status (``GetRecoveryStatus``).

Authorization is the coordinator's: ``Maintain`` forwards the caller's credential (a bearer
credential or a browser session) to ``RunMaintenance`` and ``GetRecoveryStatus`` asks
``GetCurrentPrincipal`` who the caller is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import grpc.aio
from google.protobuf.message import Message

from workcoord.api.v1 import admin_pb2, maintenance_pb2, recovery_pb2, recovery_pb2_grpc
from workcoord.kit.errors import PermissionDenied
from workcoord.kit.status import abort_with
from workcoord.recovery.recoverer import Recoverer
from workcoord.recovery.upstream import abort_with_upstream, caller_metadata

if TYPE_CHECKING:
    from workcoord.api.v1.admin_pb2_grpc import AdminServiceAsyncStub
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub

__all__ = ["RecoveryServicer"]

_Context = grpc.aio.ServicerContext[Any, Any]
_R = TypeVar("_R")


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
        response = await self._as_caller(
            context,
            self._maintenance.RunMaintenance,
            maintenance_pb2.RunMaintenanceRequest(coordinator_id=request.coordinator_id),
        )
        self._recoverer.record_report(response.report)
        return recovery_pb2.MaintainResponse(report=response.report)

    async def GetRecoveryStatus(
        self, request: recovery_pb2.GetRecoveryStatusRequest, context: _Context
    ) -> recovery_pb2.GetRecoveryStatusResponse:
        """This replica's status; platform admins and the service principal only."""
        response = await self._as_caller(
            context, self._admin.GetCurrentPrincipal, admin_pb2.GetCurrentPrincipalRequest()
        )
        principal = response.principal
        if not (principal.platform_admin or principal.kind == admin_pb2.Principal.SERVICE):
            await abort_with(
                context,
                PermissionDenied("recovery status is for platform admins and the service key"),
            )
        return recovery_pb2.GetRecoveryStatusResponse(status=self._recoverer.status())

    async def _as_caller(
        self, context: _Context, rpc: Callable[..., Awaitable[_R]], request: Message
    ) -> _R:
        """``rpc(request)`` on the coordinator with the caller's credential; an upstream
        failure aborts this call with the coordinator's status, unchanged."""
        try:
            return await rpc(
                request, metadata=caller_metadata(context), timeout=self._rpc_timeout_seconds
            )
        except grpc.aio.AioRpcError as exc:
            await abort_with_upstream(context, exc)
