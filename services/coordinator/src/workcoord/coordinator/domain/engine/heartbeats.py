"""Heartbeats, in rounds: the Heartbeat and BatchHeartbeat calls in flight in this process
share one round of statements, whatever work coordinators they name
(``engine.attempts.heartbeats``).

A heartbeat appends no event and moves no revision, so it takes no coordinator's lock; what it
extends is guarded by each attempt's row (docs/architecture.md, "Lock order"). A fleet
heartbeats hundreds of leases a second, most of them in calls of one lease each: a transaction
per call spent most of the coordinator's time on round trips. Instead, while fewer than
:data:`MAX_ROUNDS_IN_FLIGHT` rounds run, a round starts on the next turn of the event loop with
every call queued by then, in ``store.extend()``: on PostgreSQL statements that each commit
alone (no ``BEGIN``/``COMMIT``). It reads their work coordinators (each once) and all their
attempts in one statement (``Tx.coordinators_and_attempts``), extends them in memory, and
``Tx.extend_attempts`` writes, in one statement, the attempts still as read and free (a
compare-and-set that never waits for an attempt) with the roll-ups of those only. Elsewhere
``extend()`` is a write transaction and all are written. A lone heartbeat runs at once, in a
round of its own; under load the rounds grow with the calls that arrive while others run.

Each call is answered as it would be alone:

- a work coordinator unknown or hidden (NOT_FOUND), not the caller's to lease in
  (PERMISSION_DENIED) or switched off (COORDINATION_DISABLED) refuses that call only;
- the round answers the extensions it wrote; every other entry (its row changed or held
  since the read, its lease lost, its usage report refused) is heartbeated after the round
  as a single heartbeat that waits for that one row (``_then_held_ones``), in the caller's
  task, so each refusal is decided on the row held;
- a call to a work coordinator under a budget leaves the round for its own transaction under
  the coordinator's lock (its spend is counted and may stop the attempt), as does every later
  call to it while a budget is in force;
- a failure of the round's statements (the database away) is every call's error.

A call whose caller the gate took from its cache without reading the credentials epoch comes
with a :class:`Confirmation`: the round reads the epoch once (before any write) and admits
such a call only if the cache holds the same principal at that epoch; else the caller is
resolved again from its credential (a revoked key: UNAUTHENTICATED) and the call joins the
next round as that principal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from workcoord.kit.errors import WorkcoordError

from .. import rules, stops, usage
from ..auth import Access, Principal
from ..budgets import SpentBudget
from ..inputs import BatchInput, HeartbeatInput
from ..model import Attempt, Coordinator, Item, NewEvent, UsageTotal
from ..ports import Tx
from ..results import EntryResult, HeartbeatAnswer
from . import budgeting
from ._base import EngineCore

__all__ = ["MAX_ROUNDS_IN_FLIGHT", "MAX_ROUND_ENTRIES", "Heartbeats"]

MAX_ROUNDS_IN_FLIGHT = 2
"""Rounds running at once: a second lets calls go on while one round waits on the database."""
MAX_ROUND_ENTRIES = 1000
"""A round stops taking calls at this many entries (a call is never split)."""

Answered = list[EntryResult[HeartbeatAnswer]]
Found = Mapping[str, tuple[Attempt | None, Item | None]]
Extended = list[tuple[Attempt, list[UsageTotal]]]
"""The attempts a round extended, each with the roll-up totals its usage adds."""


@dataclass(frozen=True)
class Confirmation:
    """How a call admitted with a cached caller, its epoch unread, is confirmed: ``cached`` is
    the caller as the principal cache holds it at a given epoch (None: not cached there),
    ``reauthenticate`` resolves it from its credential and current state."""

    cached: Callable[[int | None], Principal | None]
    reauthenticate: Callable[[], Awaitable[Principal]]


@dataclass(eq=False)
class _Call:
    principal: Principal
    batch: BatchInput[HeartbeatInput]
    confirmation: Confirmation | None
    answer: asyncio.Future[Answered] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Heartbeats:
    """Extending leases (:meth:`heartbeat`, :meth:`batch`): rounds of calls sharing one
    round of statements, or the coordinator's lock under a budget."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core
        # The work coordinators a heartbeat last found under a budget: their calls take the
        # coordinator's lock at once, not after a round that only learns they must (a call
        # that finds no budget any more drops its coordinator from here).
        self._budgeted: set[str] = set()
        self._waiting: list[_Call] = []
        self._in_flight = 0
        self._rounds: set[asyncio.Task[None]] = set()

    async def heartbeat(
        self,
        principal: Principal,
        input: HeartbeatInput,
        confirmation: Confirmation | None = None,
    ) -> HeartbeatAnswer:
        """One lease's heartbeat: its answer, or its entry's error raised."""
        batch = BatchInput(coordinator_id=input.coordinator_id, entries=(input,))
        [result] = await self.batch(principal, batch, confirmation)
        if result.error is not None:
            raise result.error
        assert result.value is not None
        return result.value

    async def batch(
        self,
        principal: Principal,
        input: BatchInput[HeartbeatInput],
        confirmation: Confirmation | None = None,
    ) -> list[EntryResult[HeartbeatAnswer]]:
        """Every entry's answer, in the entries' order (``confirmation``: the caller is still to
        be confirmed at the current credentials epoch)."""
        if confirmation is not None and input.coordinator_id in self._budgeted:
            principal, confirmation = await confirmation.reauthenticate(), None
        if input.coordinator_id in self._budgeted:
            return await self._under_budget(principal, input)
        call = _Call(principal, input, confirmation)
        self._waiting.append(call)
        self._start_if_free()
        answered = await call.answer
        if answered is _RECHECK:
            assert confirmation is not None
            return await self.batch(await confirmation.reauthenticate(), input)
        if answered is _UNDER_BUDGET:
            return await self._under_budget(principal, input)
        return await self._then_held_ones(principal, input, answered)

    # ------------------------------------------------------------------- rounds

    def _start_if_free(self) -> None:
        if self._waiting and self._in_flight < MAX_ROUNDS_IN_FLIGHT:
            self._in_flight += 1
            task = asyncio.get_running_loop().create_task(self._round())
            self._rounds.add(task)
            task.add_done_callback(self._rounds.discard)

    async def _round(self) -> None:
        try:
            await asyncio.sleep(0)  # the calls made on this turn of the loop join
            calls = self._take()
            if calls:
                await self._run(calls)
        finally:
            self._in_flight -= 1
            self._start_if_free()

    def _take(self) -> list[_Call]:
        """The waiting calls for one round: at most :data:`MAX_ROUND_ENTRIES` entries, each
        lease in one call only (a call naming a lease taken already waits for the next round:
        one round must not fence a lease twice), callers gone skipped."""
        taken: list[_Call] = []
        later: list[_Call] = []
        leases: set[str] = set()
        entries = 0
        for call in self._waiting:
            if call.answer.done():
                continue
            ids = {e.lease_id for e in call.batch.entries}
            if (taken and entries + len(ids) > MAX_ROUND_ENTRIES) or not ids.isdisjoint(leases):
                later.append(call)
                continue
            taken.append(call)
            leases |= ids
            entries += len(ids)
        self._waiting = later
        return taken

    async def _run(self, calls: list[_Call]) -> None:
        """One round: every call's coordinator checked, every lease fenced and extended, the
        extensions written (``extend_attempts``); then each call is answered with those."""
        answered: dict[_Call, Answered] = {}
        try:
            async with self.core.store.extend() as tx:
                cids = list(dict.fromkeys(c.batch.coordinator_id for c in calls))
                ids = [e.lease_id for c in calls for e in c.batch.entries]
                # Every call's leases: those of calls refused below are never answered from.
                coordinators, found = await tx.coordinators_and_attempts(cids, ids)
                epoch = None
                if any(c.confirmation is not None for c in calls):
                    epoch = tx.seen_credentials_epoch
                    if epoch is None:  # not read with a coordinator: none of theirs exists
                        epoch = await tx.credentials_epoch()
                running = [c for c in calls if _confirmed(c, epoch)]
                admitted = await self._admit(tx, running, coordinators)
                _locked_now(tx, self.core)
                extended: Extended = []
                for call, coordinator in admitted:
                    free = [e for e in call.batch.entries if e.lease_id in found]
                    answered[call] = extend_entries(tx, coordinator, free, found, extended)
                written = await tx.extend_attempts(extended) if extended else set()
        except BaseException as exc:
            for call in calls:
                if not call.answer.done():
                    call.answer.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for call, results in answered.items():
            if not call.answer.done():
                # The extensions written; every other entry is taken on its own (_alone).
                call.answer.set_result([r for r in results if r.lease_id in written])

    async def _admit(
        self, tx: Tx, calls: list[_Call], coordinators: Mapping[str, Coordinator | None]
    ) -> list[tuple[_Call, Coordinator]]:
        """The calls whose caller may heartbeat in their work coordinator (``coordinators``,
        read in the round) now, with it; each other call is answered here (its refusal, or sent
        under its budget's lock)."""
        admitted: list[tuple[_Call, Coordinator]] = []
        for call in calls:
            cid = call.batch.coordinator_id
            try:
                coordinator = await self.core.admit(
                    tx, call.principal, cid, coordinators[cid], Access.LEASE
                )
            except WorkcoordError as exc:
                if not call.answer.done():
                    call.answer.set_exception(exc)
                continue
            if budgeting.in_force(coordinator):
                self._budgeted.add(cid)
                if not call.answer.done():
                    call.answer.set_result(_UNDER_BUDGET)
                continue
            admitted.append((call, coordinator))
        return admitted

    # ------------------------------------------------------------ one at a time

    async def _then_held_ones(
        self,
        principal: Principal,
        input: BatchInput[HeartbeatInput],
        answered: Answered,
    ) -> Answered:
        """``answered`` (the entries whose rows were free), then each other entry as its own
        Heartbeat (one row waited for, none held), all in the entries' order. Those rows were
        held by a write on the same lease (or the lease is unknown): rare, and answered as the
        single call would be once that write is done."""
        by_lease = {result.lease_id: result for result in answered}
        for entry in input.entries:
            if entry.lease_id in by_lease:
                continue
            try:
                by_lease[entry.lease_id] = await self._alone(principal, entry)
            except WorkcoordError as exc:  # the work coordinator refused it meanwhile
                by_lease[entry.lease_id] = EntryResult(entry.lease_id, error=exc)
        return [by_lease[entry.lease_id] for entry in input.entries]

    async def _alone(
        self, principal: Principal, input: HeartbeatInput
    ) -> EntryResult[HeartbeatAnswer]:
        """One heartbeat in its own transaction, waiting for its attempt's row (holding no
        other), then for the roll-up rows: the lock order rules out a cycle."""
        if input.coordinator_id not in self._budgeted:
            async with self.core.store.write() as tx:
                coordinator = await self.core.coordinator_for(
                    tx, principal, input.coordinator_id, access=Access.LEASE
                )
                if not budgeting.in_force(coordinator):
                    found = {input.lease_id: await tx.attempt_with_item(input.lease_id)}
                    _locked_now(tx, self.core)
                    extended: Extended = []
                    [result] = extend_entries(tx, coordinator, [input], found, extended)
                    if extended:
                        await tx.extend_attempts(extended)
                    return result
        batch = BatchInput(coordinator_id=input.coordinator_id, entries=(input,))
        [result] = await self._under_budget(principal, batch)
        return result

    async def _under_budget(
        self, principal: Principal, input: BatchInput[HeartbeatInput]
    ) -> Answered:
        """Under a budget: under the coordinator's lock (as every claim reads the totals),
        before the attempts' row locks, the spend is counted, and a spent budget stops the
        attempt (its budget events appended)."""
        async with self._budgeted_write(principal, input.coordinator_id) as (tx, coordinator):
            found = await tx.attempts_with_items([e.lease_id for e in input.entries])
            lanes = [a.lane_id for a, _ in found.values() if a is not None]
            book = await budgeting.read_book(tx, coordinator, lanes, tx.now)
            extended: Extended = []
            events: list[NewEvent] = []
            results = extend_entries(tx, coordinator, input.entries, found, extended, book, events)
            if extended:
                await tx.update_attempts([attempt for attempt, _ in extended])
                await budgeting.open_actions(tx, coordinator, events)
                await self.core.append_events(tx, coordinator, events, principal.name)
                await tx.add_usage([total for _, totals in extended for total in totals])
            return results

    @asynccontextmanager
    async def _budgeted_write(
        self, principal: Principal, coordinator_id: str
    ) -> AsyncIterator[tuple[Tx, Coordinator]]:
        """A heartbeat's transaction under the coordinator's lock (a budget may cover its work);
        notes whether one still does, for the next call (``_budgeted``)."""
        async with self.core.command(principal, coordinator_id, Access.LEASE) as (
            tx,
            coordinator,
            _,
        ):
            if budgeting.in_force(coordinator):
                self._budgeted.add(coordinator_id)
            else:
                self._budgeted.discard(coordinator_id)
            yield tx, coordinator


_UNDER_BUDGET: Answered = []
"""A round's answer to a call it sends under its budget's lock (compared by identity)."""
_RECHECK: Answered = []
"""A round's answer to a call whose cached caller it could not confirm (by identity)."""


def _confirmed(call: _Call, epoch: int | None) -> bool:
    """Whether ``call`` may run in the round: its caller needs no confirmation, or the cache
    holds the same principal at ``epoch`` (read in the round). Otherwise it is answered
    :data:`_RECHECK`, and its caller is resolved again."""
    if call.confirmation is None or call.confirmation.cached(epoch) == call.principal:
        return True
    if not call.answer.done():
        call.answer.set_result(_RECHECK)
    return False


def _locked_now(tx: Tx, core: EngineCore) -> None:
    """The time is the attempt lock holder's: a heartbeat that waited for an attempt's row
    fences and extends it at the time it got it, not when it began."""
    tx.now = core.clock.now()


def extend_entries(
    tx: Tx,
    coordinator: Coordinator,
    entries: Sequence[HeartbeatInput],
    found: Found,
    extended: Extended,
    book: budgeting.BudgetBook | None = None,
    events: list[NewEvent] | None = None,
) -> Answered:
    """Fence and extend each entry's lease in memory (``found``: its attempt and item); each
    attempt changed goes to ``extended`` with the roll-up totals its usage adds. With ``book``
    (the budgets covering them), the spend is counted in it, the budget events it raises go to
    ``events``, and a spent budget stops the attempt."""
    results: Answered = []
    for entry in entries:
        try:
            pair = found.get(entry.lease_id, (None, None))
            cid, token = coordinator.coordinator_id, entry.lease_token
            attempt, item = rules.fenced(pair, cid, token, tx.now)
            totals = usage.rollups(attempt, usage.record(attempt, entry.usage), tx.now)
        except WorkcoordError as exc:
            results.append(EntryResult(entry.lease_id, error=exc))
            continue
        budget: SpentBudget | None = None
        if book is not None:
            raised = book.add(totals)
            if events is not None:
                events.extend(raised)
            budget = book.spent_for(attempt.lane_id)
        stop = stops.stop_for(attempt, item, coordinator.config, tx.now, budget)
        attempt.lease_expire_time = stops.next_expiry(attempt, stop, tx.now)
        if entry.progress:
            attempt.progress = entry.progress
        extended.append((attempt, totals))
        results.append(
            EntryResult(entry.lease_id, HeartbeatAnswer(attempt.lease_expire_time, stop))
        )
    return results
