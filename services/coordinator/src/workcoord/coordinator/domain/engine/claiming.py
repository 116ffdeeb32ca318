"""The claim of ready items, inside a Lease's write transaction (:mod:`.leasing` opens it).

A claim either runs whole holding the work coordinator's row (:meth:`Claims.claim`), or in two
steps (docs/architecture.md, "Who waits for whom"): :meth:`Claims.prepare` before the row
(the worker, the loads, the candidates locked ``SKIP LOCKED``, the attempts built), then
:meth:`Claims.finish` holding it (the loads read again, what no longer fits given back, the
writes). Claims of one process then overlap: one prepares while another holds the row.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import TracebackType

from workcoord.kit.secrets import hash_secret

from .. import rules, stops
from ..auth import Principal
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
from ..ports import ClaimCursor, ClaimScan, ClassLoads, Tx
from ..results import GrantedLease
from ..specs import Checkpoint, LeaseAsk
from . import budgeting
from ._base import Effects, EngineCore, EngineService, new_id
from .fences import FenceService
from .lease_replay import derive_lease_token, lease_request_key
from .workers import check_pool

# Candidates read per page: twice what is wanted (skipped ones are made up from the next page).
CLAIM_SCAN_FACTOR = 2


class ClaimTurn:
    """A claim's place among the claims of one (work coordinator, classes) in this process:
    it prepares holding ``entry`` (one at a time), then moves to ``row`` (one at a time) and
    lets the next one prepare. Leaving releases whichever it holds."""

    def __init__(self, entry: asyncio.Lock, row: asyncio.Lock) -> None:
        self.entry, self.row = entry, row
        self._held: asyncio.Lock | None = None

    async def __aenter__(self) -> ClaimTurn:
        await self.entry.acquire()
        self._held = self.entry
        return self

    async def to_row(self) -> None:
        if self._held is self.entry:
            await self.row.acquire()
            self.entry.release()
            self._held = self.row

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._held is not None:
            self._held.release()
            self._held = None


@dataclass(slots=True)
class _Grant:
    """One item a claim takes, not written yet."""

    item: Item
    attempt: Attempt
    token: str
    events: list[NewEvent]


@dataclass(slots=True)
class Prepared:
    """What a claim prepared before holding the row."""

    own: frozenset[str]  # the lease ids of the worker's live attempts, as read
    grants: list[_Grant]
    lanes: dict[str, Lane]


class Claims(EngineService):
    """Choosing ready items for a Lease and writing their attempts (``engine.leasing``)."""

    def __init__(self, core: EngineCore, fences: FenceService) -> None:
        super().__init__(core)
        self.fences = fences

    async def note_ask(
        self,
        tx: Tx,
        coordinator_id: str,
        ask: LeaseAsk,
        principal: Principal,
        worker: Worker | None,
    ) -> None:
        """Record the worker's ask (registering a new worker, within the pool's cap)."""
        await check_pool(tx, coordinator_id, worker)
        await tx.touch_worker_ask(
            coordinator_id, ask.worker_id, ask.worker_class, principal.name, ask.classes
        )

    async def prepare(
        self, tx: Tx, coordinator: Coordinator, principal: Principal, ask: LeaseAsk
    ) -> Prepared | None:
        """Before the row: choose and build what a claim for a known, unfenced worker grants,
        reading the loads without the row (``finish`` checks them again). None where the
        claim must run whole under the row: a worker new, fenced or asking for a class it does
        not serve, a budget that may cover the work."""
        cid = coordinator.coordinator_id
        if budgeting.in_force(coordinator):
            return None
        worker, loads = await tx.worker_and_loads(cid, ask.worker_id, ask.classes)
        if (
            worker is None
            or worker.fence is not None
            or not set(ask.classes) <= set(worker.classes)
        ):
            return None
        if loads.own and await self.fences.current_fence(tx, ask.worker_id, loads.own):
            return None
        grants, lanes = await self._choose_and_build(tx, coordinator, principal, ask, worker, loads)
        return Prepared(frozenset(a.lease_id for a in loads.own), grants, lanes)

    async def finish(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        ask: LeaseAsk,
        prepared: Prepared,
        effects: Effects,
    ) -> list[GrantedLease] | None:
        """Holding the row: read the worker and the loads again, give back what no longer
        fits (a class filled, an exclusive key taken meanwhile), write the rest. None where
        the claim must run whole after all: a Lease retried with its request id, the worker
        fenced meanwhile, or everything given back."""
        cid = coordinator.coordinator_id
        request_key = lease_request_key(principal.name, ask.worker_id, ask.request_id)
        if request_key and await tx.lease_request_attempts(cid, request_key):
            return None  # a retry of a call committed meanwhile: replayed as a whole claim
        worker, loads = await tx.worker_and_loads(cid, ask.worker_id, ask.classes)
        if worker is None or worker.fence is not None:
            return None
        new_own = {a.lease_id for a in loads.own} - prepared.own
        if new_own and await self.fences.current_fence(tx, ask.worker_id, loads.own):
            return None
        if not rules.ask_is_fresh(worker, tx.now):
            await self.note_ask(tx, cid, ask, principal, worker)
        capacity = coordinator.config.class_capacity
        used = dict(loads.live)
        kept: list[_Grant] = []
        for grant in prepared.grants:
            worker_class = grant.item.worker_class
            if used.get(worker_class, 0) < capacity[worker_class]:
                kept.append(grant)
                used[worker_class] = used.get(worker_class, 0) + 1
        keys = sorted({k for g in kept for k in rules.exclusive_keys(g.item)})
        if keys:  # taken since the prepare read them (by a claim committed meanwhile)?
            held = await tx.live_exclusive_holders(cid, keys)
            kept = [g for g in kept if not any(k in held for k in rules.exclusive_keys(g.item))]
        if prepared.grants and not kept:
            return None
        return await self._write(tx, coordinator, principal, ask, kept, prepared.lanes, effects)

    async def claim(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        ask: LeaseAsk,
        worker: Worker | None,
        class_loads: ClassLoads,
        effects: Effects,
    ) -> list[GrantedLease]:
        """The whole claim, holding the row, for ``worker`` (as read under it) given the asked
        classes' loads (read with it: ``Tx.worker_and_loads``)."""
        stored_fence = worker.fence if worker is not None else None
        if stored_fence is not None or class_loads.own:
            await self.fences.check_fence(
                tx, coordinator, principal, ask.worker_id, stored_fence, class_loads.own
            )
        grants, lanes = await self._choose_and_build(
            tx, coordinator, principal, ask, worker, class_loads
        )
        if not grants:
            return []
        return await self._write(tx, coordinator, principal, ask, grants, lanes, effects)

    async def _choose_and_build(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        ask: LeaseAsk,
        worker: Worker | None,
        class_loads: ClassLoads,
    ) -> tuple[list[_Grant], dict[str, Lane]]:
        """The items to grant given the loads (capacity is counted per class), each with its
        attempt and events, and their lanes."""
        classes = ask.classes
        loads = {
            c: (class_loads.live.get(c, 0), coordinator.config.class_capacity[c]) for c in classes
        }
        open_classes = tuple(c for c in classes if loads[c][0] < loads[c][1])
        wanted = min(ask.max_items, sum(cap - used for used, cap in loads.values() if cap > used))
        if wanted <= 0:
            return [], {}
        allowed = frozenset(coordinator.config.allowed_action_classes)
        budgeted = coordinator if budgeting.in_force(coordinator) else None
        chosen = await self._choose(
            tx,
            coordinator.coordinator_id,
            ask,
            worker,
            wanted,
            loads,
            open_classes,
            allowed,
            budgeted,
        )
        if not chosen:
            return [], {}
        # The chosen items' lanes in one read (a lease of a hundred items spans a few lanes).
        lane_ids = sorted({i.lane_id for i in chosen})
        if len(lane_ids) == 1:
            found = await tx.get_lane(lane_ids[0])
            lanes: dict[str, Lane] = {found.lane_id: found} if found is not None else {}
        else:
            lanes = {lane.lane_id: lane for lane in await tx.get_lanes(lane_ids)}
        return self._build(tx, coordinator, principal, ask, chosen), lanes

    def _build(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        ask: LeaseAsk,
        chosen: list[Item],
    ) -> list[_Grant]:
        """An attempt (and its token) and the events for each chosen item, which now shows the
        lease."""
        started = ask.run_identity is not None
        # One document for all the attempts granted here (nothing changes one in place).
        run_identity = ask.run_identity.to_json() if ask.run_identity else None
        request_key = lease_request_key(principal.name, ask.worker_id, ask.request_id)
        grants: list[_Grant] = []
        for item in chosen:
            lease_id = new_id("ls")
            nonce = self.core.tokens.token_urlsafe(16)
            token = derive_lease_token(self.core.lease_key, lease_id, nonce)
            item.attempt_count += 1
            item.attempt_seq += 1
            attempt = Attempt(
                lease_id=lease_id,
                coordinator_id=coordinator.coordinator_id,
                item_id=item.item_id,
                lane_id=item.lane_id,
                attempt=item.attempt_seq,
                status=AttemptStatus.RUNNING if started else AttemptStatus.LEASED,
                token_hash=hash_secret(token),
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
            leased = {"workerId": ask.worker_id, "attempt": attempt.attempt}
            events = [NewEvent.for_item(EventType.ITEM_LEASED, item, lease_id, leased)]
            if started:
                events.append(NewEvent.for_item(EventType.ITEM_STARTED, item, lease_id))
            grants.append(_Grant(item, attempt, token, events))
        return grants

    async def _write(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        ask: LeaseAsk,
        grants: list[_Grant],
        lanes: dict[str, Lane],
        effects: Effects,
    ) -> list[GrantedLease]:
        """Write the grants (holding the row): the attempts, the items, the events; the lanes
        served take their turn after every lane waiting longer (fair leasing)."""
        if not grants:
            return []
        checkpoints: dict[str, Checkpoint | None] = {}
        for lease_id in [g.item.continues_lease_id for g in grants if g.item.continues_lease_id]:
            previous = await tx.get_attempt(lease_id)
            stored = previous.checkpoint if previous else None
            checkpoints[lease_id] = Checkpoint.from_json(stored) if stored is not None else None
        items = [g.item for g in grants]
        await tx.insert_attempts([g.attempt for g in grants])
        await tx.update_items(items)
        await tx.resolve_escalations(coordinator.coordinator_id, [i.item_id for i in items], tx.now)
        events = [e for g in grants for e in g.events]
        await self.core.append_events(tx, coordinator, events, principal.name)
        served = sorted({i.lane_id for i in items})
        await tx.mark_lanes_served(served, coordinator.revision)
        effects.changed = True
        return [
            GrantedLease(
                attempt=g.attempt,
                lease_token=g.token,
                item=g.item,
                lane=lanes[g.item.lane_id],  # an item's lane outlives it
                checkpoint=checkpoints.get(g.item.continues_lease_id),
            )
            for g in grants
        ]

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
        scan = max(wanted * CLAIM_SCAN_FACTOR, 32)
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
