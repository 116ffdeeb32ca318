"""The recovery loop: keep (or wait for) leadership, and drive each coordinator's maintenance.

The recovery process owns time but no state: leadership is a lease in the coordinator's
database (``AcquireLeadership``), and every ``RunMaintenance`` pass is transactional and
idempotent on the coordinator, so a second leader is harmless. What this module keeps is only
what ``GetRecoveryStatus`` reports.

Leadership has its own clock, apart from the passes': the leader renews its lease every third of
it, and a standby asks again at the moment the holder's lease runs out (at most a third of a
lease later), so a leader killed without releasing is replaced within one lease, whatever the
pass interval. A pass runs as soon as a replica gains leadership, then every interval; a long
pass never holds the renewals up.

Each pass is one trace (a ``recovery pass`` span whose children are the RPCs to the
coordinator, and theirs the SQL), one line saying what it did (INFO; WARNING when a step
failed, such as ticket closures with the tracker down), and the metrics of
:mod:`workcoord.recovery.metrics`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

import grpc
import grpc.aio
from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message
from opentelemetry import trace

from workcoord.api.v1 import maintenance_pb2, recovery_pb2
from workcoord.kit.clock import Clock, SystemClock
from workcoord.kit.status import error_from_rpc
from workcoord.kit.wire import MAINTENANCE_COUNTERS, bearer_metadata
from workcoord.recovery import metrics

if TYPE_CHECKING:
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub
    from workcoord.recovery.mailer import Mailer
    from workcoord.recovery.webhook_sender import WebhookSender

__all__ = [
    "DEFAULT_LEADERSHIP_SECONDS",
    "LEADERSHIP_NAME",
    "CoordinatorPassRecord",
    "Recoverer",
    "SleepFunction",
    "StepFailureRecord",
    "default_replica_id",
]

LEADERSHIP_NAME = "recovery"
DEFAULT_LEADERSHIP_SECONDS = 15
"""The leadership lease: how long a killed leader keeps the others waiting, at most."""

SleepFunction = Callable[[float], Awaitable[None]]
_R = TypeVar("_R")

_log = logging.getLogger(__name__)
_tracer = trace.get_tracer(__name__)

# While the coordinator keeps failing the same way, say so at most once a minute.
_ERROR_LOG_EVERY_SECONDS = 60.0


def default_replica_id() -> str:
    """``<hostname>-<pid>-<random>``: readable in status, unique across restarts."""
    host = socket.gethostname() or "recovery"
    return f"{host[:100]}-{os.getpid()}-{secrets.token_hex(4)}"


@dataclass(slots=True)
class StepFailureRecord:
    """One step's failures over this replica's passes, as ``GetRecoveryStatus`` reports them."""

    step: str
    failed_passes: int
    last_error: str
    coordinator_id: str
    time: datetime


@dataclass(frozen=True, slots=True)
class CoordinatorPassRecord:
    """The latest pass over one work coordinator, as ``GetRecoveryStatus`` reports it."""

    coordinator_id: str
    pass_time: datetime
    report: recovery_pb2.MaintenanceReport | None
    error: str


class Recoverer:
    """Runs recovery passes on a clock, as the leader among replicas.

    ``run()`` keeps leadership (every third of ``leadership_seconds``) and, while leading,
    passes every ``interval_seconds`` until cancelled; ``tick()`` is one step by hand (renew or
    acquire leadership, then pass if leading). Neither raises for a coordinator failure: errors
    are logged (rate-limited) and recorded for the status.
    """

    def __init__(
        self,
        maintenance: MaintenanceServiceAsyncStub,
        *,
        service_key: str,
        interval_seconds: float = 15.0,
        clock: Clock | None = None,
        sleep: SleepFunction | None = None,
        replica_id: str | None = None,
        rpc_timeout_seconds: float = 60.0,
        leadership_seconds: int = DEFAULT_LEADERSHIP_SECONDS,
        mailer: Mailer | None = None,
        webhook_sender: WebhookSender | None = None,
    ) -> None:
        if interval_seconds <= 0:
            raise ValueError("interval_seconds must be positive")
        if not 3 <= leadership_seconds <= 300:  # 300: what AcquireLeadership accepts
            raise ValueError("leadership_seconds must be 3 to 300")
        self._maintenance = maintenance
        self._metadata = bearer_metadata(service_key)
        self._interval_seconds = interval_seconds
        self._clock: Clock = clock or SystemClock()
        self._sleep: SleepFunction = sleep or asyncio.sleep
        self._replica_id = (replica_id or default_replica_id())[:128]
        self._rpc_timeout_seconds = rpc_timeout_seconds
        self._lease_seconds = leadership_seconds
        # A third of the lease: one renewal may fail (or be slow) without losing leadership.
        self._renew_seconds = leadership_seconds / 3

        self._leader = False
        # Set while this replica leads: the pass loop waits on it, so a new leader passes at once.
        self._leading = asyncio.Event()
        self._leader_id = ""
        self._leadership_expire_time: timestamp_pb2.Timestamp | None = None
        self._passes_total = 0
        self._last_pass_time: datetime | None = None
        self._coordinators: dict[str, CoordinatorPassRecord] = {}
        self._step_failures: dict[str, StepFailureRecord] = {}
        self._last_error = ""
        self._last_logged_error = ""
        self._last_error_log_at: float | None = None
        # One pass at a time per replica: a slow pass delays the next tick instead of overlapping.
        self._pass_lock = asyncio.Lock()
        # Mail to the digest owners (None: no SMTP configured), on its own clock while leading.
        self._mailer = mailer
        # Webhook deliveries (long-polling the coordinator), back to back while leading.
        self._webhook_sender = webhook_sender

    @property
    def replica_id(self) -> str:
        """This replica's id (the leadership holder id)."""
        return self._replica_id

    @property
    def interval_seconds(self) -> float:
        """Seconds between ticks."""
        return self._interval_seconds

    @property
    def leader(self) -> bool:
        """Whether this replica held leadership at its latest attempt."""
        return self._leader

    @property
    def passes_total(self) -> int:
        """Full passes completed since start."""
        return self._passes_total

    @property
    def last_error(self) -> str:
        """The latest error talking to the coordinator; cleared by a pass without errors."""
        return self._last_error

    @property
    def leadership_seconds(self) -> int:
        """The leadership lease this replica asks for."""
        return self._lease_seconds

    async def run(self) -> None:
        """Keep leadership and pass while leading, until cancelled; never returns otherwise."""
        async with asyncio.TaskGroup() as loops:
            loops.create_task(self._keep_leadership(), name="workcoord-recovery-leadership")
            loops.create_task(self._pass_while_leading(), name="workcoord-recovery-passes")
            if self._mailer is not None:
                mailer = self._mailer
                loops.create_task(
                    self._repeat(
                        "mail round",
                        mailer.run_once,
                        lambda: mailer.interval_seconds,
                        when=self._leading,
                    ),
                    name="workcoord-recovery-mail",
                )
            if self._webhook_sender is not None:
                loops.create_task(self._send_webhooks(), name="workcoord-recovery-webhooks")

    async def _send_webhooks(self) -> None:
        """Call ``DeliverWebhooks`` back to back while leading (each call waits on the
        coordinator for work); a second's pause after an error. Not on ``sleep``: a parked
        loop (tests) still delivers."""
        sender = self._webhook_sender
        assert sender is not None
        while True:
            await self._leading.wait()
            try:
                await sender.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.exception("webhook deliveries failed")
                self._record_error(f"internal error: {exc}")
                sender.pause_seconds = 1.0
            if sender.pause_seconds:
                await asyncio.sleep(sender.pause_seconds)

    async def _keep_leadership(self) -> None:
        """Renew (as the leader) or ask again when the holder's lease runs out (a standby)."""
        await self._repeat(
            "recovery leadership attempt", self.acquire_leadership, self._next_attempt_seconds
        )

    async def _repeat(
        self,
        what: str,
        step: Callable[[], Awaitable[object]],
        period_seconds: Callable[[], float],
        when: asyncio.Event | None = None,
    ) -> None:
        """Run ``step`` every ``period_seconds()`` (from the start of one run to the next),
        while ``when`` is set if given. The loop outlives any bug in one run: it is logged and
        kept as the last error."""
        while True:
            if when is not None:
                await when.wait()
            started = self._clock.monotonic()
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.exception("%s failed", what)
                self._record_error(f"internal error: {exc}")
            elapsed = self._clock.monotonic() - started
            await self._sleep(max(0.0, period_seconds() - elapsed))

    def _next_attempt_seconds(self) -> float:
        """A third of the lease; for a standby, no later than when the holder's lease lapses.

        A little past that moment (clocks and the RPC differ by milliseconds); never more often
        than a tenth of the renewal period, should this replica's clock run ahead.
        """
        if self._leader or self._leadership_expire_time is None:
            return self._renew_seconds
        expire = self._leadership_expire_time.ToDatetime(tzinfo=UTC)
        until_expiry = (expire - self._clock.now()).total_seconds() + 0.05
        return min(self._renew_seconds, max(self._renew_seconds / 10, until_expiry))

    async def _pass_while_leading(self) -> None:
        """Pass every ``interval_seconds`` while leading; a replica that gains leadership
        passes at once (it was waiting for it)."""
        await self._repeat(
            "recovery pass", self.run_pass, lambda: self._interval_seconds, when=self._leading
        )

    async def tick(self) -> bool:
        """Acquire or renew leadership, then run a pass if this replica leads.

        Returns whether a pass ran.
        """
        if not await self.acquire_leadership():
            return False
        await self.run_pass()
        return True

    async def acquire_leadership(self) -> bool:
        """Ask the coordinator for the ``recovery`` leadership lease; returns whether held."""
        request = maintenance_pb2.AcquireLeadershipRequest(
            name=LEADERSHIP_NAME, holder_id=self._replica_id, lease_seconds=self._lease_seconds
        )
        try:
            # No longer than a renewal period: a hung call must not outlast the lease unseen.
            response = await self._call(
                self._maintenance.AcquireLeadership,
                request,
                rpc_timeout_seconds=min(self._rpc_timeout_seconds, self._renew_seconds),
            )
        except grpc.aio.AioRpcError as exc:
            # Unknown leadership: do not pass. A lease we may still hold simply lapses.
            self._set_leader(False)
            self._leadership_expire_time = None
            self._record_error(f"acquire leadership: {_describe(exc)}")
            return False
        self._apply_leadership(response.leadership)
        if not self._leader:
            _log.debug("not the recovery leader; %s leads", self._leader_id or "nobody")
        return self._leader

    async def release_leadership(self) -> None:
        """Give leadership up so another replica takes over at once (clean shutdown)."""
        if not self._leader:
            return
        request = maintenance_pb2.ReleaseLeadershipRequest(
            name=LEADERSHIP_NAME, holder_id=self._replica_id
        )
        try:
            response = await self._call(self._maintenance.ReleaseLeadership, request)
        except grpc.aio.AioRpcError as exc:
            # The lease lapses on its own; the next leader only waits for it.
            _log.warning("could not release recovery leadership: %s", _describe(exc))
            self._set_leader(False)
            return
        # Not a leader any more before applying the answer: giving leadership up is not
        # "losing" it (that warning is for a lease taken over by another replica).
        self._set_leader(False)
        self._apply_leadership(response.leadership)
        self._set_leader(False)
        _log.info("released recovery leadership")

    async def run_pass(self) -> None:
        """One pass: every enabled work coordinator, sequentially, each failure isolated."""
        async with self._pass_lock:
            started = time.perf_counter()
            with _tracer.start_as_current_span("recovery pass") as span:
                ok = await self._pass_all(span)
            elapsed = time.perf_counter() - started
            metrics.PASS_DURATION.observe(elapsed)
            metrics.PASSES.labels("ok" if ok else "failed").inc()
            if ok:
                metrics.LAST_SUCCESSFUL_PASS.set(time.time())

    async def _pass_all(self, span: trace.Span) -> bool:
        started = time.perf_counter()
        try:
            targets = await self._call(
                self._maintenance.ListMaintenanceTargets,
                maintenance_pb2.ListMaintenanceTargetsRequest(),
            )
        except grpc.aio.AioRpcError as exc:
            self._record_error(f"list maintenance targets: {_describe(exc)}")
            span.set_status(trace.StatusCode.ERROR, "listing maintenance targets failed")
            return False
        failures = 0
        work = dict.fromkeys(MAINTENANCE_COUNTERS, 0)
        failed_steps: dict[str, int] = {}
        if not targets.platform_enabled:
            _log.info("recovery pass skipped: coordination is disabled platform-wide")
        else:
            for target in targets.targets:
                report = await self._pass_one(target.coordinator_id)
                if report is None:
                    failures += 1
                    continue
                for kind in MAINTENANCE_COUNTERS:
                    work[kind] += int(getattr(report, kind))
                for step in report.step_failures:
                    failed_steps[step.step] = failed_steps.get(step.step, 0) + 1
            done = ", ".join(f"{kind} {count}" for kind, count in work.items() if count)
            steps = ", ".join(f"{step} on {n}" for step, n in sorted(failed_steps.items()))
            # A failed step (a tracker down) is a warning: the rest of the pass ran.
            _log.log(
                logging.WARNING if failed_steps else logging.INFO,
                "recovery pass over %d work coordinators in %.3fs: %s%s%s",
                len(targets.targets),
                time.perf_counter() - started,
                done or "nothing to do",
                f"; {failures} failed" if failures else "",
                f"; steps failed: {steps}" if steps else "",
                extra={"coordinators": len(targets.targets), "failures": failures, **work},
            )
        for kind, count in work.items():
            if count:
                metrics.PASS_WORK.labels(kind).inc(count)
        span.set_attribute("workcoord.coordinators", len(targets.targets))
        span.set_attribute("workcoord.failures", failures)
        self._passes_total += 1
        self._last_pass_time = self._clock.now()
        if failures == 0:
            self._clear_error()
            return True
        span.set_status(trace.StatusCode.ERROR, f"{failures} work coordinators failed")
        return False

    def record_report(self, report: recovery_pb2.MaintenanceReport) -> None:
        """Record a pass run on demand (``Maintain``) so the status shows it."""
        self._coordinators[report.coordinator_id] = CoordinatorPassRecord(
            coordinator_id=report.coordinator_id,
            pass_time=self._clock.now(),
            report=report,
            error="",
        )
        self._count_step_failures(report)

    def _count_step_failures(self, report: recovery_pb2.MaintenanceReport) -> None:
        """Count each failed step of one coordinator's pass (status and metric)."""
        for failure in report.step_failures:
            metrics.STEP_FAILURES.labels(metrics.step_label(failure.step)).inc()
            record = self._step_failures.get(failure.step)
            if record is None:
                record = self._step_failures[failure.step] = StepFailureRecord(
                    failure.step, 0, "", "", self._clock.now()
                )
            record.failed_passes += 1
            record.last_error = failure.error
            record.coordinator_id = report.coordinator_id
            record.time = self._clock.now()

    def coordinator_passes(self) -> dict[str, CoordinatorPassRecord]:
        """The latest pass per work coordinator (a copy)."""
        return dict(self._coordinators)

    def status(self) -> recovery_pb2.RecoveryStatus:
        """This replica's state as the ``RecoveryStatus`` message."""
        status = recovery_pb2.RecoveryStatus(
            replica_id=self._replica_id,
            leader=self._leader,
            leader_id=self._leader_id,
            interval=_duration(self._interval_seconds),
            passes_total=self._passes_total,
            last_error=self._last_error,
        )
        if self._leadership_expire_time is not None:
            status.leadership_expire_time.CopyFrom(self._leadership_expire_time)
        if self._last_pass_time is not None:
            status.last_pass_time.FromDatetime(self._last_pass_time)
        for record in sorted(self._coordinators.values(), key=lambda r: r.coordinator_id):
            entry = status.coordinators.add(coordinator_id=record.coordinator_id)
            entry.pass_time.FromDatetime(record.pass_time)
            if record.report is not None:
                entry.report.CopyFrom(record.report)
            entry.error = record.error
        for failure in sorted(self._step_failures.values(), key=lambda f: f.step):
            count = status.step_failures.add(
                step=failure.step,
                failed_passes=failure.failed_passes,
                last_error=failure.last_error,
                coordinator_id=failure.coordinator_id,
            )
            count.last_failure_time.FromDatetime(failure.time)
        return status

    async def _pass_one(self, coordinator_id: str) -> recovery_pb2.MaintenanceReport | None:
        """One coordinator's pass; its report, or None when it failed (recorded either way)."""
        request = maintenance_pb2.RunMaintenanceRequest(coordinator_id=coordinator_id)
        report: recovery_pb2.MaintenanceReport | None = None
        error = ""
        try:
            response = await self._call(self._maintenance.RunMaintenance, request)
            report = response.report
            self._count_step_failures(report)
        except grpc.aio.AioRpcError as exc:
            error = _describe(exc)
            self._record_error(f"maintenance of {coordinator_id}: {error}")
        self._coordinators[coordinator_id] = CoordinatorPassRecord(
            coordinator_id=coordinator_id, pass_time=self._clock.now(), report=report, error=error
        )
        return report

    async def _call(
        self,
        rpc: Callable[..., Awaitable[_R]],
        request: Message,
        rpc_timeout_seconds: float | None = None,
    ) -> _R:
        """``rpc(request)`` on the coordinator as the service principal."""
        return await rpc(
            request,
            metadata=self._metadata,
            timeout=rpc_timeout_seconds or self._rpc_timeout_seconds,
        )

    def _set_leader(self, leader: bool) -> None:
        self._leader = leader
        metrics.LEADER.set(1 if leader else 0)
        if leader:
            self._leading.set()
        else:
            self._leading.clear()

    def _apply_leadership(self, leadership: maintenance_pb2.Leadership) -> None:
        was_leader = self._leader
        self._set_leader(leadership.held)
        self._leader_id = leadership.holder_id
        if leadership.HasField("expire_time"):
            expire = timestamp_pb2.Timestamp()
            expire.CopyFrom(leadership.expire_time)
            self._leadership_expire_time = expire
        else:
            self._leadership_expire_time = None
        if self._leader and not was_leader:
            _log.info(
                "recovery leadership acquired by %s (term %d)", self._replica_id, leadership.term
            )
        elif was_leader and not self._leader:
            _log.warning("recovery leadership lost to %s", leadership.holder_id or "nobody")

    def _record_error(self, error: str) -> None:
        self._last_error = error
        now = self._clock.monotonic()
        repeated = error == self._last_logged_error
        if (
            repeated
            and self._last_error_log_at is not None
            and now - self._last_error_log_at < _ERROR_LOG_EVERY_SECONDS
        ):
            return
        self._last_logged_error = error
        self._last_error_log_at = now
        _log.warning("recovery: %s", error)

    def _clear_error(self) -> None:
        if self._last_error:
            _log.info("recovery pass succeeded again")
        self._last_error = ""
        self._last_logged_error = ""
        self._last_error_log_at = None


def _describe(exc: grpc.aio.AioRpcError) -> str:
    err = error_from_rpc(exc)
    return f"{err.reason}: {err.message}"


def _duration(seconds: float) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromNanoseconds(round(seconds * 1e9))
    return duration
