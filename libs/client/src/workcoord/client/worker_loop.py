"""``Worker.run``: a worker's whole loop around a handler — lease, start, heartbeat, finish.

The loop owns the lease (the shape of temporal's activity worker): it long-polls for one item
at a time, hands it to the handler as an :class:`Assignment`, heartbeats every third of the
lease while the handler works, and writes the handler's :data:`Outcome`. When the lease is lost
(``LEASE_LOST`` of any cause, a refused heartbeat, or no heartbeat answered before the lease
would have run out by this machine's own clock) it cancels the handler, writes nothing more and
raises the loss: expiry is never permission to keep working. Setting ``stop`` drains: no new
lease, the handler sees ``assignment.stopping`` and has ``drain_seconds`` to finish before it is
cancelled and its lease released (a release burns no attempt). A heartbeat answered with
``stop`` (budget spent, deadline passed, policy narrowed, cancelled) sets
``assignment.told_stop`` and ``assignment.told_to_stop``: the handler winds down and chooses
its outcome (``worker run`` stops its command). A loop holding several leases heartbeats them
in one batched call, and each entry's ``stop`` reaches its own assignment the same way.

Every call retries transient answers with backoff and jitter (:mod:`.retries`); ``Lease``
always carries a request id, the same on every retry, so a reply lost on the way is answered
again instead of stranding an item.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client.loop_options import (
    LoopEvent,
    LoopOptions,
    LoopReport,
    WorkerCalls,
)
from workcoord.client.outcomes import (
    Checkpointed,
    Completed,
    Failed,
    HandlerResult,
    Outcome,
    Released,
    as_outcome,
    outcome_detail,
    outcome_kind,
)
from workcoord.client.retries import (
    RetryClock,
    call_with_retries,
    is_transient,
    new_request_id,
)
from workcoord.kit.errors import Code, LeaseLost, WorkcoordError, WorkerFenced

__all__ = [
    "Assignment",
    "Checkpointed",
    "Completed",
    "Failed",
    "Handler",
    "HandlerResult",
    "LeaseFacts",
    "LoopEvent",
    "LoopOptions",
    "LoopReport",
    "Outcome",
    "Released",
    "WorkerCalls",
    "WorkerLoop",
]

# The longest error message the API keeps (ErrorInfo.message).
_MAX_MESSAGE = 4096
# A recovery Lease after a cancelled long-poll must not hold up shutdown for long.
_RECOVERY_TIMEOUT_SECONDS = 5.0


class _LeaseTimer:
    """This machine's conservative idea of when the lease runs out.

    The server extends a lease from the moment a heartbeat arrives, which is after it was sent,
    so ``sent + lease_seconds`` never overestimates it (clock skew does not enter: only this
    machine's monotonic clock is used).
    """

    def __init__(self, lease_seconds: int, clock: RetryClock, granted_at: float) -> None:
        self._seconds = float(lease_seconds)
        self._clock = clock
        # The grant happened before its reply arrived: keep a margin for the way back.
        self.deadline = granted_at + self._seconds - min(1.0, self._seconds / 10)

    def extended(self, sent_at: float) -> None:
        self.deadline = max(self.deadline, sent_at + self._seconds)

    def remaining(self) -> float:
        return self.deadline - self._clock.monotonic()


class LeaseFacts:
    """What a handler reads of its lease: the lease id, the attempt number and the item."""

    def _held_lease(self) -> worker_pb2.Lease:
        raise NotImplementedError

    @property
    def lease_id(self) -> str:
        """The public lease id."""
        return self._held_lease().lease_id

    @property
    def attempt(self) -> int:
        """The attempt number (1-based)."""
        return self._held_lease().attempt

    @property
    def item(self) -> worker_pb2.LeasedItem:
        """The work: kind, inputs, placement, the checkpoint to continue from."""
        return self._held_lease().item


class Assignment(LeaseFacts):
    """One leased item, as a handler sees it."""

    def __init__(
        self,
        worker: WorkerCalls,
        lease: worker_pb2.Lease,
        stopping: asyncio.Event,
        timer: _LeaseTimer,
        loop: WorkerLoop,
    ) -> None:
        self._worker = worker
        self._lease = lease
        self._timer = timer
        self._loop = loop
        self.stopping = stopping
        """Set when the worker drains: finish (or checkpoint) soon, or be cancelled."""
        self.progress = ""
        """A short note (≤ 1 KiB) the next heartbeat carries."""
        self.usage: lane_pb2.Usage | None = None
        """The attempt's spend so far (running totals, which may only grow): the next
        heartbeat and the final write carry it."""
        self.usage_reader: Callable[[], lane_pb2.Usage | None] | None = None
        """Asked before each heartbeat and the final write for newer totals (None: none)."""
        self.lost: WorkcoordError | None = None
        """Why the lease was lost, once it was (the handler is then cancelled)."""
        self.told_stop: worker_pb2.Stop | None = None
        """The ``stop`` a heartbeat answered (budget spent, deadline passed, policy narrowed,
        cancelled), once one did: wind down; ``told_to_stop`` is set then."""
        self.told_to_stop = asyncio.Event()
        self.started = False

    @property
    def lease(self) -> worker_pb2.Lease:
        """The lease itself, with its secret token (for calls this class does not wrap)."""
        return self._lease

    def _held_lease(self) -> worker_pb2.Lease:
        return self._lease

    async def start(self, identity: lane_pb2.RunIdentity) -> None:
        """Record the run identity (LEASED → RUNNING); a retried Start is idempotent."""
        await self._loop.call_on_lease(self, lambda: self._worker.start(self._lease, identity))
        self.started = True
        self._loop.emit(LoopEvent("started", self.lease_id, self.item, self.attempt))

    def current_usage(self) -> lane_pb2.Usage | None:
        """The totals to report now: what ``usage_reader`` reads, else the last ones."""
        if self.usage_reader is not None:
            read = self.usage_reader()
            if read is not None:
                self.usage = read
        return self.usage

    async def report_usage(self) -> None:
        """Send the current totals on a heartbeat now (before an ending write that carries
        none, such as a release)."""
        await self._loop.call_on_lease(
            self,
            lambda: self._worker.heartbeat(
                self._lease, self.progress[:1024], usage=self.current_usage()
            ),
        )

    def _told(self, answer: object) -> None:
        """Keep the first ``stop`` a heartbeat answered and set ``told_to_stop``."""
        if self.told_stop is not None or not isinstance(answer, worker_pb2.HeartbeatResponse):
            return
        if not answer.HasField("stop") or not answer.stop.reason:
            return
        self.told_stop = answer.stop
        reason = worker_pb2.Stop.Reason.Name(answer.stop.reason)
        detail = f"{reason}: {answer.stop.message}" if answer.stop.message else reason
        self._loop.emit(LoopEvent("stop_told", self.lease_id, self.item, self.attempt, detail))
        self.told_to_stop.set()

    def _lose(self, err: WorkcoordError) -> None:
        if self.lost is None:
            self.lost = err


Handler = Callable[[Assignment], Awaitable[HandlerResult]]


class WorkerLoop:
    """The loop behind :meth:`Worker.run`; one instance per run."""

    def __init__(
        self,
        worker: WorkerCalls,
        handler: Handler,
        options: LoopOptions | None = None,
        *,
        stop: asyncio.Event | None = None,
        on_event: Callable[[LoopEvent], None] | None = None,
    ) -> None:
        self.worker = worker
        self.handler = handler
        self.options = options or LoopOptions()
        self.stop = stop or asyncio.Event()
        self._on_event = on_event
        self.report = LoopReport()
        self._beat_origin = self.options.clock.monotonic()

    def emit(self, event: LoopEvent) -> None:
        """Tell the progress display (if any)."""
        if self._on_event is not None:
            self._on_event(event)

    async def run(self) -> LoopReport:
        """Handle items one at a time until ``stop`` is set (or one item, with ``once``); with
        ``concurrency`` above 1, up to that many at once.

        Raises :class:`LeaseLost` (or the refusing error) when a lease is lost, after the
        handler was cancelled (the other leases held are finished first); and any
        non-transient error ``Lease`` answers.
        """
        if self.options.concurrency > 1:
            return await self._run_concurrently()
        waiting_said = False
        while not self.stop.is_set():
            if not waiting_said:
                self.emit(LoopEvent("waiting", detail=self.worker.worker_class))
                waiting_said = True
            granted = await self._next_leases(1)
            if not granted:
                continue  # nothing ready in this poll, or stopping
            waiting_said = False
            await self._work(*granted[0])
            if self.options.once:
                break
        return self.report

    async def _run_concurrently(self) -> LoopReport:
        slots = self.options.concurrency
        running: set[asyncio.Task[None]] = set()
        losses: list[BaseException] = []
        freed = asyncio.Event()

        def finished(task: asyncio.Task[None]) -> None:
            running.discard(task)
            if not task.cancelled() and task.exception() is not None:
                losses.append(task.exception())  # type: ignore[arg-type]
            freed.set()

        self.emit(LoopEvent("waiting", detail=self.worker.worker_class))
        try:
            while not self.stop.is_set() and not losses:
                if len(running) >= slots:
                    freed.clear()
                    await freed.wait()
                    continue
                for lease, received_at in await self._next_leases(slots - len(running)):
                    task = asyncio.create_task(self._work(lease, received_at))
                    running.add(task)
                    task.add_done_callback(finished)
                if self.options.once and running:
                    break
        finally:
            if running:
                await asyncio.wait(set(running))
        if losses:
            raise losses[0]
        return self.report

    # ------------------------------------------------------------------ leasing

    async def _next_leases(self, wanted: int) -> list[tuple[worker_pb2.Lease, float]]:
        request_id = new_request_id()
        clock = self.options.clock
        poll = asyncio.ensure_future(self._lease(request_id, wanted))
        stopping = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({poll, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not poll.done():
            poll.cancel()
            with contextlib.suppress(asyncio.CancelledError, WorkcoordError):
                await poll
            await self._recover_cancelled_poll(request_id, wanted)
            return []
        leases = poll.result()
        received_at = clock.monotonic()
        for extra in leases[wanted:]:  # never hold more than asked for
            await self._release_quietly(extra, f"asked for {wanted} item(s)")
        if self.stop.is_set():
            for unwanted in leases[:wanted]:
                await self._release_quietly(unwanted, "worker stopping")
            return []
        for lease in leases[:wanted]:
            self.emit(LoopEvent("leased", lease.lease_id, lease.item, lease.attempt))
        return [(lease, received_at) for lease in leases[:wanted]]

    async def _lease(self, request_id: str, wanted: int) -> list[worker_pb2.Lease]:
        options = self.options

        def on_retry(err: WorkcoordError, delay: float) -> None:
            kind = "fenced" if _is_fenced(err) else "retrying"
            self.emit(LoopEvent(kind, detail=f"Lease: {err.reason}: {err.message} ({delay:.1f}s)"))

        identity = options.run_identity
        if options.concurrency == 1 or not isinstance(identity, lane_pb2.RunIdentity):
            identity = None  # started by the handler's Start
        return await call_with_retries(
            lambda: self.worker.lease(
                max_items=wanted,
                lease_seconds=options.lease_seconds,
                wait_seconds=options.wait_seconds,
                request_id=request_id,
                run_identity=identity,
            ),
            backoff=options.lease_backoff,
            clock=options.clock,
            on_retry=on_retry,
            retry_also=_is_fenced,
        )

    async def _recover_cancelled_poll(self, request_id: str, wanted: int) -> None:
        """A long-poll cancelled by shutdown may have been granted on the server with the reply
        still on its way: ask again with the same request id (the server answers with those
        leases) and give back whatever comes."""
        try:
            leases = await self.worker.lease(
                max_items=wanted,
                lease_seconds=self.options.lease_seconds,
                wait_seconds=0,
                request_id=request_id,
                rpc_timeout_seconds=_RECOVERY_TIMEOUT_SECONDS,
            )
        except WorkcoordError:
            return  # unreachable or refused: nothing more can be done from here
        for lease in leases:
            await self._release_quietly(lease, "worker stopping")

    async def _release_quietly(self, lease: worker_pb2.Lease, reason: str) -> None:
        with contextlib.suppress(WorkcoordError):
            await self.worker.release(lease, reason)

    # ------------------------------------------------------------------ one item

    async def _work(self, lease: worker_pb2.Lease, received_at: float) -> None:
        options = self.options
        timer = _LeaseTimer(options.lease_seconds, options.clock, received_at)
        assignment = Assignment(self.worker, lease, self.stop, timer, self)
        handler_task = asyncio.create_task(self._run_handler(assignment))
        heartbeats = asyncio.create_task(self._heartbeat(assignment, handler_task, timer))
        drain = asyncio.create_task(self._drain(handler_task))
        try:
            await asyncio.wait({handler_task})
            drain.cancel()
            if assignment.lost is not None:
                self._lost(assignment)
            if handler_task.cancelled():
                outcome: Outcome = Released("worker stopping")
            else:
                outcome = handler_task.result()
            await self._finish(assignment, outcome)
        finally:
            for task in (drain, heartbeats, handler_task):
                task.cancel()
            for task in (drain, heartbeats, handler_task):
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _lost(self, assignment: Assignment) -> None:
        """Report the loss and raise it, as :class:`LeaseLost` whatever refused the lease."""
        lost = assignment.lost
        assert lost is not None
        cause = lost.metadata.get("cause") or lost.reason
        raised = lost
        if not isinstance(lost, LeaseLost):
            raised = LeaseLost.rebuild(
                f"lease lost: {lost.reason}: {lost.message}",
                metadata={**lost.metadata, "cause": cause},
            )
        self.emit(
            LoopEvent(
                "lease_lost",
                assignment.lease_id,
                assignment.item,
                assignment.attempt,
                detail=f"{cause}: {lost.message}",
            )
        )
        self.report.outcomes["lease_lost"] = self.report.outcomes.get("lease_lost", 0) + 1
        if raised is lost:
            raise lost
        raise raised from lost

    async def _run_handler(self, assignment: Assignment) -> Outcome:
        identity = self.options.run_identity
        try:
            if assignment.lease.status == lane_pb2.Attempt.RUNNING:
                assignment.started = True  # started by the Lease call itself
                self.emit(LoopEvent("started", assignment.lease_id, assignment.item))
            elif isinstance(identity, lane_pb2.RunIdentity):
                await assignment.start(identity)
            elif identity is not None:
                await assignment.start(identity(assignment.item))
            result = await self.handler(assignment)
        except LeaseLost as err:
            assignment._lose(err)
            return Released()  # never written: the loop sees the loss first
        except Exception as exc:  # the handler's bug or refusal becomes the attempt's failure
            message = f"{type(exc).__name__}: {exc}"[:_MAX_MESSAGE]
            return Failed(message, error_type=type(exc).__name__[:128], retryable=True)
        return as_outcome(result)

    async def _heartbeat(
        self, assignment: Assignment, handler_task: asyncio.Task[Outcome], timer: _LeaseTimer
    ) -> None:
        clock = self.options.clock
        every = self.options.heartbeat_seconds
        while True:
            if self.options.concurrency > 1:
                # On the loop's shared beat (never later than a full interval): every lease
                # held is heartbeated by the same batched call.
                await clock.sleep(every - (clock.monotonic() - self._beat_origin) % every)
            else:
                await clock.sleep(every)
            sent_at = clock.monotonic()

            async def beat() -> None:
                answer = await self.worker.heartbeat(
                    assignment.lease,
                    assignment.progress[:1024],
                    usage=assignment.current_usage(),
                )
                assignment._told(answer)

            try:
                await self.call_on_lease(assignment, beat)
            except WorkcoordError as err:
                assignment._lose(err)
                handler_task.cancel()
                return
            timer.extended(sent_at)

    async def call_on_lease(
        self,
        assignment: Assignment,
        call: Callable[[], Awaitable[object]],
        on_retry: Callable[[], None] | None = None,
    ) -> None:
        """``call()`` with retries while the lease can still be alive by this machine's clock.

        Past that point the lease is lost (``expired``) whatever the server would say; any
        non-transient refusal is raised as is. ``on_retry()`` is told before each retry.
        """
        timer = assignment._timer

        def retrying(err: WorkcoordError, delay: float) -> None:
            if on_retry is not None:
                on_retry()
            detail = f"{err.reason}: {err.message} ({delay:.1f}s)"
            event = LoopEvent(
                "retrying", assignment.lease_id, assignment.item, assignment.attempt, detail
            )
            self.emit(event)

        try:
            async with asyncio.timeout(max(0.0, timer.remaining())):
                await call_with_retries(
                    call,
                    backoff=self.options.call_backoff,
                    until=timer.deadline,
                    clock=self.options.clock,
                    on_retry=retrying,
                )
        except TimeoutError:
            raise LeaseLost(
                "expired", "lease lost: no call answered before the lease ran out"
            ) from None
        except WorkcoordError as err:
            if is_transient(err):
                raise LeaseLost(
                    "expired",
                    f"lease lost: the coordinator did not answer before the lease ran out "
                    f"({err.reason}: {err.message})",
                ) from err
            raise

    async def _drain(self, handler_task: asyncio.Task[Outcome]) -> None:
        await self.stop.wait()
        if handler_task.done():
            return
        self.emit(LoopEvent("draining", detail=f"{self.options.drain_seconds:g}s"))
        _done, pending = await asyncio.wait({handler_task}, timeout=self.options.drain_seconds)
        if pending:
            handler_task.cancel()

    async def _finish(self, assignment: Assignment, outcome: Outcome) -> None:
        retried = False

        def on_retry() -> None:
            nonlocal retried
            retried = True

        async def write(chosen: Outcome) -> None:
            await self.call_on_lease(
                assignment,
                lambda: self._write(assignment.lease, chosen, assignment.current_usage()),
                on_retry,
            )

        try:
            await write(outcome)
        except LeaseLost as err:
            if retried and err.cause == "terminal":
                # The first try most likely applied and only its reply was lost.
                self._record(assignment, "uncertain", f"{outcome_kind(outcome)}: {err.message}")
                return
            assignment._lose(err)
            self._lost(assignment)
        except WorkcoordError as err:
            if isinstance(outcome, Failed | Released):
                assignment._lose(err)
                self._lost(assignment)
            # The server refused the outcome itself (e.g. a REVIEW without a verdict, Complete
            # before Start): fail the attempt for a human rather than leave it to expire.
            refused = Failed(
                f"{outcome_kind(outcome)} refused: {err.message}"[:_MAX_MESSAGE],
                error_type=err.reason,
                retryable=False,
            )
            try:
                await write(refused)
            except WorkcoordError as again:
                assignment._lose(again)
                self._lost(assignment)
            self._record(assignment, "refused", f"{outcome_kind(outcome)}: {err.message}")
            return
        self._record(assignment, outcome_kind(outcome), outcome_detail(outcome))

    def _record(self, assignment: Assignment, kind: str, detail: str) -> None:
        self.report.outcomes[kind] = self.report.outcomes.get(kind, 0) + 1
        self.emit(LoopEvent(kind, assignment.lease_id, assignment.item, assignment.attempt, detail))

    async def _write(
        self, lease: worker_pb2.Lease, outcome: Outcome, usage: lane_pb2.Usage | None
    ) -> None:
        if isinstance(outcome, Completed):
            await self.worker.complete(lease, outcome.evidence, usage=usage)
        elif isinstance(outcome, Failed):
            await self.worker.fail(
                lease,
                outcome.message,
                error_type=outcome.error_type,
                retryable=outcome.retryable,
                usage=usage,
            )
        elif isinstance(outcome, Checkpointed):
            await self.worker.checkpoint(lease, outcome.checkpoint, usage=usage)
        else:
            await self.worker.release(lease, outcome.reason)


def _is_fenced(err: WorkcoordError) -> bool:
    return isinstance(err, WorkerFenced) or (
        err.reason == WorkerFenced.reason and err.code == Code.FAILED_PRECONDITION
    )
