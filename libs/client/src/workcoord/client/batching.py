"""Coalescing worker writes: what is ready within a few milliseconds goes out as one call.

A worker loop that holds many leases (``LoopOptions.concurrency``) finishes and heartbeats
them at nearly the same moments. :class:`Coalescer` gathers the requests submitted within
``window_seconds`` of the first one (at most ``max_entries``) and sends them as one batched
call (``BatchHeartbeat``, ``BatchComplete``, ``BatchFail``); each caller gets its own entry's
answer, so one lease's ``LEASE_LOST`` is that caller's alone. A lone request goes out by the
plain call. A failure of the whole call (unreachable, deadline) reaches every caller, whose
own retry resubmits it. :class:`BatchingWorker` puts a coalescer in front of a worker's
heartbeat, complete and fail; its other calls pass through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from google.rpc import status_pb2

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.kit.status import error_from_status

if TYPE_CHECKING:
    from workcoord.client.worker import Worker

__all__ = ["DEFAULT_WINDOW_SECONDS", "MAX_ENTRIES", "BatchingWorker", "Coalescer"]

DEFAULT_WINDOW_SECONDS = 0.003
MAX_ENTRIES = 100

_Req = TypeVar("_Req")


@dataclass(eq=False)
class _Pending(Generic[_Req]):
    requests: list[_Req] = field(default_factory=list)
    answers: list[asyncio.Future[None]] = field(default_factory=list)


class Coalescer(Generic[_Req]):
    """One kind of write, coalesced: ``one(request)`` for a lone request, ``many(requests)``
    (answering one ``google.rpc.Status`` per request, in order) for several."""

    def __init__(
        self,
        one: Callable[[_Req], Awaitable[object]],
        many: Callable[[list[_Req]], Awaitable[Sequence[status_pb2.Status]]],
        *,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        self._one = one
        self._many = many
        self._window = window_seconds
        self._max = max_entries
        self._pending: _Pending[_Req] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.calls = 0  # calls sent (one per batch or lone request), for reports and tests

    async def submit(self, request: _Req) -> None:
        """Send ``request`` with whatever else is ready; raise its entry's error, if any."""
        pending = self._pending
        if pending is None:
            pending = self._pending = _Pending()
            task = asyncio.create_task(self._send_after_window(pending))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending.requests.append(request)
        pending.answers.append(answer)
        if len(pending.requests) >= self._max:
            self._pending = None  # full: the next request starts the next batch
        await answer

    async def _send_after_window(self, pending: _Pending[_Req]) -> None:
        await asyncio.sleep(self._window)
        if self._pending is pending:
            self._pending = None
        self.calls += 1
        try:
            if len(pending.requests) == 1:
                await self._one(pending.requests[0])
                statuses: Sequence[status_pb2.Status] = [status_pb2.Status()]
            else:
                statuses = await self._many(pending.requests)
        except BaseException as exc:
            for answer in pending.answers:
                if not answer.done():
                    answer.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for answer, status in zip(pending.answers, statuses, strict=True):
            if answer.done():
                continue  # its caller went away
            if status.code == 0:
                answer.set_result(None)
            else:
                answer.set_exception(error_from_status(status))


class BatchingWorker:
    """A :class:`~workcoord.client.worker.Worker` whose heartbeats, completes and fails are
    coalesced (the loop's ``WorkerCalls`` when it holds several leases)."""

    def __init__(self, worker: Worker, *, window_seconds: float = DEFAULT_WINDOW_SECONDS) -> None:
        self.worker = worker
        workers = worker.client.workers
        self.heartbeats = Coalescer(
            workers.Heartbeat, self._heartbeat_many, window_seconds=window_seconds
        )
        self.completes = Coalescer(
            workers.Complete, self._complete_many, window_seconds=window_seconds
        )
        self.fails = Coalescer(workers.Fail, self._fail_many, window_seconds=window_seconds)
        self.lease = worker.lease
        self.start = worker.start
        self.checkpoint = worker.checkpoint
        self.release = worker.release

    @property
    def worker_class(self) -> str:
        return self.worker.worker_class

    async def heartbeat(self, lease: worker_pb2.Lease, progress: str = "") -> None:
        await self.heartbeats.submit(self.worker.heartbeat_request(lease, progress))

    async def complete(
        self, lease: worker_pb2.Lease, evidence: lane_pb2.Evidence | None = None
    ) -> None:
        await self.completes.submit(self.worker.complete_request(lease, evidence))

    async def fail(
        self,
        lease: worker_pb2.Lease,
        message: str,
        *,
        error_type: str = "",
        retryable: bool = True,
    ) -> None:
        request = self.worker.fail_request(
            lease, message, error_type=error_type, retryable=retryable
        )
        await self.fails.submit(request)

    async def _heartbeat_many(
        self, requests: list[worker_pb2.HeartbeatRequest]
    ) -> list[status_pb2.Status]:
        return [r.status for r in await self.worker.batch_heartbeat(requests)]

    async def _complete_many(
        self, requests: list[worker_pb2.CompleteRequest]
    ) -> list[status_pb2.Status]:
        return [r.status for r in await self.worker.batch_complete(requests)]

    async def _fail_many(self, requests: list[worker_pb2.FailRequest]) -> list[status_pb2.Status]:
        return [r.status for r in await self.worker.batch_fail(requests)]
