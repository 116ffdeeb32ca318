"""Follow-up work: pending actions (ticket closures), digests and ticket sync."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
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
    UsageScope,
)
from ..ports import Tx
from ..results import Digest, MaintenanceReport, Page, PendingActionsRun, StepFailure
from ..sealing import UnsealError
from ..tickets import TicketTracker, TrackerError, TrackerRateLimited
from ._base import EngineCore, EngineService
from .paging import PageRequest
from .tracker_connections import TrackerConnections, TrackerResolver, resolver
from .transitions import CLOSE_TICKET, TICKET_CLOSED

_log = logging.getLogger("workcoord.coordinator.engine")

TICKET_SYNC_BATCH = 50
CLOSE_TICKETS, SYNC_TICKETS = MAINTENANCE_STEPS
# Ticket closures are retried patiently: trackers have outages measured in minutes to hours.
PENDING_ACTION_RETRY = RetryPolicy(
    initial_interval=30.0, backoff_coefficient=2.0, maximum_interval=3600.0, maximum_attempts=None
)


#: How many of the day's costliest lanes the digest names.
DIGEST_TOP_LANES = 5


class FollowUpService(EngineService):
    """Pending actions, digests and tickets (``engine.follow_ups``)."""

    def __init__(self, core: EngineCore, connections: TrackerConnections) -> None:
        super().__init__(core)
        self.connections = connections

    async def run_pending_actions(
        self, principal: Principal, coordinator_id: str
    ) -> PendingActionsRun:
        """Try every due pending action once, each through its ticket's tracker connection
        (or the installation-wide tracker); a connection that asked to wait is not called
        again in the same pass."""
        async with self.core.store.read() as reader:
            due = await reader.due_pending_actions(coordinator_id, self.core.clock.now(), 100)
            # Only ticket closures are retried here (a DEAD webhook delivery's action waits
            # for a human: redeliver or resolve).
            due = [action for action in due if action.kind == CLOSE_TICKET]
            resolve = await resolver(self.connections, reader, coordinator_id) if due else None
        trackers = await resolve() if resolve is not None else None
        attempted = succeeded = failed = 0
        last_error = ""
        waits: dict[str, float] = {}
        try:
            for action in due:
                assert trackers is not None
                outcome = await _call(
                    trackers,
                    self.core.trackers,
                    action.ticket_tracker,
                    action.ticket_key,
                    waits,
                    lambda adapter, key: adapter.close(key),
                )
                attempted += 1
                if outcome.error:
                    failed, last_error = failed + 1, outcome.error
                if await self._record_action(principal, coordinator_id, action, outcome):
                    succeeded += 1
        finally:
            if trackers is not None:
                await trackers.aclose()
        return PendingActionsRun(attempted, succeeded, failed, last_error)

    async def _record_action(
        self, principal: Principal, coordinator_id: str, tried: PendingAction, outcome: CallOutcome
    ) -> bool:
        error = outcome.error
        async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            effects,
        ):
            await record_health(tx, [outcome])
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
                # A tracker that asked to wait is not asked again sooner than it said.
                delay = max(delay, outcome.retry_after or 0.0)
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
            spent = await reader.usage_totals(coordinator_id, UsageScope.COORDINATOR, day, [""])
            lanes = await reader.usage_totals(coordinator_id, UsageScope.LANE, day)
            owner = coordinator.config.digest_owner
            user = await reader.find_user_by_email(owner.lower()) if owner else None
        return Digest(
            coordinator_id,
            day,
            owner,
            entries,
            usage=spent[0] if spent else None,
            top_lanes=lanes[:DIGEST_TOP_LANES],
            owner_display_name=user.display_name if user is not None else "",
        )

    async def sync_tickets(
        self, principal: Principal, coordinator_id: str, report: MaintenanceReport
    ) -> None:
        """Read linked tickets' real state from their trackers (each through its connection,
        several per call where the tracker allows), with the time it was seen."""
        async with self.core.store.read() as reader:
            tickets = await reader.tickets_to_sync(coordinator_id, TICKET_SYNC_BATCH)
            resolve = await resolver(self.connections, reader, coordinator_id) if tickets else None
        trackers = await resolve() if resolve is not None else None
        groups: dict[tuple[str, str], list[Ticket]] = {}
        for ticket in tickets:
            assert trackers is not None
            connection = trackers.connection_for(ticket.tracker, ticket.key)
            scope = connection.tracker_id if connection else ""
            groups.setdefault((scope, ticket.tracker), []).append(ticket)
        observed: list[tuple[Ticket, str]] = []
        outcomes: list[CallOutcome] = []
        failed = 0
        error = ""
        waits: dict[str, float] = {}
        try:
            for (_scope, tracker_name), group in groups.items():
                assert trackers is not None
                states: dict[str, str] = {}
                outcome = await _call(
                    trackers,
                    self.core.trackers,
                    tracker_name,
                    group[0].key,
                    waits,
                    functools.partial(_read_states, states, [t.key for t in group]),
                )
                outcomes.append(outcome)
                for ticket in group:
                    state = states.get(ticket.key)
                    if state is not None:
                        observed.append((ticket, state))
                        continue
                    failed += 1
                    error = outcome.error or f"{ticket.tracker} does not know {ticket.key}"
                    _log.info("ticket %s %s not synced: %s", ticket.tracker, ticket.key, error)
        finally:
            if trackers is not None:
                await trackers.aclose()
        if failed:
            report.step_failures.append(StepFailure(SYNC_TICKETS, failed, error))
        if not observed and not any(o.connection_id for o in outcomes):
            return
        async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            _effects,
        ):
            await record_health(tx, outcomes)
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


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What one call to a tracker came to: its error ('' when it went through), the wait the
    tracker asked for, and the connection it went through ('' for the installation's)."""

    error: str = ""
    retry_after: float | None = None
    connection_id: str = ""


async def _call(
    trackers: TrackerResolver,
    fallback: Mapping[str, TicketTracker],
    tracker: str,
    key: str,
    waits: dict[str, float],
    call: Callable[[TicketTracker, str], Awaitable[None]],
) -> CallOutcome:
    """``call`` the adapter that serves ``key`` of ``tracker``; an error of a connection names
    it (by id, tracker and fingerprint: never the credential)."""
    connection = trackers.connection_for(tracker, key)
    connection_id = connection.tracker_id if connection else ""
    scope = connection_id or f"installation:{tracker}"
    prefix = f"{connection.label}: " if connection else ""
    if scope in waits:
        wait = waits[scope]
        return CallOutcome(f"{prefix}{tracker} asked to wait {wait:.0f}s", wait, connection_id)
    try:
        adapter = trackers.adapter(connection) if connection else fallback.get(tracker)
        if adapter is None:
            return CallOutcome(_no_tracker(tracker))
        await call(adapter, key)
    except TrackerRateLimited as exc:
        waits[scope] = exc.retry_after
        return CallOutcome(f"{prefix}{exc}", exc.retry_after, connection_id)
    except (TrackerError, UnsealError) as exc:
        return CallOutcome(f"{prefix}{str(exc) or type(exc).__name__}", None, connection_id)
    return CallOutcome("", None, connection_id)


async def _read_states(
    into: dict[str, str], keys: Sequence[str], adapter: TicketTracker, _key: str
) -> None:
    into.update(await adapter.get_states(keys))


async def record_health(tx: Tx, outcomes: Sequence[CallOutcome]) -> None:
    """Write each connection's last success or last error (the last outcome of each wins)."""
    last: dict[str, CallOutcome] = {}
    for outcome in outcomes:
        if outcome.connection_id:
            last[outcome.connection_id] = outcome
    for connection_id, outcome in last.items():
        connection = await tx.get_tracker_connection(connection_id)
        if connection is None:
            continue  # deleted meanwhile
        if outcome.error:
            connection.last_error, connection.last_error_time = outcome.error[:1000], tx.now
        else:
            connection.last_success_time = tx.now
        await tx.update_tracker_connection(connection)


def _no_tracker(tracker: str) -> str:
    return f"no tracker is configured for {tracker!r}"
