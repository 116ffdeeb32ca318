"""Heartbeats coalesced: the REST heartbeats in flight for one work coordinator under one
credential go upstream together, as one ``BatchHeartbeat``.

A fleet of agents that speak REST sends each heartbeat on its own, hundreds a second. As single
calls, each costs the coordinator a call to accept and a transaction; together they cost one
call and one transaction for the lot (one statement per table), and the coordinator's gRPC
server, which takes the calls of one method one at a time, takes far fewer.

How: heartbeats are queued per (upstream channel, credential, work coordinator). While fewer than
:data:`MAX_IN_FLIGHT` batches of a queue are upstream, a sender takes what the queue holds (at
most :data:`MAX_ENTRIES`, lease ids distinct) on the next turn of the event loop. So a heartbeat
on an idle queue goes at once, as a batch of one, and the heartbeats that arrive while batches
are upstream go together in the next one: the batches grow with the load, and nothing waits for
a timer.

Each heartbeat gets exactly what its single ``Heartbeat`` call would have got: the entry's
expiry and stop as a ``HeartbeatResponse``, or the entry's own error (``LEASE_LOST``,
``INVALID_ARGUMENT`` …) raised as the call's error with the same rich status; a failure of the
whole call (``UNAUTHENTICATED``, ``PERMISSION_DENIED``, ``UNAVAILABLE``, a deadline) is raised
to every heartbeat of the batch. A coordinator that does not know ``BatchHeartbeat``
(``UNIMPLEMENTED``: an older release during an upgrade) gets single calls from then on.

Only the credential travels with a batch: the members' request ids are not forwarded (each one
is still in the gateway's access log), and the batch's trace is a child of the request that
started its sender.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
import grpc.aio
from google.rpc import status_pb2

from workcoord.api.v1 import worker_pb2
from workcoord.kit.wire import AUTHORIZATION_KEY, CSRF_KEY, SESSION_KEY, STATUS_DETAILS_KEY

__all__ = ["BATCH_METHOD", "HEARTBEAT_METHOD", "MAX_ENTRIES", "MAX_IN_FLIGHT", "Heartbeats"]

HEARTBEAT_METHOD = "/workcoord.api.v1.WorkerService/Heartbeat"
BATCH_METHOD = "/workcoord.api.v1.WorkerService/BatchHeartbeat"
MAX_ENTRIES = 500
"""At most this many heartbeats in one batch (``BatchHeartbeat``'s own limit)."""
MAX_IN_FLIGHT = 2
"""Batches of one queue upstream at once: a second lets the next heartbeats go while one batch
waits for a row another write holds, and more would only split the batches."""

_CREDENTIAL_KEYS = frozenset({AUTHORIZATION_KEY, SESSION_KEY, CSRF_KEY})

Metadata = tuple[tuple[str, str], ...]
BatchCall = Callable[..., Awaitable[worker_pb2.BatchHeartbeatResponse]]
SingleCall = Callable[..., Awaitable[worker_pb2.HeartbeatResponse]]


@dataclass
class _Waiting:
    request: worker_pb2.HeartbeatRequest
    deadline: float
    """``time.monotonic()`` by which the heartbeat's call must be answered."""
    answer: asyncio.Future[worker_pb2.HeartbeatResponse] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass
class _Queue:
    waiting: list[_Waiting] = field(default_factory=list)
    in_flight: int = 0


class Heartbeats:
    """The coalescing of one upstream channel's heartbeats (:meth:`call`)."""

    def __init__(self, batch_call: BatchCall, single_call: SingleCall) -> None:
        self._batch_call = batch_call
        self._single_call = single_call
        self._queues: dict[tuple[Metadata, str], _Queue] = {}
        self._batches_known = True
        self._senders: set[asyncio.Task[None]] = set()

    async def call(
        self,
        request: worker_pb2.HeartbeatRequest,
        *,
        metadata: Metadata,
        deadline_seconds: float,
    ) -> worker_pb2.HeartbeatResponse:
        """Heartbeat ``request`` as part of the next batch of its credential and coordinator;
        answers or raises what the single call would (``grpc.RpcError``)."""
        if not self._batches_known:
            return await self._single_call(request, metadata=metadata, timeout=deadline_seconds)
        credential = tuple((k, v) for k, v in metadata if k in _CREDENTIAL_KEYS)
        key = (credential, request.coordinator_id)
        queue = self._queues.setdefault(key, _Queue())
        waiting = _Waiting(request, time.monotonic() + deadline_seconds)
        queue.waiting.append(waiting)
        self._send_if_free(key, queue)
        return await waiting.answer

    def _send_if_free(self, key: tuple[Metadata, str], queue: _Queue) -> None:
        if queue.waiting and queue.in_flight < MAX_IN_FLIGHT:
            queue.in_flight += 1
            task = asyncio.get_running_loop().create_task(self._send(key, queue))
            self._senders.add(task)
            task.add_done_callback(self._senders.discard)

    async def _send(self, key: tuple[Metadata, str], queue: _Queue) -> None:
        try:
            await asyncio.sleep(0)  # the heartbeats that arrive on this turn of the loop join
            batch = _take(queue)
            if batch:
                await self._answer(key, batch)
        finally:
            queue.in_flight -= 1
            if queue.waiting:
                self._send_if_free(key, queue)
            elif queue.in_flight == 0:
                self._queues.pop(key, None)

    async def _answer(self, key: tuple[Metadata, str], batch: list[_Waiting]) -> None:
        credential, coordinator_id = key
        timeout = max(0.0, min(w.deadline for w in batch) - time.monotonic())
        request = worker_pb2.BatchHeartbeatRequest(
            coordinator_id=coordinator_id, requests=[w.request for w in batch]
        )
        try:
            reply = await self._batch_call(request, metadata=credential, timeout=timeout)
        except grpc.RpcError as exc:
            if _code(exc) == grpc.StatusCode.UNIMPLEMENTED:
                self._batches_known = False
                await asyncio.gather(*(self._alone(w, credential) for w in batch))
                return
            _fail_all(batch, exc)
            return
        except BaseException as exc:  # the channel closed, the task cancelled: nobody hangs
            _fail_all(batch, exc)
            raise
        if len(reply.results) != len(batch):
            short = status_pb2.Status(
                code=grpc.StatusCode.INTERNAL.value[0], message="internal error"
            )
            _fail_all(batch, _entry_error(short))
            return
        for waiting, result in zip(batch, reply.results, strict=True):
            if waiting.answer.done():
                continue  # its caller went away
            if result.status.code != 0:
                waiting.answer.set_exception(_entry_error(result.status))
            else:
                waiting.answer.set_result(
                    worker_pb2.HeartbeatResponse(
                        lease_expire_time=result.lease_expire_time
                        if result.HasField("lease_expire_time")
                        else None,
                        stop=result.stop if result.HasField("stop") else None,
                    )
                )

    async def _alone(self, waiting: _Waiting, credential: Metadata) -> None:
        """``waiting`` as a single call (a coordinator without batches)."""
        timeout = max(0.0, waiting.deadline - time.monotonic())
        try:
            reply = await self._single_call(waiting.request, metadata=credential, timeout=timeout)
        except BaseException as exc:
            if not waiting.answer.done():
                waiting.answer.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        if not waiting.answer.done():
            waiting.answer.set_result(reply)

    def waiting(self) -> int:
        """How many heartbeats wait in the queues for a batch to go."""
        return sum(len(queue.waiting) for queue in self._queues.values())

    async def close(self) -> None:
        """Cancel the senders still upstream (their heartbeats fail as the channel closes)."""
        for task in list(self._senders):
            task.cancel()
        await asyncio.gather(*self._senders, return_exceptions=True)


def _take(queue: _Queue) -> list[_Waiting]:
    """Up to :data:`MAX_ENTRIES` waiting heartbeats, one per lease (a lease's second heartbeat
    waits for the next batch: a batch naming a lease twice is refused whole), skipping those
    whose callers went away."""
    batch: list[_Waiting] = []
    later: list[_Waiting] = []
    leases: set[str] = set()
    for waiting in queue.waiting:
        if waiting.answer.done():
            continue
        if len(batch) >= MAX_ENTRIES or waiting.request.lease_id in leases:
            later.append(waiting)
            continue
        leases.add(waiting.request.lease_id)
        batch.append(waiting)
    queue.waiting = later
    return batch


def _fail_all(batch: list[_Waiting], exc: BaseException) -> None:
    for waiting in batch:
        if not waiting.answer.done():
            waiting.answer.set_exception(exc)


def _code(exc: grpc.RpcError) -> grpc.StatusCode | None:
    code = getattr(exc, "code", None)
    return code() if callable(code) else None


def _entry_error(status: status_pb2.Status) -> grpc.aio.AioRpcError:
    """An entry's refusal as the error of its single call: the same code, message and rich
    status (``grpc-status-details-bin``)."""
    code = next((c for c in grpc.StatusCode if c.value[0] == status.code), grpc.StatusCode.UNKNOWN)
    trailing = grpc.aio.Metadata((STATUS_DETAILS_KEY, status.SerializeToString()))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailing, details=status.message)
