"""Follow-up work: pending actions (ticket closures), digests and ticket sync."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from workcoord.kit.errors import InvalidArgument, NotFound, PermissionDenied
from workcoord.kit.wire import MAINTENANCE_STEPS

from .. import rules
from ..auth import Access, Principal
from ..inputs import ListPendingActionsInput, ResolvePendingActionInput
from ..model import (
    DigestEntry,
    DigestKind,
    EventType,
    NewEvent,
    PendingAction,
    PendingActionState,
    RetryPolicy,
    Ticket,
)
from ..results import Digest, MaintenanceReport, Page, PendingActionsRun, StepFailure
from ..tickets import TrackerError
from ._base import EngineService
from .paging import PageRequest
from .transitions import TICKET_CLOSED

_log = logging.getLogger("workcoord.coordinator.engine")

TICKET_SYNC_BATCH = 50
CLOSE_TICKETS, SYNC_TICKETS = MAINTENANCE_STEPS
# Ticket closures are retried patiently: trackers have outages measured in minutes to hours.
PENDING_ACTION_RETRY = RetryPolicy(
    initial_interval=30.0, backoff_coefficient=2.0, maximum_interval=3600.0, maximum_attempts=None
)


class FollowUpService(EngineService):
    """Pending actions, digests and tickets (``engine.follow_ups``)."""

    async def run_pending_actions(
        self, principal: Principal, coordinator_id: str
    ) -> PendingActionsRun:
        """Try every due pending action once."""
        async with self.core.store.read() as reader:
            due = await reader.due_pending_actions(coordinator_id, self.core.clock.now(), 100)
        attempted = succeeded = failed = 0
        last_error = ""
        for action in due:
            tracker = self.core.trackers.get(action.ticket_tracker)
            error = ""
            if tracker is None:
                error = _no_tracker(action.ticket_tracker)
            else:
                try:
                    await tracker.close(action.ticket_key)
                except TrackerError as exc:
                    error = str(exc) or type(exc).__name__
            attempted += 1
            if error:
                failed, last_error = failed + 1, error
            if await self._record_action(principal, coordinator_id, action, error):
                succeeded += 1
        return PendingActionsRun(attempted, succeeded, failed, last_error)

    async def _record_action(
        self, principal: Principal, coordinator_id: str, tried: PendingAction, error: str
    ) -> bool:
        async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            effects,
        ):
            action = await tx.get_pending_action(tried.action_id)
            if action is None or action.state != PendingActionState.OPEN:
                return False  # resolved meanwhile (by a human or another replica)
            action.attempts += 1
            action.update_time = tx.now
            events: list[NewEvent] = []
            ref = {
                "actionId": action.action_id,
                "tracker": action.ticket_tracker,
                "key": action.ticket_key,
            }
            if not error:
                action.state = PendingActionState.SUCCEEDED
                action.next_attempt_time = None
                ticket = Ticket(
                    lane_id=action.lane_id,
                    tracker=action.ticket_tracker,
                    key=action.ticket_key,
                    state=TICKET_CLOSED,
                    observe_time=tx.now,
                )
                await tx.update_ticket(coordinator_id, ticket)
                events.append(NewEvent(EventType.TICKET_CLOSED, lane_id=action.lane_id, data=ref))
                if action.attempts > 1:
                    events.append(
                        NewEvent(
                            EventType.PENDING_ACTION_RESOLVED, lane_id=action.lane_id, data=ref
                        )
                    )
            else:
                action.last_error = error[:1000]
                delay = rules.retry_delay(PENDING_ACTION_RETRY, action.attempts, self.core.uniform)
                action.next_attempt_time = tx.now + timedelta(seconds=delay)
                if action.attempts == 1:
                    events.append(
                        NewEvent(EventType.PENDING_ACTION_OPENED, lane_id=action.lane_id, data=ref)
                    )
                    effects.note(
                        DigestKind.CLOSE_OUT_ACTION_FAILED,
                        action.lane_id,
                        reason=action.last_error,
                        action_id=action.action_id,
                    )
                else:
                    events.append(
                        NewEvent(
                            EventType.PENDING_ACTION_RETRIED,
                            lane_id=action.lane_id,
                            data={**ref, "attempts": action.attempts},
                        )
                    )
            await tx.update_pending_action(action)
            await self.core.append_events(tx, coordinator, events, principal.name)
            return not error

    async def list_pending_actions(
        self, principal: Principal, input: ListPendingActionsInput
    ) -> Page[PendingAction]:
        """A page of the coordinator's pending actions (of one state, if named)."""
        coordinator_id, state = input.coordinator_id, input.state
        scope = ("ListPendingActions", coordinator_id, state.value if state is not None else "")
        request = PageRequest.parse(input.page_size, input.page_token, scope)
        async with self.core.store.read() as reader:
            await self.core.coordinator_for(reader, principal, coordinator_id)
            actions = await reader.list_pending_actions(
                coordinator_id, state, request.after_id, request.fetch
            )
        return request.page(actions, lambda a: [a.action_id])

    async def resolve_pending_action(
        self, principal: Principal, input: ResolvePendingActionInput
    ) -> PendingAction:
        """A human resolves an open pending action by hand (resolving again is a no-op)."""
        coordinator_id, action_id = input.coordinator_id, input.action_id
        resolution = input.resolution
        async with self.core.command(principal, coordinator_id, Access.DECIDE) as (
            tx,
            coordinator,
            _effects,
        ):
            if not principal.is_human:
                raise PermissionDenied("only a human resolves a pending action")
            action = await tx.get_pending_action(action_id)
            if action is None or action.coordinator_id != coordinator_id:
                raise NotFound(f"pending action {action_id} not found")
            if action.state != PendingActionState.OPEN:
                return action  # already done: resolving again is a no-op
            action.state = PendingActionState.RESOLVED
            action.resolution = resolution
            action.next_attempt_time = None
            action.update_time = tx.now
            await tx.update_pending_action(action)
            await self.core.append_events(
                tx,
                coordinator,
                [
                    NewEvent(
                        EventType.PENDING_ACTION_RESOLVED,
                        lane_id=action.lane_id,
                        data={"actionId": action_id, "byHuman": True},
                    )
                ],
                principal.name,
            )
            return action

    async def get_digest(self, principal: Principal, coordinator_id: str, day: str) -> Digest:
        """One UTC day's digest: its owner and entries (open pending actions included today)."""
        try:
            date = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).date()
        except ValueError as exc:
            raise InvalidArgument.single("day", "must be a date, YYYY-MM-DD") from exc
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, coordinator_id)
            entries = await reader.digest_entries(coordinator_id, day)
            if date == self.core.clock.now().date():
                for action in await reader.list_pending_actions(
                    coordinator_id, PendingActionState.OPEN, "", 1000
                ):
                    if action.attempts == 0:
                        continue  # not failed yet: its first try is still under way
                    entries.append(
                        DigestEntry(
                            entry_id=action.action_id,
                            coordinator_id=coordinator_id,
                            day=day,
                            owner=action.owner,
                            kind=DigestKind.PENDING_ACTION,
                            time=action.update_time,
                            lane_id=action.lane_id,
                            action_id=action.action_id,
                            reason=action.last_error,
                        )
                    )
            owner = coordinator.config.digest_owner
            user = await reader.find_user_by_email(owner.lower()) if owner else None
        return Digest(
            coordinator_id, day, owner, entries, user.display_name if user is not None else ""
        )

    async def sync_tickets(
        self, principal: Principal, coordinator_id: str, report: MaintenanceReport
    ) -> None:
        """Read linked tickets' real state from their trackers, with the time it was seen."""
        async with self.core.store.read() as reader:
            tickets = await reader.tickets_to_sync(coordinator_id, TICKET_SYNC_BATCH)
        observed: list[tuple[Ticket, str]] = []
        failed = 0
        error = ""
        for ticket in tickets:
            tracker = self.core.trackers.get(ticket.tracker)
            try:
                if tracker is None:
                    raise TrackerError(_no_tracker(ticket.tracker))
                observed.append((ticket, await tracker.get_state(ticket.key)))
            except TrackerError as exc:
                failed, error = failed + 1, str(exc) or type(exc).__name__
                _log.info("ticket %s %s not synced: %s", ticket.tracker, ticket.key, error)
        if failed:
            report.step_failures.append(StepFailure(SYNC_TICKETS, failed, error))
        if not observed:
            return
        async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            _effects,
        ):
            events: list[NewEvent] = []
            for ticket, state in observed:
                if state != ticket.state:
                    events.append(
                        NewEvent(
                            EventType.TICKET_SYNCED,
                            lane_id=ticket.lane_id,
                            data={"tracker": ticket.tracker, "key": ticket.key, "state": state},
                        )
                    )
                ticket.state = state
                ticket.observe_time = tx.now
                await tx.update_ticket(coordinator_id, ticket)
            await self.core.append_events(tx, coordinator, events, principal.name)
        report.tickets_synced += len(observed)


def _no_tracker(tracker: str) -> str:
    return f"no tracker is configured for {tracker!r}"
