"""``Worker``: the calls of a scripted worker, bound to one work coordinator and worker id.

Every write after ``lease`` is fenced by the lease id and its secret token; a write on a lease
that has expired or been superseded raises :class:`~workcoord.kit.errors.LeaseLost`, and the
worker must stop.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

from google.rpc import status_pb2

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client.batching import MAX_ENTRIES, BatchingWorker
from workcoord.client.client import WorkcoordClient
from workcoord.client.retries import new_request_id
from workcoord.client.worker_loop import (
    Handler,
    LoopEvent,
    LoopOptions,
    LoopReport,
    WorkerCalls,
    WorkerLoop,
)
from workcoord.kit.errors import WorkcoordError
from workcoord.kit.status import error_from_status

__all__ = [
    "LeaseHandle",
    "LeaseRef",
    "Worker",
    "entry_error",
    "new_request_id",
    "process_start_time",
    "run_identity_here",
]

# Fallback for platforms without /proc: close to (never before) the real start.
_IMPORT_TIME = datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class LeaseHandle:
    """What a worker needs to write to a lease it holds: its id and its secret token."""

    lease_id: str
    lease_token: str

    def __repr__(self) -> str:  # never print the token
        return f"LeaseHandle(lease_id={self.lease_id!r}, lease_token=<redacted>)"


LeaseRef = LeaseHandle | worker_pb2.Lease


def entry_error(status: status_pb2.Status) -> WorkcoordError | None:
    """The typed error of one entry of a batched write (None when it applied)."""
    return None if status.code == 0 else error_from_status(status)


class _Fence(TypedDict):
    """The fields that fence every write to a lease, as request keyword arguments."""

    coordinator_id: str
    lease_id: str
    lease_token: str


def process_start_time(pid: int | None = None) -> datetime:
    """When process ``pid`` (default: this one) started, UTC; from /proc on Linux.

    Elsewhere (or if /proc cannot be read) the time this module was imported, which for the
    current process is shortly after its start and never in the future.
    """
    try:
        with open(f"/proc/{pid or os.getpid()}/stat", encoding="ascii") as stat:
            # Field 22 (starttime, clock ticks after boot) follows the parenthesised command name,
            # which may itself contain spaces and parentheses.
            fields = stat.read().rpartition(")")[2].split()
        ticks = int(fields[19])
        with open("/proc/stat", encoding="ascii") as system:
            boot = next(int(line.split()[1]) for line in system if line.startswith("btime "))
        seconds = boot + ticks / os.sysconf("SC_CLK_TCK")
        return datetime.fromtimestamp(min(seconds, time.time()), UTC)
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORT_TIME


def run_identity_here(
    agent_id: str,
    engine: str,
    account: str,
    worktree_path: str,
    branch: str,
    *,
    pid: int | None = None,
) -> lane_pb2.RunIdentity:
    """The run identity of this process (or ``pid``): real pid, hostname and start time.

    ``account`` is a non-secret label; the server refuses anything that looks like a credential.
    ``worktree_path`` is made absolute.
    """
    process = pid or os.getpid()
    identity = lane_pb2.RunIdentity(
        pid=process,
        agent_id=agent_id,
        engine=engine,
        account=account,
        hostname=socket.gethostname(),
        worktree_path=os.path.abspath(worktree_path),
        branch=branch,
    )
    identity.started_at.FromDatetime(process_start_time(process))
    return identity


@dataclass(eq=False)
class Worker:
    """One worker on one work coordinator, of ``worker_class`` and any ``worker_classes``
    besides (one worker id serving several classes: its leases take the best ready item of
    any of them)."""

    client: WorkcoordClient
    coordinator_id: str
    worker_id: str
    worker_class: str
    worker_classes: tuple[str, ...] = ()

    async def run(
        self,
        handler: Handler,
        options: LoopOptions | None = None,
        *,
        stop: asyncio.Event | None = None,
        on_event: Callable[[LoopEvent], None] | None = None,
    ) -> LoopReport:
        """Lease, start, heartbeat and finish one item at a time around ``handler`` until
        ``stop`` is set (see :mod:`workcoord.client.worker_loop`); with
        ``options.concurrency`` above 1, that many at once, their writes batched
        (:mod:`workcoord.client.batching`).

        Raises :class:`~workcoord.kit.errors.LeaseLost` once the handler of a lost lease has
        been cancelled: nothing more is written for that lease.
        """
        options = options or LoopOptions()
        if not 1 <= options.concurrency <= MAX_ENTRIES:
            raise ValueError(f"concurrency must be 1 to {MAX_ENTRIES}")
        calls: WorkerCalls = self
        if options.concurrency > 1:
            calls = BatchingWorker(self, window_seconds=options.batch_window_seconds)
        return await WorkerLoop(calls, handler, options, stop=stop, on_event=on_event).run()

    async def lease(
        self,
        *,
        max_items: int = 1,
        lease_seconds: int = 30,
        wait_seconds: int = 0,
        run_identity: lane_pb2.RunIdentity | None = None,
        rpc_timeout_seconds: float | None = None,
        request_id: str | None = None,
    ) -> list[worker_pb2.Lease]:
        """Lease up to ``max_items`` ready items (long-polling up to ``wait_seconds``).

        With ``run_identity`` the leases start at once (RUNNING). An empty list means no work.
        ``request_id`` makes a retry return the leases of a call whose reply was lost: pass
        the same id to retry, or none for a fresh random one.
        """
        request = worker_pb2.LeaseRequest(
            coordinator_id=self.coordinator_id,
            worker_id=self.worker_id,
            worker_class=self.worker_class,
            worker_classes=[c for c in self.worker_classes if c != self.worker_class],
            max_items=max_items,
            lease_seconds=lease_seconds,
            wait_seconds=wait_seconds,
            run_identity=run_identity,
            request_id=request_id or new_request_id(),
        )
        # A long poll may legitimately take wait_seconds; leave room for the round trip.
        deadline = rpc_timeout_seconds if rpc_timeout_seconds is not None else wait_seconds + 30.0
        response = await self.client.workers.Lease(request, timeout=deadline)
        return list(response.leases)

    async def start(
        self, lease: LeaseRef, run_identity: lane_pb2.RunIdentity
    ) -> worker_pb2.StartResponse:
        """Record the run identity; the lease goes LEASED → RUNNING."""
        return await self.client.workers.Start(
            worker_pb2.StartRequest(**self._fence(lease), run_identity=run_identity)
        )

    async def heartbeat(
        self, lease: LeaseRef, progress: str = "", *, usage: lane_pb2.Usage | None = None
    ) -> worker_pb2.HeartbeatResponse:
        """Extend the lease by its original length; ``progress`` is a short note (≤ 1 KiB),
        ``usage`` the attempt's spend so far (running totals: they may only grow)."""
        return await self.client.workers.Heartbeat(
            self.heartbeat_request(lease, progress, usage=usage)
        )

    async def complete(
        self,
        lease: LeaseRef,
        evidence: lane_pb2.Evidence | None = None,
        *,
        usage: lane_pb2.Usage | None = None,
    ) -> worker_pb2.CompleteResponse:
        """Finish successfully with evidence (a verdict for REVIEW, a receipt for SHIP) and
        the attempt's final ``usage``."""
        return await self.client.workers.Complete(
            self.complete_request(lease, evidence, usage=usage)
        )

    async def fail(
        self,
        lease: LeaseRef,
        message: str,
        *,
        error_type: str = "",
        retryable: bool = True,
        usage: lane_pb2.Usage | None = None,
    ) -> worker_pb2.FailResponse:
        """Fail the attempt; a retryable failure requeues with backoff while attempts remain."""
        request = self.fail_request(
            lease, message, error_type=error_type, retryable=retryable, usage=usage
        )
        return await self.client.workers.Fail(request)

    def heartbeat_request(
        self, lease: LeaseRef, progress: str = "", *, usage: lane_pb2.Usage | None = None
    ) -> worker_pb2.HeartbeatRequest:
        """The request of :meth:`heartbeat` (an entry of :meth:`batch_heartbeat`)."""
        return worker_pb2.HeartbeatRequest(**self._fence(lease), progress=progress, usage=usage)

    def complete_request(
        self,
        lease: LeaseRef,
        evidence: lane_pb2.Evidence | None = None,
        *,
        usage: lane_pb2.Usage | None = None,
    ) -> worker_pb2.CompleteRequest:
        """The request of :meth:`complete` (an entry of :meth:`batch_complete`)."""
        return worker_pb2.CompleteRequest(**self._fence(lease), evidence=evidence, usage=usage)

    def fail_request(
        self,
        lease: LeaseRef,
        message: str,
        *,
        error_type: str = "",
        retryable: bool = True,
        usage: lane_pb2.Usage | None = None,
    ) -> worker_pb2.FailRequest:
        """The request of :meth:`fail` (an entry of :meth:`batch_fail`)."""
        error = lane_pb2.ErrorInfo(message=message, type=error_type, retryable=retryable)
        return worker_pb2.FailRequest(**self._fence(lease), error=error, usage=usage)

    async def batch_heartbeat(
        self, requests: Sequence[worker_pb2.HeartbeatRequest]
    ) -> list[worker_pb2.BatchHeartbeatResult]:
        """Heartbeat many leases in one call (1 to 500); one result per request, in order,
        each with its own ``status`` (:func:`entry_error` reads it)."""
        response = await self.client.workers.BatchHeartbeat(
            worker_pb2.BatchHeartbeatRequest(coordinator_id=self.coordinator_id, requests=requests)
        )
        return list(response.results)

    async def batch_complete(
        self, requests: Sequence[worker_pb2.CompleteRequest]
    ) -> list[worker_pb2.BatchCompleteResult]:
        """Complete many leases in one call, answered per entry like :meth:`batch_heartbeat`."""
        response = await self.client.workers.BatchComplete(
            worker_pb2.BatchCompleteRequest(coordinator_id=self.coordinator_id, requests=requests)
        )
        return list(response.results)

    async def batch_fail(
        self, requests: Sequence[worker_pb2.FailRequest]
    ) -> list[worker_pb2.BatchFailResult]:
        """Fail many leases in one call, answered per entry like :meth:`batch_heartbeat`."""
        response = await self.client.workers.BatchFail(
            worker_pb2.BatchFailRequest(coordinator_id=self.coordinator_id, requests=requests)
        )
        return list(response.results)

    async def checkpoint(
        self,
        lease: LeaseRef,
        checkpoint: lane_pb2.Checkpoint,
        *,
        usage: lane_pb2.Usage | None = None,
    ) -> worker_pb2.CheckpointResponse:
        """End the attempt with a checkpoint (and its final ``usage``); the item requeues for
        a continuation."""
        return await self.client.workers.Checkpoint(
            worker_pb2.CheckpointRequest(**self._fence(lease), checkpoint=checkpoint, usage=usage)
        )

    async def release(self, lease: LeaseRef, reason: str = "") -> worker_pb2.ReleaseResponse:
        """Give the lease back without burning an attempt."""
        return await self.client.workers.Release(
            worker_pb2.ReleaseRequest(**self._fence(lease), reason=reason)
        )

    def _fence(self, lease: LeaseRef) -> _Fence:
        return _Fence(
            coordinator_id=self.coordinator_id,
            lease_id=lease.lease_id,
            lease_token=lease.lease_token,
        )
