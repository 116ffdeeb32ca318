"""The fenced worker writes on a lease: start, heartbeat, complete, fail, checkpoint, release."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from workcoord.kit.errors import IllegalTransition

from .. import rules
from ..auth import Access, Principal, authorize
from ..model import (
    Attempt,
    AttemptStatus,
    Coordinator,
    EventType,
    Item,
    ItemState,
    NewEvent,
)
from ..ports import Tx
from ..specs import Checkpoint, Evidence, Failure, RunIdentity
from ._base import Effects
from .transitions import Transitions


class AttemptCommands(Transitions):
    """The worker writes, each fenced by the lease token."""

    @asynccontextmanager
    async def fenced(
        self, principal: Principal, coordinator_id: str, lease_id: str, lease_token: str
    ) -> AsyncIterator[tuple[Tx, Coordinator, Effects, Attempt, Item]]:
        opener = functools.partial(self._open_for_workers, coordinator_id)
        async with self._worker_writes.member(coordinator_id, opener) as (
            tx,
            coordinator,
            effects,
        ):
            authorize(principal, coordinator, Access.LEASE)
            attempt = await tx.get_attempt_for_update(lease_id)
            if attempt is not None and attempt.coordinator_id != coordinator_id:
                attempt = None
            item = await tx.get_item(attempt.item_id) if attempt is not None else None
            rules.fence(attempt, item, lease_token, tx.now)
            assert attempt is not None and item is not None
            yield tx, coordinator, effects, attempt, item

    async def start(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        run_identity: RunIdentity,
    ) -> Attempt:
        """Start a leased attempt with its run identity (a retry with the same identity is a
        no-op; another identity is refused)."""
        rules.check_run_identity(run_identity, "run_identity", self.clock.now())
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            if attempt.status == AttemptStatus.RUNNING:
                if RunIdentity.from_json(attempt.run_identity or {}) == run_identity:
                    return attempt  # a retried Start: idempotent
                raise IllegalTransition(
                    "the attempt already started; its run identity is immutable"
                )
            attempt.status = AttemptStatus.RUNNING
            attempt.run_identity = run_identity.to_json()
            attempt.start_time = tx.now
            item.state = ItemState.RUNNING
            item.update_time = tx.now
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self.append_events(
                tx,
                coordinator,
                [
                    NewEvent(
                        EventType.ITEM_STARTED,
                        lane_id=item.lane_id,
                        item_id=item.item_id,
                        lease_id=lease_id,
                    )
                ],
                principal.name,
            )
            effects.changed = True
            return attempt

    async def heartbeat(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        progress: str,
    ) -> datetime:
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            _coordinator,
            _effects,
            attempt,
            _item,
        ):
            attempt.lease_expire_time = rules.lease_expiry(tx.now, attempt.lease_seconds)
            if progress:
                attempt.progress = progress
            await tx.update_attempts([attempt])
            return attempt.lease_expire_time

    async def complete(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        evidence: Evidence,
    ) -> Attempt:
        """Complete a running attempt: the item succeeds with ``evidence``, its dependents are
        released and the lane moves on (or finishes)."""
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            rules.require_running(attempt, "complete")
            rules.check_evidence(item.kind, evidence)
            attempt.status = AttemptStatus.COMPLETED
            attempt.end_time = tx.now
            item.state = ItemState.SUCCEEDED
            item.evidence = evidence.to_json()
            item.current_lease_id = ""
            item.update_time = tx.now
            events = [
                NewEvent(
                    EventType.ITEM_SUCCEEDED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={"attempt": attempt.attempt},
                )
            ]
            effects.ready_classes.add(attempt.worker_class)  # a capacity slot is free
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self._after_success(tx, coordinator, item, events, effects)
            await self.append_events(tx, coordinator, events, principal.name)
            return attempt

    async def fail(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        error: Failure,
    ) -> Attempt:
        """Fail an attempt: the item retries with backoff or is dead-lettered."""
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            attempt.status = AttemptStatus.FAILED
            attempt.end_time = tx.now
            attempt.error = error.to_json()
            item.last_error = error.to_json()
            events = [
                NewEvent(
                    EventType.ITEM_FAILED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={
                        "type": error.type,
                        "retryable": error.retryable,
                        "attempt": attempt.attempt,
                    },
                )
            ]
            await tx.update_attempts([attempt])
            policy = await self._policy_for(tx, coordinator, item)
            self._retry_or_dead_letter(tx, item, policy, error.retryable, events, effects)
            effects.ready_classes.add(attempt.worker_class)
            await tx.update_items([item])
            await self.append_events(tx, coordinator, events, principal.name)
            return attempt

    async def checkpoint(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        checkpoint: Checkpoint,
    ) -> Attempt:
        """End an attempt with a continuation: the next lease of the item gets
        ``checkpoint``; a blocked checkpoint stops the item for a human instead."""
        rules.check_checkpoint(checkpoint)
        blocked = checkpoint.blocked_reason
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            attempt.status = AttemptStatus.CHECKPOINTED
            attempt.end_time = tx.now
            attempt.checkpoint = checkpoint.to_json()
            # A checkpoint is progress, not failure: it does not burn the retry budget.
            attempt.counted = False
            item.attempt_count = max(item.attempt_count - 1, 0)
            item.continues_lease_id = lease_id
            events = [
                NewEvent(
                    EventType.ITEM_CHECKPOINTED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={"blocked": bool(blocked)},
                )
            ]
            if blocked:
                item.update_time = tx.now
                self._stop(item, f"checkpoint blocked: {blocked}", events, effects)
            else:
                self._queue(tx, item, events, effects, None)
            effects.ready_classes.add(attempt.worker_class)
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self.append_events(tx, coordinator, events, principal.name)
            return attempt

    async def release(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        reason: str,
    ) -> Attempt:
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            attempt.status = AttemptStatus.RELEASED
            attempt.end_time = tx.now
            attempt.counted = False
            item.attempt_count = max(item.attempt_count - 1, 0)
            events = [
                NewEvent(
                    EventType.ITEM_RELEASED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={"reason": reason} if reason else {},
                )
            ]
            self._queue(tx, item, events, effects, None)
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self.append_events(tx, coordinator, events, principal.name)
            return attempt
