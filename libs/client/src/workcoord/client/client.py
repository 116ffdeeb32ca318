"""``WorkcoordClient``: the typed async client over the coordinator's and recovery's gRPC APIs."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

import grpc
import grpc.aio

from workcoord.api.v1 import (
    admin_pb2_grpc,
    feed_pb2_grpc,
    lane_pb2_grpc,
    maintenance_pb2_grpc,
    notification_pb2_grpc,
    recovery_pb2_grpc,
    tracker_pb2_grpc,
    work_coordinator_pb2_grpc,
    worker_pb2_grpc,
)
from workcoord.client.interceptors import credential_interceptors
from workcoord.kit.grpc_server import TlsSettings, client_channel

if TYPE_CHECKING:
    from workcoord.api.v1.admin_pb2_grpc import AdminServiceAsyncStub
    from workcoord.api.v1.feed_pb2_grpc import FeedServiceAsyncStub
    from workcoord.api.v1.lane_pb2_grpc import LaneServiceAsyncStub
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub
    from workcoord.api.v1.notification_pb2_grpc import NotificationServiceAsyncStub
    from workcoord.api.v1.recovery_pb2_grpc import RecoveryServiceAsyncStub
    from workcoord.api.v1.tracker_pb2_grpc import TrackerServiceAsyncStub
    from workcoord.api.v1.work_coordinator_pb2_grpc import WorkCoordinatorServiceAsyncStub
    from workcoord.api.v1.worker_pb2_grpc import WorkerServiceAsyncStub

__all__ = ["DEFAULT_ADDRESS", "DEFAULT_RECOVERY_ADDRESS", "WorkcoordClient"]

DEFAULT_ADDRESS = "127.0.0.1:50051"
DEFAULT_RECOVERY_ADDRESS = "127.0.0.1:50052"

Tls = TlsSettings | grpc.ChannelCredentials


class WorkcoordClient:
    """Service stubs with ``token`` sent as ``authorization: Bearer …`` on every call.

    Every failed call raises the typed :class:`~workcoord.kit.errors.WorkcoordError` the server
    answered (``LeaseLost``, ``InvalidArgument`` with its field violations, …).

    ``tls``: :class:`TlsSettings` (certificate paths), ready-made channel credentials, or None
    for the ``WORKCOORD_TLS_*`` environment (plaintext when none is set, as on loopback).
    ``recovery`` talks to ``recovery_address``; its channel opens on first use.

    Use as ``async with WorkcoordClient(address, token) as client: …`` or call :meth:`close`.
    """

    def __init__(
        self,
        address: str = DEFAULT_ADDRESS,
        token: str | None = None,
        *,
        tls: Tls | None = None,
        recovery_address: str = DEFAULT_RECOVERY_ADDRESS,
    ) -> None:
        self.address = address
        self.recovery_address = recovery_address
        self._tls = tls
        self._interceptors = credential_interceptors(token)
        self._channel = self._open(address)
        self._recovery_channel: grpc.aio.Channel | None = None
        self._recovery: RecoveryServiceAsyncStub | None = None

        self.admin: AdminServiceAsyncStub = admin_pb2_grpc.AdminServiceStub(self._channel)
        self.coordinators: WorkCoordinatorServiceAsyncStub = (
            work_coordinator_pb2_grpc.WorkCoordinatorServiceStub(self._channel)
        )
        self.lanes: LaneServiceAsyncStub = lane_pb2_grpc.LaneServiceStub(self._channel)
        self.workers: WorkerServiceAsyncStub = worker_pb2_grpc.WorkerServiceStub(self._channel)
        self.feed: FeedServiceAsyncStub = feed_pb2_grpc.FeedServiceStub(self._channel)
        self.maintenance: MaintenanceServiceAsyncStub = maintenance_pb2_grpc.MaintenanceServiceStub(
            self._channel
        )
        self.trackers: TrackerServiceAsyncStub = tracker_pb2_grpc.TrackerServiceStub(self._channel)
        self.notifications: NotificationServiceAsyncStub = (
            notification_pb2_grpc.NotificationServiceStub(self._channel)
        )

    @property
    def recovery(self) -> RecoveryServiceAsyncStub:
        """``RecoveryService`` at ``recovery_address`` (a separate process)."""
        if self._recovery is None:
            self._recovery_channel = self._open(self.recovery_address)
            self._recovery = recovery_pb2_grpc.RecoveryServiceStub(self._recovery_channel)
        return self._recovery

    @property
    def channel(self) -> grpc.aio.Channel:
        """The coordinator channel, for stubs this class does not expose."""
        return self._channel

    async def close(self) -> None:
        """Close the channels; pending calls are cancelled."""
        await self._channel.close()
        if self._recovery_channel is not None:
            await self._recovery_channel.close()

    async def __aenter__(self) -> WorkcoordClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    def _open(self, address: str) -> grpc.aio.Channel:
        if isinstance(self._tls, grpc.ChannelCredentials):
            return grpc.aio.secure_channel(address, self._tls, interceptors=self._interceptors)
        return client_channel(address, self._tls, interceptors=self._interceptors)
