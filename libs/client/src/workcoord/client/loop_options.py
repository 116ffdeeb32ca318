"""What :class:`~workcoord.client.worker_loop.WorkerLoop` is given and what it tells: the calls
it makes (``WorkerCalls``), its options, its events and its report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client.batching import DEFAULT_WINDOW_SECONDS
from workcoord.client.retries import Backoff, RetryClock

__all__ = [
    "CALL_BACKOFF",
    "LEASE_BACKOFF",
    "SYSTEM_CLOCK",
    "IdentitySource",
    "LoopEvent",
    "LoopOptions",
    "LoopReport",
    "WorkerCalls",
]

CALL_BACKOFF = Backoff()
LEASE_BACKOFF = Backoff(initial=1.0, maximum=30.0)
SYSTEM_CLOCK = RetryClock()


class WorkerCalls(Protocol):
    """The calls the loop makes: :class:`~workcoord.client.worker.Worker` has them all (the
    seam where the loop's tests put a scripted worker)."""

    @property
    def worker_class(self) -> str: ...

    async def lease(
        self,
        *,
        max_items: int,
        lease_seconds: int,
        wait_seconds: int,
        request_id: str | None,
        rpc_timeout_seconds: float | None = None,
        run_identity: lane_pb2.RunIdentity | None = None,
    ) -> list[worker_pb2.Lease]: ...

    async def start(
        self, lease: worker_pb2.Lease, run_identity: lane_pb2.RunIdentity
    ) -> object: ...

    async def heartbeat(self, lease: worker_pb2.Lease, progress: str = "") -> object: ...

    async def complete(
        self, lease: worker_pb2.Lease, evidence: lane_pb2.Evidence | None = None
    ) -> object: ...

    async def fail(
        self,
        lease: worker_pb2.Lease,
        message: str,
        *,
        error_type: str = "",
        retryable: bool = True,
    ) -> object: ...

    async def checkpoint(
        self, lease: worker_pb2.Lease, checkpoint: lane_pb2.Checkpoint
    ) -> object: ...

    async def release(self, lease: worker_pb2.Lease, reason: str = "") -> object: ...


IdentitySource = lane_pb2.RunIdentity | Callable[[worker_pb2.LeasedItem], lane_pb2.RunIdentity]


@dataclass(frozen=True, slots=True)
class LoopOptions:
    """How :meth:`Worker.run` leases and how patient it is.

    ``run_identity``: when set (an identity, or a function of the leased item), the loop starts
    each lease with it before calling the handler; otherwise the handler calls
    :meth:`Assignment.start` itself (it must, before a ``Completed`` outcome).

    ``concurrency``: how many leases the loop holds at once (1 to 100), each with its own
    handler task. Above 1, :meth:`Worker.run` coalesces the writes: completes and fails ready
    within ``batch_window_seconds`` of each other go out as one batched call, and heartbeats
    fall on one shared beat, so every held lease is heartbeated in one call per interval; a
    fixed ``run_identity`` then rides on the Lease call (the leases start at once, no Start).
    """

    lease_seconds: int = 30
    wait_seconds: int = 30
    once: bool = False
    drain_seconds: float = 30.0
    run_identity: IdentitySource | None = None
    call_backoff: Backoff = CALL_BACKOFF
    lease_backoff: Backoff = LEASE_BACKOFF
    clock: RetryClock = SYSTEM_CLOCK
    concurrency: int = 1
    batch_window_seconds: float = DEFAULT_WINDOW_SECONDS

    @property
    def heartbeat_seconds(self) -> float:
        """Heartbeats go out every third of the lease."""
        return self.lease_seconds / 3


@dataclass(frozen=True, slots=True)
class LoopEvent:
    """Something the loop did, for a progress display. Never carries a token.

    ``kind``: ``waiting``, ``leased``, ``started``, ``retrying``, ``fenced``, ``draining``,
    ``completed``, ``failed``, ``checkpointed``, ``released``, ``refused`` (an outcome the
    server refused, replaced by a non-retryable failure), ``uncertain`` (a retried final write
    answered LEASE_LOST: the first try probably applied), ``lease_lost``.
    """

    kind: str
    lease_id: str = ""
    item: worker_pb2.LeasedItem | None = None
    attempt: int = 0
    detail: str = ""


@dataclass(slots=True)
class LoopReport:
    """What a :meth:`Worker.run` that returned did: outcome kind → count."""

    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def handled(self) -> int:
        """Items handled to an outcome."""
        return sum(self.outcomes.values())
