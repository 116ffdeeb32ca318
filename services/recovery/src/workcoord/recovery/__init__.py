"""workcoord recovery: drives the coordinator's maintenance on a clock, leader-elected."""

from __future__ import annotations

from workcoord.recovery.recoverer import (
    DEFAULT_LEADERSHIP_SECONDS,
    LEADERSHIP_NAME,
    CoordinatorPassRecord,
    Recoverer,
    SleepFunction,
    StepFailureRecord,
    default_replica_id,
)
from workcoord.recovery.server import RunningRecovery, main, serve, start_recovery
from workcoord.recovery.servicer import RecoveryServicer

__all__ = [
    "DEFAULT_LEADERSHIP_SECONDS",
    "LEADERSHIP_NAME",
    "CoordinatorPassRecord",
    "Recoverer",
    "RecoveryServicer",
    "RunningRecovery",
    "SleepFunction",
    "StepFailureRecord",
    "default_replica_id",
    "main",
    "serve",
    "start_recovery",
]
