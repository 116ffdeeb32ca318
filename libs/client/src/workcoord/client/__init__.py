"""The workcoord client SDK: typed async stubs with the credential attached, and ``Worker``."""

from __future__ import annotations

from workcoord.client.client import DEFAULT_ADDRESS, DEFAULT_RECOVERY_ADDRESS, WorkcoordClient
from workcoord.client.interceptors import credential_interceptors
from workcoord.client.worker import (
    LeaseHandle,
    LeaseRef,
    Worker,
    process_start_time,
    run_identity_here,
)

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_RECOVERY_ADDRESS",
    "LeaseHandle",
    "LeaseRef",
    "WorkcoordClient",
    "Worker",
    "credential_interceptors",
    "process_start_time",
    "run_identity_here",
]
