"""The coordinator's gRPC services: each generated ``add_…_to_server``, its servicer class and
its name, and how to build a servicer. One module per service holds the methods; every call
reaches them through :class:`~.gate.CallGate` (authenticated and validated)."""

from __future__ import annotations

from typing import Any

from workcoord.api.v1 import (
    admin_pb2_grpc,
    feed_pb2_grpc,
    lane_pb2_grpc,
    maintenance_pb2_grpc,
    notification_pb2_grpc,
    session_pb2_grpc,
    tracker_pb2_grpc,
    work_coordinator_pb2_grpc,
    worker_pb2_grpc,
)
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.oidc import OidcVerifier
from workcoord.kit.settings import CoordinatorSettings

from .admin import AdminServicer
from .feed import FeedServicer, feed_options
from .lanes import LaneServicer
from .maintenance import MaintenanceServicer
from .notifications import NotificationServicer
from .sessions import SessionServicer
from .trackers import TrackerServicer
from .work_coordinators import WorkCoordinatorServicer
from .workers import WorkerServicer

__all__ = [
    "SERVICES",
    "AdminServicer",
    "FeedServicer",
    "LaneServicer",
    "MaintenanceServicer",
    "NotificationServicer",
    "SessionServicer",
    "TrackerServicer",
    "WorkCoordinatorServicer",
    "WorkerServicer",
    "build_servicer",
]

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
    (session_pb2_grpc.add_SessionServiceServicer_to_server, SessionServicer, "SessionService"),
    (tracker_pb2_grpc.add_TrackerServiceServicer_to_server, TrackerServicer, "TrackerService"),
    (
        notification_pb2_grpc.add_NotificationServiceServicer_to_server,
        NotificationServicer,
        "NotificationService",
    ),
)


def build_servicer(servicer_class: Any, engine: Engine, settings: CoordinatorSettings) -> Any:
    """``servicer_class(engine)``; the feed also gets its settings, sessions the OIDC verifier
    (the engine's, which verifies access tokens too: one JWKS cache)."""
    if servicer_class is FeedServicer:
        return FeedServicer(engine, feed_options(settings))
    if servicer_class is SessionServicer:
        oidc = engine.access_tokens
        return SessionServicer(engine, oidc if isinstance(oidc, OidcVerifier) else None)
    return servicer_class(engine)
