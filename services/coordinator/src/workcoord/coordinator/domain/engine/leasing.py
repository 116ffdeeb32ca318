"""Leasing: the long-poll and the claim of ready items (workers register in :mod:`.workers`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from workcoord.kit.bus import ReadySignal
from workcoord.kit.errors import InvalidArgument, NotFound, PermissionDenied

from .. import rules, stops
from ..auth import Access, Principal, authorize
from ..inputs import LeaseInput
from ..leasability import Asker, LaneHold, Surroundings, holding_gates
from ..model import (
    Attempt,
    AttemptStatus,
    Coordinator,
    EventType,
    Item,
    ItemState,
    Lane,
    NewEvent,
    Worker,
)
from ..ports import ClaimCursor, ClaimScan, ClassLoads, Tx, WriteLock
from ..results import GrantedLease
from ..specs import Checkpoint, LeaseAsk
from . import budgeting
from ._base import Effects, EngineCore, EngineService, new_id
from .fences import FenceFound, FenceService, fence_error
from .lease_replay import LeaseSecret, lease_request_key, new_lease_secret, replay_lease_request
from .workers import check_pool, check_worker_class

# Long-polls re-check the database at least this often, so a lost notification (Redis down,
# a backoff that ran out) costs at most this much latency.
BACKSTOP_POLL_SECONDS = 1.0


# A Lease of at least this many items claims beside the groups of worker writes and takes the
# coordinator's row only at its flush (WriteLock.LARGE_CLAIM): choosing and building a hundred
# leases takes tens of milliseconds, which every group's flush would otherwise wait out. A
# smaller one takes the row at once (WriteLock.CLAIM): it is over in a few milliseconds, and
# the late lock's round trip would lengthen the wake-up of a waiting worker (B2).
LARGE_CLAIM_ITEMS = 10


def claim_page_size(wanted: int) -> int:
    """Candidates a claim reads (and locks) per page: what it wants and a quarter more, at
    least 32; items a gate skips are made up from the next page."""
    return max(wanted + wanted // 4, 32)


Reauthenticate = Callable[[], Awaitable[Principal]]
"""Resolves the caller of a call again, from the credential it presented and current state."""
CachedCaller = Callable[[int | None], Principal | None]
"""The caller as the principal cache has it at a credentials epoch (None: not cached)."""
CallerCheck = Callable[[int | None], bool]
"""Whether the caller is unchanged at the credentials epoch read with the coordinator's lock."""


class _CallerNotCached(Exception):
    """A woken claim could not confirm its caller from the cache: it re-authenticates first."""


@dataclass(frozen=True, slots=True)
class _MayClaim:
    """A look found something a claim may grant (the claim reads the worker again, locked)."""


class LeasingService(EngineService):
    """The Lease command (``engine.leasing``)."""

    def __init__(self, core: EngineCore, fences: FenceService) -> None:
        super().__init__(core)
        self.fences = fences
        # One claim per (work coordinator, classes asked) at a time in this process (see
        # _lease_once).
        self._claim_locks: dict[tuple[str, tuple[str, ...]], asyncio.Lock] = {}
        # Per (coordinator, classes): the ready-signal generation whose first waiter claimed.
        self._woken_claims: dict[tuple[str, tuple[str, ...]], int] = {}
        # (coordinator, classes) whose last claim here granted all it was asked for: the next
        # claim skips the look-first read until one grants less (_lease_once_unlocked).
        self._plenty: set[tuple[str, tuple[str, ...]]] = set()

    async def lease(
        self,
        principal: Principal,
        input: LeaseInput,
        *,
        reauthenticate: Reauthenticate | None = None,
        cached_caller: CachedCaller | None = None,
    ) -> list[GrantedLease]:
        """Lease up to ``ask.max_items`` ready items; long-poll up to ``ask.wait_seconds``.

        ``principal`` was resolved when the call began. A wait can outlast it (a key revoked, a
        member removed meanwhile), so after every wait ``reauthenticate`` resolves the caller
        again and the look that follows, and any claim it makes, runs as that caller: a
        credential gone is UNAUTHENTICATED, a lost role or scope PERMISSION_DENIED, and
        nothing is leased. Without it (callers that hold no credential) nothing is re-checked.
        With ``cached_caller`` too, the first waiter a commit wakes checks its caller inside
        the claim's transaction instead (the credentials epoch comes with the coordinator's
        lock; the caller is unchanged while the cache holds the same principal at that epoch),
        so the wake-up costs no read of its own; otherwise it re-authenticates as above.
        """
        coordinator_id, ask = input.coordinator_id, input.ask
        if ask.run_identity is not None:
            rules.check_run_identity(ask.run_identity, "run_identity", self.core.clock.now())
        granted = await self._lease_once(principal, coordinator_id, ask)
        if granted or ask.wait_seconds <= 0:
            return granted
        # The long-poll is bounded in real time (it is about the call, not domain time).
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ask.wait_seconds
        key = (coordinator_id, ask.classes)
        async with self.core.bus.ready_signal(coordinator_id, *ask.classes) as ready:
            # Look again after listening: work committed in between.
            claim_at_once = False
            check: CallerCheck | None = None
            while True:
                if not claim_at_once:
                    granted = await self._lease_once(principal, coordinator_id, ask)
                else:
                    try:
                        granted = await self._claim_when_woken(
                            principal, coordinator_id, ask, check
                        )
                    except _CallerNotCached:
                        assert reauthenticate is not None
                        principal = await self._caller_after_wait(
                            reauthenticate, principal, coordinator_id
                        )
                        granted = await self._lease_once(principal, coordinator_id, ask)
                remaining = deadline - loop.time()
                if granted or remaining <= 0:
                    return granted
                woken = await self._wait_for_work(ready, coordinator_id, ask.classes, deadline)
                # Of the waiters in this process that one commit woke, the first claims at once;
                # the others look first, as usual.
                first = woken and self._woken_claims.get(key) != ready.generation
                if first:
                    self._woken_claims[key] = ready.generation
                if first and (reauthenticate is None or cached_caller is not None):
                    check = _same_caller(cached_caller, principal) if reauthenticate else None
                    claim_at_once = True
                    continue
                if reauthenticate is not None:
                    principal = await self._caller_after_wait(
                        reauthenticate, principal, coordinator_id
                    )
                claim_at_once = False

    async def _caller_after_wait(
        self, reauthenticate: Reauthenticate, before: Principal, coordinator_id: str
    ) -> Principal:
        """The caller as current state has it, if it may still lease here.

        Cheap while nothing changed: the principal cache answers for an unmoved credentials
        epoch, and an unchanged principal needs no new authorization. The caller was allowed
        to lease here when the call began, so it already knows the work coordinator exists: a
        lost role or scope is PERMISSION_DENIED, not the NOT_FOUND a stranger gets."""
        principal = await reauthenticate()  # a revoked or expired credential: UNAUTHENTICATED
        if principal == before:
            return principal
        async with self.core.store.read(snapshot=False) as reader:
            coordinator = await reader.get_coordinator(coordinator_id)
        if coordinator is None:
            raise NotFound(f"work coordinator {coordinator_id} not found")
        try:
            authorize(principal, coordinator, Access.LEASE)
        except NotFound:
            raise PermissionDenied(
                f"the caller may no longer lease on work coordinator {coordinator_id}"
            ) from None
        return principal

    async def _wait_for_work(
        self,
        ready: ReadySignal,
        coordinator_id: str,
        worker_classes: tuple[str, ...],
        deadline: float,
    ) -> bool:
        """Sleep until new work of these classes is announced (True), a retry backoff runs
        out, the backstop poll, or the deadline, whichever comes first (False).

        The signal is these classes' only (commits that ready other classes, or none, do not
        wake us) and debounced: announcements during the last look wake us once, at once."""
        loop = asyncio.get_running_loop()
        until = deadline - loop.time()
        # One statement: no snapshot (and no BEGIN/COMMIT round trips) needed.
        async with self.core.store.read(snapshot=False) as reader:
            next_time = await reader.next_not_before(
                coordinator_id, worker_classes, self.core.clock.now()
            )
        if next_time is not None:
            until = min(until, (next_time - self.core.clock.now()).total_seconds() + 0.001)
        return await ready.wait(max(0.0, min(until, BACKSTOP_POLL_SECONDS)))

    async def _claim_when_woken(
        self,
        principal: Principal,
        coordinator_id: str,
        ask: LeaseAsk,
        check: CallerCheck | None = None,
    ) -> list[GrantedLease]:
        """Straight to the claim's write transaction, without ``_lease_once_unlocked``'s read
        first (has_ready, capacity): the signal just said this class has new work, so that read
        would mostly confirm it, and costs a transaction on the path of the wake-up. Only the
        first waiter one commit woke in this process comes here (see ``lease``); the read keeps
        the others from all queueing on the coordinator's row lock. ``_claim`` decides, under
        that lock, exactly as on the usual path. ``check`` confirms the caller under that lock
        (else :class:`_CallerNotCached`, and nothing is written)."""
        lock = self._claim_locks.setdefault((coordinator_id, ask.classes), asyncio.Lock())
        async with lock:
            return await self._claim_write(
                principal, coordinator_id, ask, looked=False, check=check
            )

    async def _lease_once(
        self, principal: Principal, coordinator_id: str, ask: LeaseAsk
    ) -> list[GrantedLease]:
        # One claim per (work coordinator, classes asked) at a time in this process. When a
        # slot frees, every waiter of the class wakes; looking one after another, the second
        # already reads the class as full and skips the write, instead of all of them queueing
        # on the coordinator's row lock (which also delays the Start/Complete calls behind
        # them). Other processes still race; _claim's locking keeps that safe.
        # With a claim in flight, look first without queueing: a full class or nothing ready
        # answers at once (B8's fleet); only a call that may claim waits, and looks again.
        # While claims fill their asks there is work to claim: no look (B1's drain).
        key = (coordinator_id, ask.classes)
        lock = self._claim_locks.setdefault(key, asyncio.Lock())
        if lock.locked() and key not in self._plenty:
            looked = await self._look(principal, coordinator_id, ask, early=True)
            if not isinstance(looked, _MayClaim):
                return looked
        async with lock:
            return await self._lease_once_unlocked(principal, coordinator_id, ask)

    async def _lease_once_unlocked(
        self, principal: Principal, coordinator_id: str, ask: LeaseAsk
    ) -> list[GrantedLease]:
        key = (coordinator_id, ask.classes)
        if key in self._plenty:
            # The last claim filled its ask: straight to the write, which authorizes, reads the
            # worker and decides exactly as after a look (as a woken waiter's claim does).
            granted = await self._claim_write(principal, coordinator_id, ask, looked=False)
            if len(granted) < ask.max_items:
                self._plenty.discard(key)
            return granted
        granted = await self._look_then_claim(principal, coordinator_id, ask)
        if granted and len(granted) >= ask.max_items:
            self._plenty.add(key)
        return granted

    async def _look_then_claim(
        self, principal: Principal, coordinator_id: str, ask: LeaseAsk
    ) -> list[GrantedLease]:
        looked = await self._look(principal, coordinator_id, ask)
        if not isinstance(looked, _MayClaim):
            return looked
        return await self._claim_write(principal, coordinator_id, ask, looked=True)

    async def _look(
        self, principal: Principal, coordinator_id: str, ask: LeaseAsk, *, early: bool = False
    ) -> list[GrantedLease] | _MayClaim:
        """Read (no lock) whether a claim may grant: if not, the answer (a replay, or none).
        ``early`` (outside the claim lock): a new worker goes on to the lock (the pool cap)."""
        now = self.core.clock.now()
        classes = ask.classes
        request_key = lease_request_key(principal.name, ask.worker_id, ask.request_id)
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(
                reader, principal, coordinator_id, access=Access.LEASE
            )
            _check_classes_known(coordinator, ask)
            if request_key:
                # A retry of a call whose leases are all still live: the same answer, no write.
                previous = await reader.lease_request_attempts(coordinator_id, request_key)
                replayed = await replay_lease_request(
                    reader, previous, ask.worker_id, self.core.lease_key, now
                )
                if replayed is not None:
                    return replayed
            worker = await reader.get_worker(coordinator_id, ask.worker_id)
            ready = await reader.has_ready(coordinator_id, classes, now)
            if ready:
                # A full class cannot grant anything: skip the write transaction (and its wait
                # for the coordinator's row lock). Otherwise every waiter woken by a notification
                # queues on that lock only to find no free slot (a thundering herd). _claim
                # re-counts under the lock, so this early answer is only ever an optimisation.
                capacity = coordinator.config.class_capacity
                free = tuple(
                    [
                        c
                        for c in classes
                        if await reader.count_live_attempts(coordinator_id, c) < capacity[c]
                    ]
                )
                if free != classes:  # some are full: is any of the others' work ready?
                    ready = bool(free) and await reader.has_ready(coordinator_id, free, now)
        check_worker_class(worker, ask)
        fenced = worker is not None and worker.fence is not None
        if not ready and not fenced:
            if early and worker is None:
                return _MayClaim()
            if not rules.ask_is_fresh(worker, now):
                async with self.core.store.write() as tx:
                    await self._note_ask(tx, coordinator_id, ask, principal, worker)
            return []
        return _MayClaim()

    async def _claim_write(
        self,
        principal: Principal,
        coordinator_id: str,
        ask: LeaseAsk,
        *,
        looked: bool,
        check: CallerCheck | None = None,
    ) -> list[GrantedLease]:
        """The claim's write transaction. ``looked``: the caller checked the classes and the
        worker before (the usual path; the worker is read again here, with the live attempts,
        after a lease-request replay had its chance); otherwise (a woken waiter, or a claim
        straight after one that filled its ask) the checks come first, and ``check`` (if any)
        confirms the caller at the epoch read with the lock. Either way the worker and the
        asked classes' loads are ONE statement under the lock."""
        request_key = lease_request_key(principal.name, ask.worker_id, ask.request_id)
        # Made before the lock, not while holding it: nothing in them depends on the items.
        key, tokens = self.core.lease_key, self.core.tokens
        secrets = [new_lease_secret(key, tokens, new_id("ls")) for _ in range(ask.max_items)]
        large = ask.max_items >= LARGE_CLAIM_ITEMS
        try:
            async with self.core.command(
                principal,
                coordinator_id,
                Access.LEASE,
                WriteLock.LARGE_CLAIM if large else WriteLock.CLAIM,
            ) as (
                tx,
                coordinator,
                effects,
            ):
                if check is not None and not check(tx.locked_credentials_epoch):
                    raise _CallerNotCached
                loads: ClassLoads | None = None
                if not looked:
                    _check_classes_known(coordinator, ask)
                    worker, loads = await tx.worker_and_loads(
                        coordinator_id, ask.worker_id, ask.classes
                    )
                    check_worker_class(worker, ask)
                if request_key:
                    # Under the lock: the first call may have committed since any read before.
                    previous = await tx.lease_request_attempts(coordinator_id, request_key)
                    replayed = await replay_lease_request(
                        tx, previous, ask.worker_id, self.core.lease_key, tx.now
                    )
                    if replayed is not None:
                        return replayed
                    if previous:  # spent: whatever this call grants takes the id over
                        await tx.update_attempts([replace(a, lease_request="") for a in previous])
                if loads is None:  # the worker as it is under the lock, with the classes' loads
                    worker, loads = await tx.worker_and_loads(
                        coordinator_id, ask.worker_id, ask.classes
                    )
                    check_worker_class(worker, ask)
                if not rules.ask_is_fresh(worker, tx.now):
                    await self._note_ask(tx, coordinator_id, ask, principal, worker)
                return await self._claim(
                    tx, coordinator, principal, ask, worker, loads, effects, secrets
                )
        except FenceFound as found:
            await self.fences.record_fence(principal, coordinator_id, found.worker_id, found.fence)
            raise fence_error(found.worker_id, found.fence) from None

    async def _note_ask(
        self,
        tx: Tx,
        coordinator_id: str,
        ask: LeaseAsk,
        principal: Principal,
        worker: Worker | None,
    ) -> None:
        await check_pool(tx, coordinator_id, worker)
        await tx.touch_worker_ask(
            coordinator_id, ask.worker_id, ask.worker_class, principal.name, ask.classes
        )

    async def _claim(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        ask: LeaseAsk,
        worker: Worker | None,
        class_loads: ClassLoads,
        effects: Effects,
        secrets: list[LeaseSecret],
    ) -> list[GrantedLease]:
        """Claim for ``worker`` (as read under the lock) given the asked classes' loads (read
        with it: ``Tx.worker_and_loads``); each granted attempt takes the next of ``secrets``
        (one for each item it may ask for)."""
        cid = coordinator.coordinator_id
        classes = ask.classes
        stored_fence = worker.fence if worker is not None else None
        if stored_fence is not None or class_loads.own:
            await self.fences.check_fence(
                tx, coordinator, principal, ask.worker_id, stored_fence, class_loads.own
            )
        # Capacity is counted per class: each class's (live attempts, capacity).
        loads = {
            c: (class_loads.live.get(c, 0), coordinator.config.class_capacity[c]) for c in classes
        }
        open_classes = tuple(c for c in classes if loads[c][0] < loads[c][1])
        wanted = min(ask.max_items, sum(cap - used for used, cap in loads.values() if cap > used))
        if wanted <= 0:
            return []
        allowed = frozenset(coordinator.config.allowed_action_classes)
        budgeted = coordinator if budgeting.in_force(coordinator) else None
        chosen = await self._choose(
            tx, cid, ask, worker, wanted, loads, open_classes, allowed, budgeted
        )
        if not chosen:
            return []
        events: list[NewEvent] = []
        attempts: list[Attempt] = []
        granted: list[GrantedLease] = []
        # The chosen items' lanes in one read (a lease of a hundred items spans a few lanes).
        lane_ids = sorted({i.lane_id for i in chosen})
        if len(lane_ids) == 1:
            found = await tx.get_lane(lane_ids[0])
            lanes: dict[str, Lane] = {found.lane_id: found} if found is not None else {}
        else:
            lanes = {lane.lane_id: lane for lane in await tx.get_lanes(lane_ids)}
        checkpoints: dict[str, Checkpoint | None] = {}
        for lease_id in [i.continues_lease_id for i in chosen if i.continues_lease_id]:
            previous = await tx.get_attempt(lease_id)
            stored = previous.checkpoint if previous else None
            checkpoints[lease_id] = Checkpoint.from_json(stored) if stored is not None else None
        started = ask.run_identity is not None
        # One document for all the attempts granted here (nothing changes one in place).
        run_identity = ask.run_identity.to_json() if ask.run_identity else None
        request_key = lease_request_key(principal.name, ask.worker_id, ask.request_id)
        assert len(chosen) <= len(secrets)  # at most ask.max_items are chosen
        for item, (lease_id, nonce, token, token_hash) in zip(chosen, secrets, strict=False):
            assert item.lane_id in lanes  # an item's lane outlives it
            item.attempt_count += 1
            item.attempt_seq += 1
            attempt = Attempt(
                lease_id=lease_id,
                coordinator_id=cid,
                item_id=item.item_id,
                lane_id=item.lane_id,
                attempt=item.attempt_seq,
                status=AttemptStatus.RUNNING if started else AttemptStatus.LEASED,
                token_hash=token_hash,
                worker_id=ask.worker_id,
                worker_class=item.worker_class,  # its capacity is the item's class's
                principal=principal.name,
                lease_seconds=ask.lease_seconds,
                lease_expire_time=rules.lease_expiry(tx.now, ask.lease_seconds),
                deadline_time=stops.attempt_deadline(item, coordinator.config, tx.now),
                create_time=tx.now,
                start_time=tx.now if started else None,
                run_identity=run_identity,
                continues_lease_id=item.continues_lease_id,
                exclusive_key=",".join(rules.exclusive_keys(item)),
                lease_request=request_key,
                token_nonce=nonce,
            )
            item.state = ItemState.RUNNING if started else ItemState.LEASED
            item.current_lease_id = attempt.lease_id
            item.not_before = None
            item.update_time = tx.now
            attempts.append(attempt)
            leased = {"workerId": ask.worker_id, "attempt": attempt.attempt}
            events.append(NewEvent.for_item(EventType.ITEM_LEASED, item, attempt.lease_id, leased))
            if started:
                events.append(NewEvent.for_item(EventType.ITEM_STARTED, item, attempt.lease_id))
            granted.append(
                GrantedLease(
                    attempt=attempt,
                    lease_token=token,
                    item=item,
                    lane=lanes[item.lane_id],
                    checkpoint=checkpoints.get(item.continues_lease_id),
                )
            )
        await tx.insert_attempts(attempts)
        await tx.update_items(chosen)
        await tx.resolve_escalations(cid, [i.item_id for i in chosen], tx.now)
        await self.core.append_events(tx, coordinator, events, principal.name)
        # Fair leasing: the lanes served now take their turn after every lane waiting longer.
        await tx.mark_lanes_served(sorted(lanes), coordinator.revision)
        effects.changed = True
        return granted

    async def _choose(
        self,
        tx: Tx,
        cid: str,
        ask: LeaseAsk,
        worker: Worker | None,
        wanted: int,
        loads: dict[str, tuple[int, int]],
        open_classes: tuple[str, ...],
        allowed: frozenset[str] | None = None,
        budgeted: Coordinator | None = None,
    ) -> list[Item]:
        """Up to ``wanted`` ready items of the asked classes, best first across all of them,
        that no gate holds for the asking worker (:func:`~..leasability.holding_gates`). The
        store returned only items its filter found ready (queued, not held, not backing off)
        of the classes with a free slot (``open_classes``); capacity, exclusive keys and
        placement are decided here, counting what the items chosen before took (their class's
        slots, their keys), so one call never grants two items sharing a key nor more than a
        class's capacity. ``loads``: each class's (live attempts, capacity); ``allowed``: the
        action classes the work coordinator allows now (the policy gate); ``budgeted``: the work
        coordinator, when a budget may cover its work (the budget gate reads the totals under
        its lock, so what a committed write spent is counted)."""
        chosen: list[Item] = []
        taken_keys: dict[str, str] = {}  # key -> the item chosen here that will hold it
        taken_slots = dict.fromkeys(loads, 0)  # class -> items of it chosen here
        # check_fence refused a fenced worker, or lifted its fence: it is not fenced now.
        askers = [Asker(ask.worker_id, worker, fenced=False)]
        cursor: ClaimCursor | None = None
        scan = claim_page_size(wanted)
        while len(chosen) < wanted:
            page = await tx.claim_candidates(ClaimScan(cid, open_classes, tx.now, cursor, scan))
            candidates = taking_turns(page.items)
            if not candidates:
                break
            cursor = page.after
            needed = {k for c in candidates for k in rules.exclusive_keys(c)}
            keys = sorted(needed - taken_keys.keys())
            held = await tx.live_exclusive_holders(cid, keys) if keys else {}
            book = None
            if budgeted is not None:
                lanes = {c.lane_id for c in candidates}
                book = await budgeting.read_book(tx, budgeted, lanes, tx.now)
            for item in candidates:
                # The command refused the call while coordination is off: the switch is on.
                around = Surroundings(
                    now=tx.now,
                    capacity={c: (used + taken_slots[c], cap) for c, (used, cap) in loads.items()},
                    key_holders={**held, **taken_keys},
                    allowed_action_classes=allowed,
                    budget_spent=book.spent_for(item.lane_id) is not None if book else None,
                )
                # Items held by a gate are skipped: no head-of-line blocking, later items still
                # get their turn (a malformed placement is skipped here, reported by why).
                if holding_gates(item, LaneHold.mirrored(item), around, askers):
                    continue
                chosen.append(item)
                taken_slots[item.worker_class] += 1
                taken_keys.update(dict.fromkeys(rules.exclusive_keys(item), item.item_id))
                if len(chosen) == wanted:
                    break
            if len(candidates) < scan:
                break
        return chosen


def taking_turns(candidates: list[Item]) -> list[Item]:
    """A page of candidates (in claim order: priority, then the lane served longest ago, then
    FIFO) with the lanes of one priority taking turns: each lane's first item, then each
    lane's second, and so on, the lanes in the order the page had them."""
    turn_in_lane: dict[tuple[str, int], int] = {}
    ranked: list[tuple[int, int, int, Item]] = []
    for place, item in enumerate(candidates):
        lane = (item.lane_id, item.priority)
        turn = turn_in_lane.get(lane, 0)
        turn_in_lane[lane] = turn + 1
        ranked.append((-item.priority, turn, place, item))
    ranked.sort(key=lambda r: r[:3])
    return [item for *_, item in ranked]


def _check_classes_known(coordinator: Coordinator, ask: LeaseAsk) -> None:
    for worker_class in ask.classes:
        if worker_class not in coordinator.config.class_capacity:
            field = "worker_class" if worker_class == ask.worker_class else "worker_classes"
            raise InvalidArgument.single(field, f"unknown worker class {worker_class!r}")


def _same_caller(cached_caller: CachedCaller | None, principal: Principal) -> CallerCheck:
    """Whether the cache holds ``principal`` for the caller at a given credentials epoch."""

    def check(epoch: int | None) -> bool:
        return cached_caller is not None and cached_caller(epoch) == principal

    return check
