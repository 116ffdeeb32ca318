"""The workcoord client SDK: typed async stubs with the credential attached, ``Worker`` and its
loop (``Worker.run``), and a synchronous facade for scripts (``run_worker``)."""

from __future__ import annotations

from workcoord.client.client import DEFAULT_ADDRESS, DEFAULT_RECOVERY_ADDRESS, WorkcoordClient
from workcoord.client.interceptors import credential_interceptors
from workcoord.client.retries import Backoff, new_request_id
from workcoord.client.worker import (
    LeaseHandle,
    LeaseRef,
    Worker,
    process_start_time,
    run_identity_here,
)
from workcoord.client.worker_loop import (
    Assignment,
    Checkpointed,
    Completed,
    Failed,
    Handler,
    LoopEvent,
    LoopOptions,
    LoopReport,
    Outcome,
    Released,
)
from workcoord.client.worker_sync import SyncAssignment, run_worker

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_RECOVERY_ADDRESS",
    "Assignment",
    "Backoff",
    "Checkpointed",
    "Completed",
    "Failed",
    "Handler",
    "LeaseHandle",
    "LeaseRef",
    "LoopEvent",
    "LoopOptions",
    "LoopReport",
    "Outcome",
    "Released",
    "SyncAssignment",
    "WorkcoordClient",
    "Worker",
    "credential_interceptors",
    "new_request_id",
    "process_start_time",
    "run_identity_here",
    "run_worker",
]
