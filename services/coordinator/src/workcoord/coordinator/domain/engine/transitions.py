"""What happens to lanes and items after a success, failure, cancel, retry or dead-letter."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from .. import rules, stops, workflow
from ..model import (
    TERMINAL_ITEM_STATES,
    Attempt,
    AttemptStatus,
    Coordinator,
    DeadLetterReason,
    DigestKind,
    EventType,
    Item,
    ItemKind,
    ItemState,
    JsonObject,
    Lane,
    LaneState,
    NewEvent,
    PendingAction,
    PendingActionState,
    RetryPolicy,
    Template,
)
from ..ports import Reader, Tx
from ..specs import ItemSpec
from ._base import Effects, EngineService, new_id
from .paging import iso

CLOSE_TICKET = "CLOSE_TICKET"
TICKET_CLOSED = "CLOSED"


class Transitions(EngineService):
    """State changes shared by the commands, applied inside their transaction: the base of the
    services whose commands change items and lanes."""

    async def _new_items(
        self,
        tx: Tx,
        coordinator: Coordinator,
        lane: Lane,
        specs: Sequence[ItemSpec],
        events: list[NewEvent],
        effects: Effects,
        existing: Sequence[Item] = (),
    ) -> list[Item]:
        seq = await tx.next_item_seq(len(specs))
        succeeded = {i.key for i in existing if i.state == ItemState.SUCCEEDED}
        items: list[Item] = []
        for offset, spec in enumerate(specs):
            item = Item(
                item_id=new_id("it"),
                coordinator_id=coordinator.coordinator_id,
                lane_id=lane.lane_id,
                key=spec.key,
                kind=spec.kind or ItemKind.TASK,
                worker_class=spec.worker_class,
                state=ItemState.WAITING,
                create_time=tx.now,
                update_time=tx.now,
                title=spec.title,
                brief=spec.brief,
                depends_on=list(spec.depends_on),
                inputs=spec.inputs,
                placement=spec.placement,
                exclusive_key=spec.exclusive_key,
                priority=lane.priority if spec.priority is None else spec.priority,
                retry_policy=spec.retry_policy,
                action_classes=list(spec.action_classes),
                needs_human=spec.needs_human,
                requires_approval=spec.requires_approval,
                max_run_seconds=spec.max_run_seconds,
                held=lane.paused,
                seq=seq + offset,
            )
            created = {"kind": item.kind.value, "key": item.key, "workerClass": item.worker_class}
            events.append(NewEvent.for_item(EventType.ITEM_CREATED, item, data=created))
            if all(dep in succeeded for dep in item.depends_on):
                self._make_ready(tx, coordinator, item, events, effects)
            items.append(item)
        await tx.insert_items(items)
        return items

    def _make_ready(
        self,
        tx: Tx,
        coordinator: Coordinator,
        item: Item,
        events: list[NewEvent],
        effects: Effects,
    ) -> None:
        """Move an item whose dependencies are met to QUEUED, or stop it for a human."""
        reason, sensitive = rules.policy_stop_reason(
            item, coordinator.config.allowed_action_classes
        )
        item.update_time = tx.now
        if reason:
            self._stop(item, reason, events, effects)
            item.sensitive = item.sensitive or sensitive
            return
        if item.requires_approval:
            item.state = ItemState.AWAITING_APPROVAL
            events.append(NewEvent.for_item(EventType.APPROVAL_REQUESTED, item))
            return
        self._queue(tx, item, events, effects, not_before=None)

    @staticmethod
    def _await_approval(tx: Tx, item: Item, events: list[NewEvent]) -> None:
        """Hold an item that was ready (or live) for a human's approval."""
        item.state = ItemState.AWAITING_APPROVAL
        item.not_before = None
        item.current_lease_id = ""
        item.update_time = tx.now
        events.append(NewEvent.for_item(EventType.APPROVAL_REQUESTED, item))

    def _stop(self, item: Item, reason: str, events: list[NewEvent], effects: Effects) -> None:
        """Stop an item for a human, with its reason, an event and a digest line."""
        item.state = ItemState.STOPPED
        item.stop_reason = reason
        item.current_lease_id = ""
        events.append(NewEvent.for_item(EventType.ITEM_STOPPED, item, data={"reason": reason}))
        effects.note(DigestKind.STOPPED, item.lane_id, item.item_id, reason)

    def _queue(
        self,
        tx: Tx,
        item: Item,
        events: list[NewEvent],
        effects: Effects,
        not_before: datetime | None,
        event: EventType = EventType.ITEM_QUEUED,
        data: JsonObject | None = None,
    ) -> None:
        if stops.approval_withdrawn(item):
            # Leased before shipping needed an approval: it is given back to a human instead.
            self._await_approval(tx, item, events)
            return
        item.state = ItemState.QUEUED
        item.not_before = not_before
        item.current_lease_id = ""
        item.ready_time = not_before or tx.now
        item.update_time = tx.now
        payload = dict(data or {})
        if not_before is not None:
            payload["notBefore"] = iso(not_before)
        events.append(NewEvent.for_item(event, item, data=payload))
        effects.ready_classes.add(item.worker_class)

    async def _set_lane_hold(self, tx: Tx, lane: Lane, effects: Effects) -> None:
        """Mirror the lane's pause and open blockers onto its items (the claim path reads it)."""
        blockers = await tx.lane_blockers([lane.lane_id])
        held = lane.paused or any(b.open for b in blockers)
        items = await tx.lane_items([lane.lane_id])
        changed = [i for i in items if i.held != held]
        for item in changed:
            item.held = held
            if not held and item.state == ItemState.QUEUED:
                effects.ready_classes.add(item.worker_class)
        if changed:
            await tx.update_items(changed)

    @staticmethod
    def _end_unburned(attempt: Attempt, item: Item, status: AttemptStatus, now: datetime) -> None:
        """End a live attempt without spending the item's retry budget on it."""
        attempt.status = status
        attempt.end_time = now
        attempt.counted = False
        item.attempt_count = max(item.attempt_count - 1, 0)

    async def _cancel_items(
        self,
        tx: Tx,
        items: Sequence[Item],
        events: list[NewEvent],
        effects: Effects,
        reason: str,
    ) -> None:
        open_items = [i for i in items if i.state not in TERMINAL_ITEM_STATES]
        ended: list[Attempt] = []
        for item in open_items:
            if not item.current_lease_id:
                continue
            attempt = await tx.get_attempt(item.current_lease_id)
            if attempt is not None and attempt.live:
                # The worker did nothing wrong: its attempt is released, not burned.
                self._end_unburned(attempt, item, AttemptStatus.RELEASED, tx.now)
                ended.append(attempt)
                effects.ready_classes.add(attempt.worker_class)
        if ended:
            await tx.update_attempts(ended)
        for item in open_items:
            item.state = ItemState.CANCELLED
            item.current_lease_id = ""
            item.update_time = tx.now
            events.append(
                NewEvent.for_item(
                    EventType.ITEM_CANCELLED, item, data={"reason": reason} if reason else {}
                )
            )
        if open_items:
            await tx.update_items(open_items)
            await tx.resolve_escalations(
                open_items[0].coordinator_id, [i.item_id for i in open_items], tx.now
            )

    async def _after_success(
        self,
        tx: Tx,
        coordinator: Coordinator,
        done: Sequence[Item],
        events: list[NewEvent],
        effects: Effects,
    ) -> None:
        """Release dependents whose dependencies all succeeded; finish the lane when done.

        ``done`` are items of one lane that just succeeded (one, or a batch's), already
        written, so they count as succeeded. On the hot path only how many of the lane's
        items are in each state is read, once for all of them; the items' states and full
        items only when some are still WAITING.
        """
        lane, counts = await tx.lane_with_state_counts(done[0].lane_id)
        assert lane is not None
        if counts.get(ItemState.WAITING):
            states = await tx.lane_item_states(lane.lane_id)
            done_keys = {item.key for item in done}
            states.update(dict.fromkeys(done_keys, ItemState.SUCCEEDED))
            changed: list[Item] = []
            for item in await tx.waiting_items(lane.lane_id):
                if done_keys & set(item.depends_on) and all(
                    states.get(dep) == ItemState.SUCCEEDED for dep in item.depends_on
                ):
                    self._make_ready(tx, coordinator, item, events, effects)
                    changed.append(item)
            if changed:
                await tx.update_items(changed)
        if lane.state != LaneState.ACTIVE:
            return
        if lane.template == Template.CUSTOM:
            if sum(counts.values()) == counts.get(ItemState.SUCCEEDED, 0):
                await self._close_lane(tx, lane, LaneState.DONE, "", events, effects)
            return
        # A STANDARD lane holds a handful of items, and its workflow moves one stage at a time
        # (a batch hands its items over one by one, each written just before).
        for item in done:
            if lane.state != LaneState.ACTIVE:
                return
            await self._workflow_after_success(tx, coordinator, lane, item, events, effects)

    async def _workflow_after_success(
        self,
        tx: Tx,
        coordinator: Coordinator,
        lane: Lane,
        done: Item,
        events: list[NewEvent],
        effects: Effects,
    ) -> None:
        """The STANDARD workflow's next step after ``done`` succeeded (it reads the items)."""
        items = await tx.lane_items([lane.lane_id])
        policy = workflow.review_policy_for(lane, coordinator.config.review_policy)
        steps = workflow.after_success(lane, items, done, lane.worker_classes, policy)
        events.extend(steps.events)
        if steps.fail_round:
            lane.fail_rounds += 1
            lane.update_time = tx.now
            await tx.update_lane(lane)
        if steps.new_items:
            others = [i for i in items if i.item_id != done.item_id] + [done]
            await self._new_items(
                tx, coordinator, lane, steps.new_items, events, effects, existing=others
            )
        if steps.lane_state is not None:
            if steps.receipt is not None:
                lane.receipt = steps.receipt
            await self._close_lane(tx, lane, steps.lane_state, steps.close_reason, events, effects)

    async def _after_cancel(
        self, tx: Tx, lane: Lane, cancelled: Item, events: list[NewEvent], effects: Effects
    ) -> None:
        """A cancelled item can never satisfy its dependents, so they are cancelled too; a
        lane with nothing left to run finishes instead of staying ACTIVE with nothing to do."""
        if lane.template == Template.STANDARD:
            # The workflow cannot continue past a cancelled stage: like a denial, the lane
            # closes out for a human.
            reason = f"{cancelled.kind.value.lower()} cancelled"
            await self._close_lane(tx, lane, LaneState.CLOSED_OUT, reason, events, effects)
            return
        items = await tx.lane_items([lane.lane_id])
        dead_keys = {i.key for i in items if i.state == ItemState.CANCELLED}
        dependents: list[Item] = []
        changed = True
        while changed:
            changed = False
            for item in items:
                if (
                    item.state == ItemState.WAITING
                    and item not in dependents
                    and dead_keys & set(item.depends_on)
                ):
                    dependents.append(item)
                    dead_keys.add(item.key)
                    changed = True
        if dependents:
            await self._cancel_items(
                tx, dependents, events, effects, f"depends on cancelled {cancelled.key}"
            )
        finals = {ItemState.SUCCEEDED, ItemState.CANCELLED}
        if all(i.state in finals or i in dependents for i in items):
            if any(i.state == ItemState.SUCCEEDED for i in items):
                await self._close_lane(tx, lane, LaneState.DONE, "", events, effects)
            else:
                lane.state = LaneState.CANCELLED
                lane.close_reason = "every item was cancelled"
                lane.update_time = tx.now
                await tx.update_lane(lane)
                events.append(NewEvent(EventType.LANE_CANCELLED, lane_id=lane.lane_id))

    async def _close_lane(
        self,
        tx: Tx,
        lane: Lane,
        state: LaneState,
        reason: str,
        events: list[NewEvent],
        effects: Effects,
    ) -> None:
        """Finish a lane: LIVE (and close its tickets), DONE, or CLOSED_OUT for a human."""
        lane.state = state
        lane.close_reason = reason
        lane.update_time = tx.now
        await tx.update_lane(lane)
        if state == LaneState.LIVE:
            events.append(NewEvent(EventType.LANE_LIVE, lane_id=lane.lane_id))
            await self._open_ticket_closures(tx, lane, effects)
        elif state == LaneState.DONE:
            events.append(NewEvent(EventType.LANE_DONE, lane_id=lane.lane_id))
        elif state == LaneState.CLOSED_OUT:
            # Closed out is terminal: what was still open in the lane stops with it.
            await self._cancel_items(
                tx,
                await tx.lane_items([lane.lane_id]),
                events,
                effects,
                f"lane closed out: {reason}",
            )
            events.append(
                NewEvent(EventType.LANE_CLOSED_OUT, lane_id=lane.lane_id, data={"reason": reason})
            )
            effects.note(DigestKind.CLOSED_OUT, lane.lane_id, reason=reason)

    async def _policy_for(
        self, reader: Reader, coordinator: Coordinator, item: Item
    ) -> RetryPolicy:
        lane = await reader.get_lane(item.lane_id)
        lane_policy = lane.retry_policy if lane else RetryPolicy()
        return rules.effective_retry_policy(
            item.retry_policy, lane_policy, coordinator.config.retry_policy
        )

    def _retry_or_dead_letter(
        self,
        tx: Tx,
        item: Item,
        policy: RetryPolicy,
        retryable: bool,
        events: list[NewEvent],
        effects: Effects,
    ) -> None:
        item.current_lease_id = ""
        item.update_time = tx.now
        if not retryable:
            self._dead_letter(item, DeadLetterReason.NON_RETRYABLE, events, effects)
        elif item.sensitive:
            self._dead_letter(item, DeadLetterReason.POLICY, events, effects)
        elif not rules.attempts_remaining(policy, item):
            self._dead_letter(item, DeadLetterReason.EXHAUSTED, events, effects)
        else:
            delay = rules.retry_delay(policy, item.attempt_count, self.core.uniform)
            not_before = tx.now + timedelta(seconds=delay)
            self._queue(
                tx,
                item,
                events,
                effects,
                not_before,
                EventType.RETRY_SCHEDULED,
                {"attempts": item.attempt_count, "delaySeconds": round(delay, 3)},
            )

    def _dead_letter(
        self, item: Item, reason: DeadLetterReason, events: list[NewEvent], effects: Effects
    ) -> None:
        item.state = ItemState.DEAD
        item.dead_letter_reason = reason
        events.append(
            NewEvent.for_item(
                EventType.ITEM_DEAD_LETTERED,
                item,
                data={"reason": reason.value, "attempts": item.attempt_count},
            )
        )
        effects.note(DigestKind.DEAD_LETTERED, item.lane_id, item.item_id, reason.value)

    async def _open_ticket_closures(self, tx: Tx, lane: Lane, effects: Effects) -> None:
        """Record the intent to close each linked ticket, durably, in the LIVE transaction.

        The tracker is called only after commit (never inside a transaction); a crash in
        between leaves an OPEN action that recovery passes pick up, so nothing is lost.
        """
        coordinator = tx.coordinator
        assert coordinator is not None
        tickets = await tx.lane_tickets([lane.lane_id])
        actions = [
            PendingAction(
                action_id=new_id("pa"),
                coordinator_id=lane.coordinator_id,
                lane_id=lane.lane_id,
                kind=CLOSE_TICKET,
                state=PendingActionState.OPEN,
                owner=coordinator.config.digest_owner,
                create_time=tx.now,
                update_time=tx.now,
                ticket_tracker=ticket.tracker,
                ticket_key=ticket.key,
                next_attempt_time=tx.now,
            )
            for ticket in tickets
            if ticket.state != TICKET_CLOSED
        ]
        if actions:
            await tx.insert_pending_actions(actions)
            effects.close_tickets = True
