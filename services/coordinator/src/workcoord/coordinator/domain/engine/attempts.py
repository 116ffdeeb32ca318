"""The fenced worker writes on a lease: start, heartbeat, complete, fail, checkpoint, release."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from workcoord.kit.errors import IllegalTransition, WorkcoordError

from .. import rules, stops, usage
from ..auth import Access, Principal, authorize
from ..group_commit import shielded
from ..inputs import (
    BatchInput,
    CheckpointInput,
    CompleteInput,
    FailInput,
    HeartbeatInput,
    OnLeaseInput,
    ReleaseInput,
    StartInput,
)
from ..model import (
    Attempt,
    AttemptStatus,
    Coordinator,
    EventType,
    Item,
    ItemKind,
    ItemState,
    Lane,
    NewEvent,
    RetryPolicy,
    UsageScope,
    UsageTotal,
)
from ..ports import Tx
from ..results import EntryResult, HeartbeatAnswer
from ..specs import RunIdentity, Usage
from . import budgeting
from ._base import Effects, EngineCore
from .heartbeats import Confirmation, Heartbeats
from .transitions import Transitions


@dataclass(slots=True)
class FencedWrite:
    """A worker write that proved it holds the live lease: its transaction (shared with the
    other worker writes of the group), the attempt and its item."""

    tx: Tx
    coordinator: Coordinator
    effects: Effects
    attempt: Attempt
    item: Item

    def event(self, type: EventType, data: dict[str, object] | None = None) -> NewEvent:
        """An event about the item and this lease."""
        return NewEvent.for_item(type, self.item, self.attempt.lease_id, data)


class AttemptService(Transitions):
    """The worker writes, each fenced by the lease token (``engine.attempts``)."""

    def __init__(self, core: EngineCore) -> None:
        super().__init__(core)
        self.heartbeats = Heartbeats(core)

    @asynccontextmanager
    async def fenced(self, principal: Principal, lease: OnLeaseInput) -> AsyncIterator[FencedWrite]:
        """Join the group commit of the coordinator's worker writes, refusing (LEASE_LOST)
        unless the input's token holds the item's live, unexpired lease it names."""
        async with self._worker_write(principal, lease.coordinator_id) as (tx, coordinator, fx):
            attempt, item = await self._fence(tx, lease)
            yield FencedWrite(tx, coordinator, fx, attempt, item)

    @asynccontextmanager
    async def _worker_write(
        self, principal: Principal, coordinator_id: str
    ) -> AsyncIterator[tuple[Tx, Coordinator, Effects]]:
        """One member of the group commit of the coordinator's worker writes, authorized."""
        opener = functools.partial(self.core.open_for_workers, coordinator_id)
        async with self.core.worker_writes.member(coordinator_id, opener) as (
            tx,
            coordinator,
            effects,
        ):
            # Authorize before revealing anything (even that coordination is switched off).
            authorize(principal, coordinator, Access.LEASE)
            await self.core.require_enabled(tx, principal, coordinator, Access.LEASE)
            yield tx, coordinator, effects

    @staticmethod
    async def _fence(
        tx: Tx, lease: OnLeaseInput, found: tuple[Attempt | None, Item | None] | None = None
    ) -> tuple[Attempt, Item]:
        """The attempt and item of ``lease`` (read now, or ``found`` by a batch's one read) if
        its token holds the live lease (LEASE_LOST)."""
        if found is None:
            found = await tx.attempt_with_item(lease.lease_id)
        return rules.fenced(found, lease.coordinator_id, lease.lease_token, tx.now)

    async def _save(
        self,
        write: FencedWrite,
        events: Sequence[NewEvent],
        principal: Principal,
        spent: Usage | None = None,
    ) -> Attempt:
        await write.tx.update_attempts([write.attempt])
        await write.tx.update_items([write.item])
        if spent is not None:
            totals = usage.rollups(write.attempt, spent, write.tx.now)
            spending = self._spend(write.tx, write.coordinator, write.effects, totals)
            events = [*events, *await spending]
        await self.core.append_events(write.tx, write.coordinator, events, principal.name)
        return write.attempt

    @staticmethod
    async def _spend(
        tx: Tx, coordinator: Coordinator, effects: Effects, totals: list[UsageTotal]
    ) -> list[NewEvent]:
        """Gather a write's roll-ups in ``effects`` (the group adds them last, before commit:
        ``EngineCore.before_commit``); under a budget (the coordinator's lock held), the budget
        events the spend raises (a spent budget's pending action opened), to append."""
        events: list[NewEvent] = []
        if totals and budgeting.in_force(coordinator):
            lanes = {t.key for t in totals if t.scope == UsageScope.LANE}
            book = await budgeting.read_book(tx, coordinator, lanes, tx.now)
            # What the group's earlier members spent is not stored yet: count it first (its
            # events were theirs), so the budgets see every spend before this one.
            book.add(effects.usage)
            events = book.add(totals)
            await budgeting.open_actions(tx, coordinator, events)
        effects.usage.extend(totals)
        return events

    @shielded
    async def start(self, principal: Principal, input: StartInput) -> Attempt:
        """Start a leased attempt with its run identity (a retry with the same identity is a
        no-op; another identity is refused)."""
        run_identity = input.run_identity
        rules.check_run_identity(run_identity, "run_identity", self.core.clock.now())
        async with self.fenced(principal, input) as write:
            attempt, item, now = write.attempt, write.item, write.tx.now
            if attempt.status == AttemptStatus.RUNNING:
                if RunIdentity.from_json(attempt.run_identity or {}) == run_identity:
                    return attempt  # a retried Start: idempotent
                raise IllegalTransition(
                    "the attempt already started; its run identity is immutable"
                )
            attempt.status = AttemptStatus.RUNNING
            attempt.run_identity = run_identity.to_json()
            attempt.start_time = now
            item.state = ItemState.RUNNING
            item.update_time = now
            write.effects.changed = True
            return await self._save(write, [write.event(EventType.ITEM_STARTED)], principal)

    @shielded
    async def heartbeat(
        self,
        principal: Principal,
        input: HeartbeatInput,
        confirmation: Confirmation | None = None,
    ) -> HeartbeatAnswer:
        """Extend the lease by its duration from now (never past its deadline plus one lease
        period); returns the new expiry and the stop the worker must heed, if any. It joins the
        next round of heartbeats (``heartbeats.py``; ``confirmation``: the caller is to be
        confirmed there)."""
        return await self.heartbeats.heartbeat(principal, input, confirmation)

    @shielded
    async def complete(self, principal: Principal, input: CompleteInput) -> Attempt:
        """Complete a running attempt: the item succeeds with ``evidence``, its dependents are
        released and the lane moves on (or finishes)."""
        async with self.fenced(principal, input) as write:
            tx, attempt, item = write.tx, write.attempt, write.item
            events: list[NewEvent] = []
            spent = self._succeed(write, input, events)
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            totals = usage.rollups(attempt, spent, tx.now)
            events += await self._spend(tx, write.coordinator, write.effects, totals)
            await self._after_success(tx, write.coordinator, [item], events, write.effects)
            await self.core.append_events(tx, write.coordinator, events, principal.name)
            return attempt

    @staticmethod
    def _succeed(write: FencedWrite, input: CompleteInput, events: list[NewEvent]) -> Usage:
        """Check, then complete the attempt and its item in memory (refusals come first);
        returns what the reported usage added."""
        tx, attempt, item = write.tx, write.attempt, write.item
        rules.require_running(attempt, "complete")
        stops.require_allowed(item, write.coordinator.config, "complete")
        rules.check_evidence(item.kind, input.evidence)
        spent = usage.record(attempt, input.usage)
        attempt.status = AttemptStatus.COMPLETED
        attempt.end_time = tx.now
        item.state = ItemState.SUCCEEDED
        item.evidence = input.evidence.to_json()
        item.current_lease_id = ""
        item.update_time = tx.now
        events.append(write.event(EventType.ITEM_SUCCEEDED, {"attempt": attempt.attempt}))
        write.effects.ready_classes.add(attempt.worker_class)  # a capacity slot is free
        return spent

    @shielded
    async def fail(self, principal: Principal, input: FailInput) -> Attempt:
        """Fail an attempt: the item retries with backoff or is dead-lettered."""
        async with self.fenced(principal, input) as write:
            policy = await self._policy_for(write.tx, write.coordinator, write.item)
            events: list[NewEvent] = []
            spent = self._fail(write, input, policy, events)
            return await self._save(write, events, principal, spent)

    def _fail(
        self, write: FencedWrite, input: FailInput, policy: RetryPolicy, events: list[NewEvent]
    ) -> Usage:
        """Check the reported usage, then fail the attempt in memory: its item retries with
        backoff or is dead-lettered. Returns what the usage added."""
        tx, attempt, item, error = write.tx, write.attempt, write.item, input.error
        spent = usage.record(attempt, input.usage)
        attempt.status = AttemptStatus.FAILED
        attempt.end_time = tx.now
        attempt.error = error.to_json()
        item.last_error = error.to_json()
        failed = {"type": error.type, "retryable": error.retryable, "attempt": attempt.attempt}
        events.append(write.event(EventType.ITEM_FAILED, failed))
        self._retry_or_dead_letter(tx, item, policy, error.retryable, events, write.effects)
        write.effects.ready_classes.add(attempt.worker_class)
        return spent

    @shielded
    async def checkpoint(self, principal: Principal, input: CheckpointInput) -> Attempt:
        """End an attempt with a continuation: the next lease of the item gets
        ``checkpoint``; a blocked checkpoint stops the item for a human instead."""
        checkpoint = input.checkpoint
        rules.check_checkpoint(checkpoint)
        blocked = checkpoint.blocked_reason
        async with self.fenced(principal, input) as write:
            tx, attempt, item, effects = write.tx, write.attempt, write.item, write.effects
            stops.require_allowed(item, write.coordinator.config, "checkpoint")
            spent = usage.record(attempt, input.usage)
            # A checkpoint is progress, not failure: it does not burn the retry budget.
            self._end_unburned(attempt, item, AttemptStatus.CHECKPOINTED, tx.now)
            attempt.checkpoint = checkpoint.to_json()
            item.continues_lease_id = attempt.lease_id
            events = [write.event(EventType.ITEM_CHECKPOINTED, {"blocked": bool(blocked)})]
            if blocked:
                item.update_time = tx.now
                self._stop(item, f"checkpoint blocked: {blocked}", events, effects)
            else:
                self._queue(tx, item, events, effects, None)
            effects.ready_classes.add(attempt.worker_class)
            return await self._save(write, events, principal, spent)

    @shielded
    async def release(self, principal: Principal, input: ReleaseInput) -> Attempt:
        """Give the item back unfinished: it is queued again and no attempt is burned."""
        reason = input.reason
        async with self.fenced(principal, input) as write:
            self._end_unburned(write.attempt, write.item, AttemptStatus.RELEASED, write.tx.now)
            events = [write.event(EventType.ITEM_RELEASED, {"reason": reason} if reason else {})]
            self._queue(write.tx, write.item, events, write.effects, None)
            return await self._save(write, events, principal)

    # ------------------------------------------------------------------ batched writes
    #
    # A batch is one member of the group commit: authorized once, each entry fenced and
    # applied in memory on its own (a refusal drops only that entry, before it changed
    # anything), then one write per table for all of them and one append of their events.

    @shielded
    async def batch_heartbeat(
        self,
        principal: Principal,
        input: BatchInput[HeartbeatInput],
        confirmation: Confirmation | None = None,
    ) -> list[EntryResult[HeartbeatAnswer]]:
        """Heartbeat many leases; each entry answered on its own (its expiry and stop, or its
        error). The batch joins the next round of heartbeats as one call."""
        return await self.heartbeats.batch(principal, input, confirmation)

    @shielded
    async def batch_complete(
        self, principal: Principal, input: BatchInput[CompleteInput]
    ) -> list[EntryResult[Attempt]]:
        """Complete many leases; each entry answered on its own. The lanes' follow-ups
        (dependents released, a lane finished) are worked out once per lane for the batch."""
        async with self._worker_write(principal, input.coordinator_id) as (tx, coordinator, fx):
            results: list[EntryResult[Attempt]] = []
            events: list[NewEvent] = []
            done: list[FencedWrite] = []
            spent: list[UsageTotal] = []
            found = await tx.attempts_with_items([e.lease_id for e in input.entries])
            for entry in input.entries:
                try:
                    attempt, item = await self._fence(tx, entry, found[entry.lease_id])
                    write = FencedWrite(tx, coordinator, fx, attempt, item)
                    added = self._succeed(write, entry, events)
                except WorkcoordError as exc:
                    results.append(EntryResult(entry.lease_id, error=exc))
                    continue
                done.append(write)
                spent += usage.rollups(attempt, added, tx.now)
                results.append(EntryResult(entry.lease_id, attempt))
            if done:
                await tx.update_attempts([w.attempt for w in done])
                events += await self._spend(tx, coordinator, fx, spent)
                await self._after_successes(tx, coordinator, [w.item for w in done], events, fx)
                await self.core.append_events(tx, coordinator, events, principal.name)
            return results

    async def _after_successes(
        self,
        tx: Tx,
        coordinator: Coordinator,
        done: Sequence[Item],
        events: list[NewEvent],
        effects: Effects,
    ) -> None:
        """Write ``done`` and run their lanes' follow-ups: the TASK items of a CUSTOM lane
        together, a STANDARD lane's stages one at a time (its workflow steps per success)."""
        groups: dict[str, list[Item]] = {}
        for item in done:
            key = item.lane_id if item.kind == ItemKind.TASK else f"{item.lane_id}/{item.item_id}"
            groups.setdefault(key, []).append(item)
        together = [g for g in groups.values() if g[0].kind == ItemKind.TASK]
        await tx.update_items([item for group in together for item in group])
        for group in together:
            await self._after_success(tx, coordinator, group, events, effects)
        for group in groups.values():
            if group[0].kind != ItemKind.TASK:
                await tx.update_items(group)
                await self._after_success(tx, coordinator, group, events, effects)

    @shielded
    async def batch_fail(
        self, principal: Principal, input: BatchInput[FailInput]
    ) -> list[EntryResult[Attempt]]:
        """Fail many leases; each entry answered on its own (retried or dead-lettered)."""
        async with self._worker_write(principal, input.coordinator_id) as (tx, coordinator, fx):
            results: list[EntryResult[Attempt]] = []
            events: list[NewEvent] = []
            failed: list[FencedWrite] = []
            spent: list[UsageTotal] = []
            lanes: dict[str, Lane | None] = {}
            found = await tx.attempts_with_items([e.lease_id for e in input.entries])
            for entry in input.entries:
                try:
                    attempt, item = await self._fence(tx, entry, found[entry.lease_id])
                except WorkcoordError as exc:
                    results.append(EntryResult(entry.lease_id, error=exc))
                    continue
                if item.lane_id not in lanes:
                    lanes[item.lane_id] = await tx.get_lane(item.lane_id)
                lane = lanes[item.lane_id]
                policy = rules.effective_retry_policy(
                    item.retry_policy,
                    lane.retry_policy if lane else RetryPolicy(),
                    coordinator.config.retry_policy,
                )
                write = FencedWrite(tx, coordinator, fx, attempt, item)
                try:
                    added = self._fail(write, entry, policy, events)
                except WorkcoordError as exc:
                    results.append(EntryResult(entry.lease_id, error=exc))
                    continue
                failed.append(write)
                spent += usage.rollups(attempt, added, tx.now)
                results.append(EntryResult(entry.lease_id, attempt))
            if failed:
                await tx.update_attempts([w.attempt for w in failed])
                events += await self._spend(tx, coordinator, fx, spent)
                await tx.update_items([w.item for w in failed])
                await self.core.append_events(tx, coordinator, events, principal.name)
            return results
