"""Workers and leasing: registration, the long-poll and the claim of ready items."""

from __future__ import annotations

import asyncio
import functools

from workcoord.kit.bus import Subscription
from workcoord.kit.errors import InvalidArgument, NotFound, PoolFull
from workcoord.kit.secrets import hash_secret, new_secret

from .. import rules
from ..auth import Access, Principal, authorize
from ..model import (
    WORKER_POOL_CAP,
    Attempt,
    AttemptStatus,
    Coordinator,
    EventType,
    Item,
    ItemState,
    JsonObject,
    Lane,
    NewEvent,
    Worker,
)
from ..ports import Tx
from ..specs import GrantedLease, Page
from ._base import Effects, EngineCore, new_id
from .paging import PageRequest

# Long-polls re-check the database at least this often, so a lost notification (Redis down,
# a backoff that ran out) costs at most this much latency.
BACKSTOP_POLL_SECONDS = 1.0
CLAIM_SCAN_FACTOR = 4


class LeasingCommands(EngineCore):
    """Worker registration and the Lease command."""

    async def report_worker(
        self, principal: Principal, coordinator_id: str, worker: Worker
    ) -> Worker:
        async with self.command(principal, coordinator_id, Access.LEASE) as (
            tx,
            coordinator,
            effects,
        ):
            if worker.worker_class not in coordinator.config.class_capacity:
                raise InvalidArgument.single(
                    "worker.worker_class", f"unknown worker class {worker.worker_class!r}"
                )
            existing = await tx.get_worker(coordinator_id, worker.worker_id)
            if existing is None and await tx.count_workers(coordinator_id) >= WORKER_POOL_CAP:
                raise PoolFull(f"the worker pool is capped at {WORKER_POOL_CAP} workers")
            worker.coordinator_id = coordinator_id
            worker.principal = principal.name
            worker.observe_time = tx.now
            worker.create_time = existing.create_time if existing else tx.now
            worker.last_ask_time = existing.last_ask_time if existing else None
            await tx.upsert_worker(worker)
            if existing is None:
                await self.append_events(
                    tx,
                    coordinator,
                    [
                        NewEvent(
                            EventType.WORKER_REGISTERED,
                            data={"workerId": worker.worker_id, "workerClass": worker.worker_class},
                        )
                    ],
                    principal.name,
                )
            # New labels may satisfy a placement: let waiting workers look again.
            effects.ready_classes.add(worker.worker_class)
            return worker

    async def list_workers(
        self, principal: Principal, coordinator_id: str, size: int, token: str
    ) -> Page[Worker]:
        request = PageRequest.parse(size, token)
        async with self.store.read() as reader:
            await self._readable(reader, principal, coordinator_id)
            workers = await reader.list_workers(coordinator_id, request.after_id, request.fetch)
        return request.page(workers, lambda w: [w.worker_id])

    async def lease(
        self,
        principal: Principal,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        max_items: int,
        lease_seconds: int,
        wait_seconds: int,
        run_identity: JsonObject | None,
    ) -> list[GrantedLease]:
        """Lease up to ``max_items`` ready items; long-poll up to ``wait_seconds``."""
        if run_identity is not None:
            rules.check_run_identity(run_identity, "run_identity", self.clock.now())
        attempt = functools.partial(
            self._lease_once,
            principal,
            coordinator_id,
            worker_id,
            worker_class,
            max_items,
            lease_seconds,
            run_identity,
        )
        granted = await attempt()
        if granted or wait_seconds <= 0:
            return granted
        # The long-poll is bounded in real time (it is about the call, not domain time).
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        async with self.bus.subscribe(coordinator_id) as subscription:
            while True:
                # Look again after subscribing: work committed in between is not missed.
                granted = await attempt()
                remaining = deadline - loop.time()
                if granted or remaining <= 0:
                    return granted
                await self._wait_for_work(subscription, coordinator_id, worker_class, deadline)

    async def _wait_for_work(
        self, subscription: Subscription, coordinator_id: str, worker_class: str, deadline: float
    ) -> None:
        """Sleep until a notification for this class, a retry backoff running out, the backstop
        poll, or the deadline, whichever comes first."""
        loop = asyncio.get_running_loop()
        until = deadline - loop.time()
        async with self.store.read() as reader:
            next_time = await reader.next_not_before(coordinator_id, worker_class, self.clock.now())
        if next_time is not None:
            until = min(until, (next_time - self.clock.now()).total_seconds() + 0.001)
        wake = loop.time() + max(0.0, min(until, BACKSTOP_POLL_SECONDS))
        while (timeout := wake - loop.time()) > 0:
            note = await subscription.next(timeout)
            if note is None or not note.worker_classes or worker_class in note.worker_classes:
                return

    async def _lease_once(
        self,
        principal: Principal,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        max_items: int,
        lease_seconds: int,
        run_identity: JsonObject | None,
    ) -> list[GrantedLease]:
        # One claim per (work coordinator, class) at a time in this process. When a slot frees,
        # every waiter of the class wakes; looking one after another, the second already reads
        # the class as full and skips the write, instead of all of them queueing on the
        # coordinator's row lock (which also delays the Start/Complete calls behind them).
        # Other processes still race; _claim's locking keeps that safe.
        lock = self._claim_locks.setdefault((coordinator_id, worker_class), asyncio.Lock())
        async with lock:
            return await self._lease_once_unlocked(
                principal,
                coordinator_id,
                worker_id,
                worker_class,
                max_items,
                lease_seconds,
                run_identity,
            )

    async def _lease_once_unlocked(
        self,
        principal: Principal,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        max_items: int,
        lease_seconds: int,
        run_identity: JsonObject | None,
    ) -> list[GrantedLease]:
        now = self.clock.now()
        async with self.store.read() as reader:
            coordinator = await reader.get_coordinator(coordinator_id)
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            authorize(principal, coordinator, Access.LEASE)
            await self._require_enabled(reader, coordinator)
            if worker_class not in coordinator.config.class_capacity:
                raise InvalidArgument.single(
                    "worker_class", f"unknown worker class {worker_class!r}"
                )
            worker = await reader.get_worker(coordinator_id, worker_id)
            ready = await reader.has_ready(coordinator_id, worker_class, now)
            if ready:
                # A full class cannot grant anything: skip the write transaction (and its wait
                # for the coordinator's row lock). Otherwise every waiter woken by a notification
                # queues on that lock only to find no free slot (a thundering herd). _claim
                # re-counts under the lock, so this early answer is only ever an optimisation.
                live = await reader.live_attempts(coordinator_id, worker_class)
                ready = len(live) < coordinator.config.class_capacity[worker_class]
        if worker is not None and worker.worker_class != worker_class:
            raise InvalidArgument.single(
                "worker_class",
                f"worker {worker_id} is registered with class {worker.worker_class!r}",
            )
        if not ready:
            if not rules.ask_is_fresh(worker, now):
                async with self.store.write() as tx:
                    await self._note_ask(
                        tx, coordinator_id, worker_id, worker_class, principal, worker
                    )
            return []
        async with self.command(principal, coordinator_id, Access.LEASE) as (
            tx,
            coordinator,
            effects,
        ):
            if not rules.ask_is_fresh(worker, now):
                await self._note_ask(tx, coordinator_id, worker_id, worker_class, principal, worker)
            return await self._claim(
                tx,
                coordinator,
                principal,
                worker_id,
                worker_class,
                worker,
                max_items,
                lease_seconds,
                run_identity,
                effects,
            )

    async def _note_ask(
        self,
        tx: Tx,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        principal: Principal,
        worker: Worker | None,
    ) -> None:
        if worker is None and await tx.count_workers(coordinator_id) >= WORKER_POOL_CAP:
            raise PoolFull(f"the worker pool is capped at {WORKER_POOL_CAP} workers")
        await tx.touch_worker_ask(coordinator_id, worker_id, worker_class, principal.name)

    async def _claim(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        worker_id: str,
        worker_class: str,
        worker: Worker | None,
        max_items: int,
        lease_seconds: int,
        run_identity: JsonObject | None,
        effects: Effects,
    ) -> list[GrantedLease]:
        cid = coordinator.coordinator_id
        capacity = coordinator.config.class_capacity[worker_class]
        live = await tx.live_attempts(cid, worker_class)
        wanted = min(max_items, capacity - len(live))
        if wanted <= 0:
            return []
        chosen: list[Item] = []
        taken_keys: set[str] = set()
        cursor: tuple[int, int] | None = None
        scan = max(wanted * CLAIM_SCAN_FACTOR, 32)
        while len(chosen) < wanted:
            candidates = await tx.claim_candidates(cid, worker_class, tx.now, cursor, scan)
            if not candidates:
                break
            cursor = (candidates[-1].priority, candidates[-1].seq)
            keys = sorted({k for c in candidates for k in rules.exclusive_keys(c)} - taken_keys)
            held = await tx.live_exclusive_holders(cid, keys) if keys else {}
            for item in candidates:
                item_keys = rules.exclusive_keys(item)
                if any(k in taken_keys or k in held for k in item_keys):
                    continue  # no head-of-line blocking: later items still get their turn
                if rules.placement_problems(item.placement):
                    continue  # malformed placement: skipped here, reported by why
                if not rules.placement_matches(item.placement, worker_id, worker):
                    continue
                chosen.append(item)
                taken_keys.update(item_keys)
                if len(chosen) == wanted:
                    break
            if len(candidates) < scan:
                break
        if not chosen:
            return []
        events: list[NewEvent] = []
        attempts: list[Attempt] = []
        granted: list[GrantedLease] = []
        lanes: dict[str, Lane] = {}
        checkpoints: dict[str, JsonObject | None] = {}
        continued = [i.continues_lease_id for i in chosen if i.continues_lease_id]
        for lease_id in continued:
            previous = await tx.get_attempt(lease_id)
            checkpoints[lease_id] = previous.checkpoint if previous else None
        status = AttemptStatus.RUNNING if run_identity is not None else AttemptStatus.LEASED
        for item in chosen:
            if item.lane_id not in lanes:
                lane = await tx.get_lane(item.lane_id)
                assert lane is not None
                lanes[item.lane_id] = lane
            token = new_secret("wcl_", self.tokens)
            item.attempt_count += 1
            item.attempt_seq += 1
            attempt = Attempt(
                lease_id=new_id("ls"),
                coordinator_id=cid,
                item_id=item.item_id,
                lane_id=item.lane_id,
                attempt=item.attempt_seq,
                status=status,
                token_hash=hash_secret(token),
                worker_id=worker_id,
                worker_class=worker_class,
                principal=principal.name,
                lease_seconds=lease_seconds,
                lease_expire_time=rules.lease_expiry(tx.now, lease_seconds),
                create_time=tx.now,
                start_time=tx.now if run_identity is not None else None,
                run_identity=dict(run_identity) if run_identity is not None else None,
                continues_lease_id=item.continues_lease_id,
                exclusive_key=",".join(rules.exclusive_keys(item)),
            )
            item.state = ItemState.RUNNING if run_identity is not None else ItemState.LEASED
            item.current_lease_id = attempt.lease_id
            item.not_before = None
            item.update_time = tx.now
            attempts.append(attempt)
            events.append(
                NewEvent(
                    EventType.ITEM_LEASED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=attempt.lease_id,
                    data={"workerId": worker_id, "attempt": attempt.attempt},
                )
            )
            if run_identity is not None:
                events.append(
                    NewEvent(
                        EventType.ITEM_STARTED,
                        lane_id=item.lane_id,
                        item_id=item.item_id,
                        lease_id=attempt.lease_id,
                    )
                )
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
        await self.append_events(tx, coordinator, events, principal.name)
        effects.changed = True
        return granted
