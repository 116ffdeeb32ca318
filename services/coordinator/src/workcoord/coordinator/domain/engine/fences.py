"""Worker fences and forgetting workers.

A placement is validated when an item is created and again when it is leased, so a malformed
placement on a live attempt only comes from data the current rules no longer accept (an older
release, a repaired database). Such an attempt fences its worker: the worker leases nothing,
and the exclusive resources the attempt holds stay held, until the placement is corrected, the
attempt ends or its lease expires. Every other worker keeps working.

A fence is stored on the worker (its JSON form, below) with a WORKER_FENCED event when it is
found: by the worker's own Lease call, or by a recovery pass. It lifts (WORKER_UNFENCED) when
either of those finds the cause gone; views never show a fence whose cause is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workcoord.kit.errors import IllegalTransition, NotFound, WorkerFenced

from .. import rules
from ..auth import Access, Principal
from ..inputs import ForgetWorkerInput
from ..model import Attempt, Coordinator, EventType, Item, JsonObject, NewEvent, Worker
from ..ports import Reader, Tx
from ._base import EngineService

__all__ = ["FenceFound", "FenceService", "fence_error", "shown_fence"]


class FenceFound(Exception):
    """Raised inside a lease transaction that found a new fence: the transaction rolls back
    and the fence is recorded on its own (see :meth:`FenceService.record_fence`)."""

    def __init__(self, worker_id: str, fence: JsonObject) -> None:
        super().__init__(worker_id)
        self.worker_id = worker_id
        self.fence = fence


def fence_error(worker_id: str, fence: JsonObject) -> WorkerFenced:
    """The error a fenced worker's Lease gets (names the attempt and why, never inputs)."""
    return WorkerFenced(
        f"worker {worker_id} is fenced: {fence['reason']} (lease {fence['lease_id']}, item "
        f"{fence['item_id']}); it leases again once the placement is corrected or the lease "
        f"ends or expires at {fence['expire_time']}",
        metadata={"workerId": worker_id, "leaseId": str(fence["lease_id"])},
    )


def fence_for(
    attempts: Sequence[Attempt], items: dict[str, Item], now: datetime
) -> JsonObject | None:
    """The fence ``attempts`` (one worker's, live) put on their worker, if any: the first,
    in lease order, whose item's placement is malformed and whose lease has not expired."""
    for attempt in sorted(attempts, key=lambda a: (a.create_time, a.lease_id)):
        item = items.get(attempt.item_id)
        if item is None or not attempt.live or attempt.lease_expire_time <= now:
            continue
        problems = rules.placement_problems(item.placement)
        if problems:
            return {
                "reason": "malformed placement: " + "; ".join(problems),
                "lease_id": attempt.lease_id,
                "item_id": attempt.item_id,
                "lane_id": attempt.lane_id,
                "exclusive": [k for k in attempt.exclusive_key.split(",") if k],
                "since": now.isoformat(),
                "expire_time": attempt.lease_expire_time.isoformat(),
            }
    return None


async def shown_fence(reader: Reader, worker: Worker, now: datetime) -> JsonObject | None:
    """The worker's fence as views show it: none once its cause is gone (even before a Lease
    or a recovery pass lifts it), with the attempt's current expiry."""
    if not worker.fence:
        return None
    attempt = await reader.get_attempt(str(worker.fence.get("lease_id", "")))
    if attempt is None or not attempt.live or attempt.lease_expire_time <= now:
        return None
    item = await reader.get_item(attempt.item_id)
    if item is None or not rules.placement_problems(item.placement):
        return None
    return {**worker.fence, "expire_time": attempt.lease_expire_time.isoformat()}


def _same_cause(stored: JsonObject | None, current: JsonObject | None) -> bool:
    if stored is None or current is None:
        return stored is current
    return stored.get("lease_id") == current.get("lease_id")


class FenceService(EngineService):
    """Finding, recording and lifting fences; forgetting workers (``engine.fences``)."""

    async def current_fence(
        self, tx: Tx, worker_id: str, live: Sequence[Attempt]
    ) -> JsonObject | None:
        """The fence the worker's live attempts among ``live`` put on it now."""
        mine = [a for a in live if a.worker_id == worker_id and a.lease_expire_time > tx.now]
        if not mine:
            return None
        items = {i.item_id: i for i in await tx.items_by_ids([a.item_id for a in mine])}
        return fence_for(mine, items, tx.now)

    async def check_fence(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        worker_id: str,
        stored: JsonObject | None,
        live: Sequence[Attempt],
    ) -> None:
        """Inside a Lease transaction: refuse a fenced worker. A fence still standing raises
        WORKER_FENCED; a new one raises :class:`FenceFound` (to be recorded after the rollback);
        one whose cause is gone lifts here, and the lease goes on."""
        current = await self.current_fence(tx, worker_id, live)
        if current is not None:
            if stored is not None and _same_cause(stored, current):
                raise fence_error(worker_id, current)
            raise FenceFound(worker_id, current)
        if stored is not None:
            await self._change_fence(tx, coordinator, principal, worker_id, stored, lift=True)

    async def record_fence(
        self, principal: Principal, coordinator_id: str, worker_id: str, fence: JsonObject
    ) -> None:
        """Store a fence found by a Lease (in its own transaction) with WORKER_FENCED."""
        async with self.core.command(principal, coordinator_id, Access.LEASE) as (
            tx,
            coordinator,
            _,
        ):
            worker = await tx.get_worker(coordinator_id, worker_id)
            if worker is None or _same_cause(worker.fence, fence):
                return
            await self._change_fence(tx, coordinator, principal, worker_id, fence)

    async def sweep_fences(self, principal: Principal, coordinator_id: str) -> None:
        """A recovery pass: fence the workers whose live attempts have a malformed placement,
        lift the fences whose cause is gone."""
        async with self.core.command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            _effects,
        ):
            live = await tx.live_attempts(coordinator_id, None)
            fenced = [w for w in await tx.list_workers(coordinator_id, "", 100_000) if w.fence]
            suspects = {a.worker_id for a in live} | {w.worker_id for w in fenced}
            stored = {w.worker_id: w.fence for w in fenced}
            items = {i.item_id: i for i in await tx.items_by_ids(sorted({a.item_id for a in live}))}
            for worker_id in sorted(suspects):
                mine = [a for a in live if a.worker_id == worker_id]
                current = fence_for(mine, items, tx.now)
                before = stored.get(worker_id)
                if _same_cause(before, current):
                    continue
                if current is None:
                    assert before is not None
                    await self._change_fence(
                        tx, coordinator, principal, worker_id, before, lift=True
                    )
                elif await tx.get_worker(coordinator_id, worker_id) is not None:
                    await self._change_fence(tx, coordinator, principal, worker_id, current)

    async def forget_worker(self, principal: Principal, input: ForgetWorkerInput) -> Worker:
        """Forget a worker holding no live lease (admins only): its record and any fence go."""
        coordinator_id, worker_id = input.coordinator_id, input.worker_id
        async with self.core.command(principal, coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            _effects,
        ):
            worker = await tx.get_worker(coordinator_id, worker_id)
            if worker is None:
                raise NotFound(f"worker {worker_id} not found")
            held = [
                a.lease_id
                for a in await tx.live_attempts(coordinator_id, None)
                if a.worker_id == worker_id and a.lease_expire_time > tx.now
            ]
            if held:
                raise IllegalTransition(
                    f"worker {worker_id} holds {len(held)} live lease(s) ({', '.join(held)}): "
                    "it can be forgotten once they end or expire",
                    metadata={"workerId": worker_id},
                )
            await tx.delete_worker(coordinator_id, worker_id)
            forgotten = NewEvent(EventType.WORKER_FORGOTTEN, data={"workerId": worker_id})
            await self.core.append_events(tx, coordinator, [forgotten], principal.name)
            return worker

    async def _change_fence(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        worker_id: str,
        fence: JsonObject,
        *,
        lift: bool = False,
    ) -> None:
        """Store ``fence`` on the worker, with WORKER_FENCED; or, with ``lift``, clear it, with
        WORKER_UNFENCED. The event names the fence's lease, item and lane."""
        await tx.set_worker_fence(coordinator.coordinator_id, worker_id, None if lift else fence)
        data = (
            {"workerId": worker_id} if lift else {"workerId": worker_id, "reason": fence["reason"]}
        )
        event = NewEvent(
            EventType.WORKER_UNFENCED if lift else EventType.WORKER_FENCED,
            lane_id=str(fence.get("lane_id", "")),
            item_id=str(fence.get("item_id", "")),
            lease_id=str(fence.get("lease_id", "")),
            data=data,
        )
        await self.core.append_events(tx, coordinator, [event], principal.name)
