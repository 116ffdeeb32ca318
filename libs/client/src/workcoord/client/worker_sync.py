"""A synchronous face of :meth:`Worker.run`, for scripts: one plain function per item.

::

    from workcoord.client.worker_sync import run_worker

    def handle(assignment):
        ...                                   # do the work; look at assignment.should_stop()
        return Evidence(summary="done")       # or Failed(...), Checkpointed(...), Released()

    run_worker(handle, address=..., token=..., coordinator_id=..., worker_id="w1",
               worker_class="machine", options=LoopOptions(run_identity=identity))

The handler runs in a thread while the loop heartbeats on its own. A thread cannot be
interrupted, so when the lease is lost (or a drain runs out) the handler is only *told*:
``should_stop()`` turns true and whatever it returns afterwards is not written. It should check
often and return. :func:`run_worker` returns (or raises ``LeaseLost``) once it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client.client import Tls, WorkcoordClient
from workcoord.client.worker import Worker
from workcoord.client.worker_loop import (
    Assignment,
    HandlerResult,
    LeaseFacts,
    LoopEvent,
    LoopOptions,
    LoopReport,
)

__all__ = ["SyncAssignment", "SyncHandler", "run_worker"]


class SyncAssignment(LeaseFacts):
    """One leased item, as a synchronous handler sees it (from its own thread)."""

    def __init__(self, assignment: Assignment, loop: asyncio.AbstractEventLoop) -> None:
        self._assignment = assignment
        self._loop = loop
        self._cancelled = threading.Event()

    def _held_lease(self) -> worker_pb2.Lease:
        return self._assignment.lease

    def should_stop(self) -> bool:
        """True once the worker drains or the lease is lost: return soon."""
        return self._cancelled.is_set() or self._assignment.stopping.is_set()

    def set_progress(self, note: str) -> None:
        """A short note (≤ 1 KiB) the next heartbeat carries."""
        self._loop.call_soon_threadsafe(setattr, self._assignment, "progress", note)

    def start(self, identity: lane_pb2.RunIdentity, timeout: float | None = None) -> None:
        """Record the run identity (LEASED → RUNNING), from the handler's thread."""
        future = asyncio.run_coroutine_threadsafe(self._assignment.start(identity), self._loop)
        future.result(timeout)


SyncHandler = Callable[[SyncAssignment], HandlerResult]


def run_worker(
    handler: SyncHandler,
    *,
    address: str,
    token: str | None,
    coordinator_id: str,
    worker_id: str,
    worker_class: str,
    options: LoopOptions | None = None,
    tls: Tls | None = None,
    handle_signals: bool = True,
    on_event: Callable[[LoopEvent], None] | None = None,
) -> LoopReport:
    """Run ``handler`` for one item at a time until SIGINT/SIGTERM (with ``handle_signals``)
    or, with ``options.once``, after one item. Blocks; see :meth:`Worker.run`."""

    async def main() -> LoopReport:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        installed: list[signal.Signals] = []
        if handle_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                # Only possible on the main thread (and not on Windows); Ctrl-C still raises.
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(signum, stop.set)
                    installed.append(signum)

        async def bridge(assignment: Assignment) -> HandlerResult:
            face = SyncAssignment(assignment, loop)
            try:
                return await asyncio.to_thread(handler, face)
            except asyncio.CancelledError:
                face._cancelled.set()
                raise

        try:
            async with WorkcoordClient(address, token, tls=tls) as client:
                worker = Worker(client, coordinator_id, worker_id, worker_class)
                return await worker.run(bridge, options, stop=stop, on_event=on_event)
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)

    return asyncio.run(main())
