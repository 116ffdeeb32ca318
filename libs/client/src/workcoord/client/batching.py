"""Coalescing worker writes: what is ready within a few milliseconds goes out as one call.

A worker loop that holds many leases (``LoopOptions.concurrency``) finishes and heartbeats
them at nearly the same moments. :class:`Coalescer` gathers the requests submitted within
``window_seconds`` of the first one (at most ``max_entries``) and sends them as one batched
call (``BatchHeartbeat``, ``BatchComplete``, ``BatchFail``); each caller gets its own entry's
answer, as the plain call would have answered it (a heartbeat's new expiry and ``stop``, a
completed attempt), so one lease's ``LEASE_LOST`` or ``stop`` is that caller's alone. A lone
request goes out by the plain call. A failure of the whole call (unreachable, deadline)
reaches every caller, whose own retry resubmits it. :class:`BatchingWorker` puts a coalescer
in front of a worker's heartbeat, complete and fail; its other calls pass through.
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
_Ans = TypeVar("_Ans")


@dataclass(eq=False)
class _Pending(Generic[_Req, _Ans]):
    requests: list[_Req] = field(default_factory=list)
    answers: list[asyncio.Future[_Ans]] = field(default_factory=list)


class Coalescer(Generic[_Req, _Ans]):
    """One kind of write, coalesced: ``one(request)`` for a lone request, ``many(requests)``
    (answering one ``google.rpc.Status`` and the entry's answer per request, in order) for
    several. Each caller gets its own answer, as ``one`` would have given it."""

    def __init__(
        self,
        one: Callable[[_Req], Awaitable[_Ans]],
        many: Callable[[list[_Req]], Awaitable[Sequence[tuple[status_pb2.Status, _Ans]]]],
        *,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        self._one = one
        self._many = many
        self._window = window_seconds
        self._max = max_entries
        self._pending: _Pending[_Req, _Ans] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.calls = 0  # calls sent (one per batch or lone request), for reports and tests

    async def submit(self, request: _Req) -> _Ans:
        """Send ``request`` with whatever else is ready; answer its entry's answer, or raise
        its entry's error."""
        pending = self._pending
        if pending is None:
            pending = self._pending = _Pending()
            task = asyncio.create_task(self._send_after_window(pending))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        answer: asyncio.Future[_Ans] = asyncio.get_running_loop().create_future()
        pending.requests.append(request)
        pending.answers.append(answer)
        if len(pending.requests) >= self._max:
            self._pending = None  # full: the next request starts the next batch
        return await answer

    async def _send_after_window(self, pending: _Pending[_Req, _Ans]) -> None:
        await asyncio.sleep(self._window)
        if self._pending is pending:
            self._pending = None
        self.calls += 1
        try:
            if len(pending.requests) == 1:
                results: Sequence[tuple[status_pb2.Status, _Ans]] = [
                    (status_pb2.Status(), await self._one(pending.requests[0]))
                ]
            else:
                results = await self._many(pending.requests)
        except BaseException as exc:
            for answer in pending.answers:
                if not answer.done():
                    answer.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for answer, (status, result) in zip(pending.answers, results, strict=True):
            if answer.done():
                continue  # its caller went away
            if status.code == 0:
                answer.set_result(result)
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

    async def heartbeat(
        self, lease: worker_pb2.Lease, progress: str = "", *, usage: lane_pb2.Usage | None = None
    ) -> worker_pb2.HeartbeatResponse:
        """Heartbeat ``lease`` with the others ready: the answer carries the entry's new
        expiry and its ``stop``, exactly as the plain Heartbeat's."""
        request = self.worker.heartbeat_request(lease, progress, usage=usage)
        return await self.heartbeats.submit(request)

    async def complete(
        self,
        lease: worker_pb2.Lease,
        evidence: lane_pb2.Evidence | None = None,
        *,
        usage: lane_pb2.Usage | None = None,
    ) -> worker_pb2.CompleteResponse:
        request = self.worker.complete_request(lease, evidence, usage=usage)
        return await self.completes.submit(request)

    async def fail(
        self,
        lease: worker_pb2.Lease,
        message: str,
        *,
        error_type: str = "",
        retryable: bool = True,
        usage: lane_pb2.Usage | None = None,
    ) -> worker_pb2.FailResponse:
        request = self.worker.fail_request(
            lease, message, error_type=error_type, retryable=retryable, usage=usage
        )
        return await self.fails.submit(request)

    async def _heartbeat_many(
        self, requests: list[worker_pb2.HeartbeatRequest]
    ) -> list[tuple[status_pb2.Status, worker_pb2.HeartbeatResponse]]:
        # Each entry's answer is the one the plain Heartbeat would give: its expiry and stop.
        return [
            (r.status, _heartbeat_answer(r)) for r in await self.worker.batch_heartbeat(requests)
        ]

    async def _complete_many(
        self, requests: list[worker_pb2.CompleteRequest]
    ) -> list[tuple[status_pb2.Status, worker_pb2.CompleteResponse]]:
        return [
            (r.status, worker_pb2.CompleteResponse(attempt=r.attempt))
            for r in await self.worker.batch_complete(requests)
        ]

    async def _fail_many(
        self, requests: list[worker_pb2.FailRequest]
    ) -> list[tuple[status_pb2.Status, worker_pb2.FailResponse]]:
        return [
            (r.status, worker_pb2.FailResponse(attempt=r.attempt))
            for r in await self.worker.batch_fail(requests)
        ]


def _heartbeat_answer(result: worker_pb2.BatchHeartbeatResult) -> worker_pb2.HeartbeatResponse:
    answer = worker_pb2.HeartbeatResponse(lease_expire_time=result.lease_expire_time)
    if result.HasField("stop"):
        answer.stop.CopyFrom(result.stop)
    return answer
