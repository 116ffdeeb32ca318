"""The fenced worker writes on a lease: start, heartbeat, complete, fail, checkpoint, release."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from workcoord.kit.errors import IllegalTransition

from .. import rules, usage
from ..auth import Access, Principal, authorize
from ..group_commit import shielded
from ..inputs import (
    CheckpointInput,
    CompleteInput,
    FailInput,
    HeartbeatInput,
    OnLeaseInput,
    ReleaseInput,
    StartInput,
)
from ..model import Attempt, AttemptStatus, Coordinator, EventType, Item, ItemState, NewEvent
from ..ports import Tx
from ..specs import RunIdentity, Usage
from ._base import Effects
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

    @asynccontextmanager
    async def fenced(self, principal: Principal, lease: OnLeaseInput) -> AsyncIterator[FencedWrite]:
        """Join the group commit of the coordinator's worker writes, refusing (LEASE_LOST)
        unless the input's token holds the item's live, unexpired lease it names."""
        coordinator_id = lease.coordinator_id
        opener = functools.partial(self.core.open_for_workers, coordinator_id)
        async with self.core.worker_writes.member(coordinator_id, opener) as (
            tx,
            coordinator,
            effects,
        ):
            # Authorize before revealing anything (even that coordination is switched off).
            authorize(principal, coordinator, Access.LEASE)
            await self.core.require_enabled(tx, principal, coordinator, Access.LEASE)
            attempt, item = await tx.attempt_with_item(lease.lease_id)
            if attempt is not None and attempt.coordinator_id != coordinator_id:
                attempt, item = None, None
            rules.fence(attempt, item, lease.lease_token, tx.now)
            assert attempt is not None and item is not None
            yield FencedWrite(tx, coordinator, effects, attempt, item)

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
            await write.tx.add_usage(usage.rollups(write.attempt, spent, write.tx.now))
        await self.core.append_events(write.tx, write.coordinator, events, principal.name)
        return write.attempt

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
    async def heartbeat(self, principal: Principal, input: HeartbeatInput) -> datetime:
        """Extend the lease by its duration from now; returns the new expiry."""
        progress = input.progress
        async with self.fenced(principal, input) as write:
            attempt = write.attempt
            spent = usage.record(attempt, input.usage)
            attempt.lease_expire_time = rules.lease_expiry(write.tx.now, attempt.lease_seconds)
            if progress:
                attempt.progress = progress
            await write.tx.update_attempts([attempt])
            await write.tx.add_usage(usage.rollups(attempt, spent, write.tx.now))
            return attempt.lease_expire_time

    @shielded
    async def complete(self, principal: Principal, input: CompleteInput) -> Attempt:
        """Complete a running attempt: the item succeeds with ``evidence``, its dependents are
        released and the lane moves on (or finishes)."""
        evidence = input.evidence
        async with self.fenced(principal, input) as write:
            tx, attempt, item = write.tx, write.attempt, write.item
            rules.require_running(attempt, "complete")
            rules.check_evidence(item.kind, evidence)
            spent = usage.record(attempt, input.usage)
            attempt.status = AttemptStatus.COMPLETED
            attempt.end_time = tx.now
            item.state = ItemState.SUCCEEDED
            item.evidence = evidence.to_json()
            item.current_lease_id = ""
            item.update_time = tx.now
            events = [write.event(EventType.ITEM_SUCCEEDED, {"attempt": attempt.attempt})]
            write.effects.ready_classes.add(attempt.worker_class)  # a capacity slot is free
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await tx.add_usage(usage.rollups(attempt, spent, tx.now))
            await self._after_success(tx, write.coordinator, item, events, write.effects)
            await self.core.append_events(tx, write.coordinator, events, principal.name)
            return attempt

    @shielded
    async def fail(self, principal: Principal, input: FailInput) -> Attempt:
        """Fail an attempt: the item retries with backoff or is dead-lettered."""
        error = input.error
        async with self.fenced(principal, input) as write:
            tx, attempt, item = write.tx, write.attempt, write.item
            spent = usage.record(attempt, input.usage)
            attempt.status = AttemptStatus.FAILED
            attempt.end_time = tx.now
            attempt.error = error.to_json()
            item.last_error = error.to_json()
            failed = {"type": error.type, "retryable": error.retryable, "attempt": attempt.attempt}
            events = [write.event(EventType.ITEM_FAILED, failed)]
            policy = await self._policy_for(tx, write.coordinator, item)
            self._retry_or_dead_letter(tx, item, policy, error.retryable, events, write.effects)
            write.effects.ready_classes.add(attempt.worker_class)
            return await self._save(write, events, principal, spent)

    @shielded
    async def checkpoint(self, principal: Principal, input: CheckpointInput) -> Attempt:
        """End an attempt with a continuation: the next lease of the item gets
        ``checkpoint``; a blocked checkpoint stops the item for a human instead."""
        checkpoint = input.checkpoint
        rules.check_checkpoint(checkpoint)
        blocked = checkpoint.blocked_reason
        async with self.fenced(principal, input) as write:
            tx, attempt, item, effects = write.tx, write.attempt, write.item, write.effects
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
