"""Recovery passes: expire dead leases, escalate, evict stale workers; leadership."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from workcoord.kit.errors import NotFound, PermissionDenied

from .. import rules
from ..auth import Access, Principal, PrincipalKind, authorize
from ..grants import GrantPermission, parents_holding
from ..inputs import AcquireLeadershipInput, ReleaseLeadershipInput, RunMaintenanceInput
from ..model import (
    WORKER_EVICT_AFTER_SECONDS,
    Attempt,
    AttemptStatus,
    Coordinator,
    DigestKind,
    Escalation,
    EventType,
    Item,
    ItemState,
    Lane,
    NewEvent,
    RetryPolicy,
)
from ..ports import ExpiredLease, Leadership, Tx
from ..results import (
    LeadershipClaim,
    MaintenanceReport,
    MaintenanceTarget,
    MaintenanceTargets,
    StepFailure,
)
from . import budgeting
from ._base import Effects, EngineCore, new_id
from .fences import FenceService
from .follow_ups import CLOSE_TICKETS, FollowUpService
from .gates import GateContext, item_gates
from .transitions import Transitions

ESCALATION_BATCH = 200


class MaintenanceService(Transitions):
    """What the recovery service drives (``engine.maintenance``)."""

    def __init__(self, core: EngineCore, fences: FenceService, follow_ups: FollowUpService) -> None:
        super().__init__(core)
        self.fences = fences
        self.follow_ups = follow_ups

    async def maintenance_targets(self, principal: Principal) -> MaintenanceTargets:
        """The work coordinators a recovery pass should visit, with their revisions."""
        if principal.kind != PrincipalKind.SERVICE and not principal.platform_admin:
            raise PermissionDenied("only the recovery service lists maintenance targets")
        async with self.core.store.read() as reader:
            enabled = await reader.platform_enabled()
            coordinators = await reader.list_coordinators("", 100_000, None)
        targets = [
            MaintenanceTarget(c.coordinator_id, c.revision)
            for c in coordinators
            if rules.coordination_on(c, enabled)
        ]
        return MaintenanceTargets(enabled, targets)

    async def run_maintenance(
        self, principal: Principal, input: RunMaintenanceInput
    ) -> MaintenanceReport:
        """One recovery pass: expire dead leases (requeue with backoff or dead-letter, never
        twice per item in one pass), fence or unfence workers, escalate, retry ticket
        closures, sync tickets and evict stale workers. A tracker failing does not fail the
        pass: the report names the step (``step_failures``) and today's digest says so."""
        coordinator_id = input.coordinator_id
        start = self.core.clock.now()
        began = self.core.clock.monotonic()
        report = MaintenanceReport(coordinator_id=coordinator_id, start_time=start)
        async with self.core.store.read() as reader:
            coordinator = await reader.get_coordinator(coordinator_id)
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            authorize(principal, coordinator, Access.MAINTAIN)
            if not rules.coordination_on(coordinator, await reader.platform_enabled()):
                report.skipped_disabled = True
                report.revision = coordinator.revision
                return report
        batch = input.batch_size or 1000
        handled: set[str] = set()
        while True:
            async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
                tx,
                coordinator,
                effects,
            ):
                # Each batch ends its attempts (DEAD) as it reads them, so the next one never
                # sees them again: no need to send the ids handled so far.
                expired = await tx.end_expired_leases(coordinator_id, tx.now, batch)
                if expired:
                    await self._expire(
                        tx, coordinator, expired, report, handled, effects, principal
                    )
                report.revision = coordinator.revision
            if len(expired) < batch:
                break
        await self.fences.sweep_fences(principal, coordinator_id)
        await self._escalate(principal, coordinator_id, report)
        run = await self.follow_ups.run_pending_actions(principal, coordinator_id)
        report.pending_actions_attempted = run.attempted
        report.pending_actions_succeeded = run.succeeded
        if run.failed:
            report.step_failures.append(StepFailure(CLOSE_TICKETS, run.failed, run.error))
        await self.follow_ups.sync_tickets(principal, coordinator_id, report)
        async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            effects,
        ):
            await self._note_step_failures(tx, coordinator_id, report, effects)
            cutoff = tx.now - timedelta(seconds=WORKER_EVICT_AFTER_SECONDS)
            evicted = await tx.evict_workers(coordinator_id, cutoff)
            report.evicted_workers = len(evicted)
            await self.core.append_events(
                tx,
                coordinator,
                [NewEvent(EventType.WORKER_EVICTED, data={"workerId": w}) for w in evicted],
                principal.name,
            )
            report.revision = coordinator.revision
        report.duration_seconds = self.core.clock.monotonic() - began
        return report

    async def _expire(
        self,
        tx: Tx,
        coordinator: Coordinator,
        expired: Sequence[ExpiredLease],
        report: MaintenanceReport,
        handled: set[str],
        effects: Effects,
        principal: Principal,
    ) -> None:
        """Settle one batch of leases the store has just ended: requeue each item whose current
        lease it was, with backoff, or dead-letter it; then write the items and the events
        with a few statements (not one per lease)."""
        policies: dict[tuple[str, RetryPolicy], RetryPolicy] = {}
        events: list[NewEvent] = []
        touched: list[Item] = []
        # An attempt a spent budget stopped ends RELEASED: no retry burned, its item waits
        # behind the budget gate (as if its worker had released it after the stop).
        book = None
        if budgeting.in_force(coordinator):
            lanes = {lease.attempt.lane_id for lease in expired}
            book = await budgeting.read_book(tx, coordinator, lanes, tx.now)
        released: list[Attempt] = []
        for lease in expired:
            attempt = lease.attempt
            report.expired_attempts += 1
            events.append(
                NewEvent(
                    EventType.ATTEMPT_EXPIRED,
                    lane_id=attempt.lane_id,
                    item_id=attempt.item_id,
                    lease_id=attempt.lease_id,
                    data={"attempt": attempt.attempt, "workerId": attempt.worker_id},
                )
            )
            effects.ready_classes.add(attempt.worker_class)
            item = lease.item
            if item is None or item.item_id in handled or item.current_lease_id != attempt.lease_id:
                continue
            handled.add(item.item_id)
            if book is not None and book.spent_for(item.lane_id) is not None:
                attempt.status, attempt.counted = AttemptStatus.RELEASED, False
                released.append(attempt)
                data = {"reason": "BUDGET_EXHAUSTED"}
                self._queue(tx, item, events, effects, None, EventType.ITEM_RELEASED, data)
                report.requeued += 1
                touched.append(item)
                continue
            # Items of one lane mostly share a policy: work it out once per (lane, own policy).
            key = (item.lane_id, item.retry_policy)
            policy = policies.get(key)
            if policy is None:
                policy = policies[key] = rules.effective_retry_policy(
                    item.retry_policy, lease.lane_retry_policy, coordinator.config.retry_policy
                )
            self._retry_or_dead_letter(tx, item, policy, True, events, effects)
            if item.state == ItemState.DEAD:
                report.dead_lettered += 1
            else:
                report.requeued += 1
            touched.append(item)
        await tx.write_retries(touched)
        if released:
            await tx.update_attempts(released)
            # A retry's write keeps the attempt count: give the budget's stop its attempt back.
            unburned = await tx.items_by_ids([a.item_id for a in released])
            for full in unburned:
                full.attempt_count = max(full.attempt_count - 1, 0)
            await tx.update_items(unburned)
        await self.core.append_events(tx, coordinator, events, principal.name)

    async def acquire_leadership(
        self, principal: Principal, input: AcquireLeadershipInput
    ) -> LeadershipClaim:
        """Take or renew the named leadership for ``holder_id`` unless another holds it."""
        if principal.kind != PrincipalKind.SERVICE:
            raise PermissionDenied("only the recovery service holds leadership")
        async with self.core.store.write() as tx:
            expire = tx.now + timedelta(seconds=input.lease_seconds or 45)
            leadership = await tx.acquire_leadership(input.name, input.holder_id, tx.now, expire)
        return LeadershipClaim(leadership, leadership.holder_id == input.holder_id)

    async def release_leadership(
        self, principal: Principal, input: ReleaseLeadershipInput
    ) -> Leadership | None:
        """Give up the named leadership if ``holder_id`` holds it (else nothing changes)."""
        if principal.kind != PrincipalKind.SERVICE:
            raise PermissionDenied("only the recovery service holds leadership")
        async with self.core.store.write() as tx:
            return await tx.release_leadership(input.name, input.holder_id)

    # ---------------------------------------------------------------------- helpers

    async def _note_step_failures(
        self, tx: Tx, coordinator_id: str, report: MaintenanceReport, effects: Effects
    ) -> None:
        """A digest line for each failed step whose failure today's digest does not show yet:
        the digest owner hears of it once a day; every failure counts in the recovery status
        and metrics. Read under the coordinator's lock, so two leaders never both write it."""
        if not report.step_failures:
            return
        entries = await tx.digest_entries(coordinator_id, tx.now.date().isoformat())
        noted = {
            e.reason.partition(":")[0]
            for e in entries
            if e.kind == DigestKind.MAINTENANCE_STEP_FAILED
        }
        for failure in report.step_failures:
            if failure.step not in noted:
                reason = f"{failure.step}: {failure.error} ({failure.failures} failed in a pass)"
                effects.note(DigestKind.MAINTENANCE_STEP_FAILED, "", reason=reason[:1000])

    async def _escalate(
        self, principal: Principal, coordinator_id: str, report: MaintenanceReport
    ) -> None:
        """Escalate ready items left unleased past escalate_after. Gates that do not count
        toward escalation (capacity, exclusive keys, backoff, pauses, …) postpone it."""
        async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            effects,
        ):
            ready_before = tx.now - timedelta(seconds=coordinator.config.escalate_after_seconds)
            candidates = await tx.escalation_candidates(
                coordinator_id, tx.now, ready_before, ESCALATION_BATCH
            )
            if not candidates:
                return
            occupancy = await self.core.occupancy(tx, coordinator, candidates)
            escalations: list[Escalation] = []
            events: list[NewEvent] = []
            lanes: dict[str, Lane | None] = {}
            # A parent holding a live ESCALATE grant is told too.
            parents = await parents_holding(
                tx,
                coordinator_id,
                coordinator.config.parent_coordinator_id,
                GrantPermission.ESCALATE,
                tx.now,
            )
            for item in candidates:
                if item.lane_id not in lanes:
                    lanes[item.lane_id] = await tx.get_lane(item.lane_id)
                lane = lanes[item.lane_id]
                if lane is None:
                    continue
                # Candidates are claimable (not held by a pause or a blocker) and the switch is
                # on (the command checked it): only the item's own gates can apply.
                context = GateContext(coordinator, True, lane, [], [item], occupancy, tx.now)
                gates = item_gates(context, item)
                if not all(g.counts_toward_escalation for g in gates):
                    continue
                reason = gates[0].detail if gates else "ready but not leased"
                recipients = [coordinator.config.digest_owner or "digest owner", *parents]
                escalations.append(
                    Escalation(
                        escalation_id=new_id("esc"),
                        coordinator_id=coordinator_id,
                        lane_id=item.lane_id,
                        item_id=item.item_id,
                        reason=reason,
                        escalated_to=recipients,
                        open=True,
                        create_time=tx.now,
                    )
                )
                events.append(
                    NewEvent.for_item(
                        EventType.ESCALATED,
                        item,
                        data={"gate": gates[0].gate if gates else "", "to": recipients},
                    )
                )
                effects.note(DigestKind.ESCALATED, item.lane_id, item.item_id, reason)
            await tx.insert_escalations(escalations)
            await self.core.append_events(tx, coordinator, events, principal.name)
            report.escalated += len(escalations)
