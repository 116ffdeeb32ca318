"""The worker registry: registration (``ReportWorker``) and the list of workers, with fences."""

from __future__ import annotations

from dataclasses import replace

from workcoord.kit.errors import InvalidArgument, PoolFull

from ..auth import Access, Principal
from ..inputs import ListWorkersInput, ReportWorkerInput
from ..model import WORKER_POOL_CAP, EventType, NewEvent, Worker
from ..ports import Tx
from ..results import Page
from ..specs import LeaseAsk
from ._base import EngineService
from .fences import shown_fence
from .paging import PageRequest


async def check_pool(tx: Tx, coordinator_id: str, known: Worker | None) -> None:
    """A worker not seen before is refused once the pool is full."""
    if known is None and await tx.count_workers(coordinator_id) >= WORKER_POOL_CAP:
        raise PoolFull(f"the worker pool is capped at {WORKER_POOL_CAP} workers")


def check_worker_class(worker: Worker | None, ask: LeaseAsk) -> None:
    """A registered worker leases only the classes it serves (ReportWorker adds classes)."""
    if worker is None:
        return
    served = worker.classes
    for worker_class in ask.classes:
        if worker_class not in served:
            field = "worker_class" if worker_class == ask.worker_class else "worker_classes"
            shown = (
                f"class {served[0]!r}"
                if len(served) == 1
                else "classes " + ", ".join(repr(c) for c in served)
            )
            raise InvalidArgument.single(
                field, f"worker {ask.worker_id} is registered with {shown}"
            )


class WorkerRegistry(EngineService):
    """Worker registration and the workers' list (``engine.workers``)."""

    async def report_worker(self, principal: Principal, input: ReportWorkerInput) -> Worker:
        """Register a worker, or refresh what it reports (labels, capacity, toolchains)."""
        coordinator_id, worker = input.coordinator_id, replace(input.worker)
        async with self.core.command(principal, coordinator_id, Access.LEASE) as (
            tx,
            coordinator,
            effects,
        ):
            classes = worker.classes
            for worker_class in classes:
                if worker_class not in coordinator.config.class_capacity:
                    field = (
                        "worker.worker_class"
                        if worker_class == worker.worker_class
                        else "worker.worker_classes"
                    )
                    raise InvalidArgument.single(field, f"unknown worker class {worker_class!r}")
            # Stored in full, worker_class first; [] for a worker of one class.
            worker.worker_classes = list(classes) if len(classes) > 1 else []
            existing = await tx.get_worker(coordinator_id, worker.worker_id)
            await check_pool(tx, coordinator_id, existing)
            worker.coordinator_id = coordinator_id
            worker.principal = principal.name
            worker.observe_time = tx.now
            worker.create_time = existing.create_time if existing else tx.now
            worker.last_ask_time = existing.last_ask_time if existing else None
            worker.fence = existing.fence if existing else None  # reports never lift a fence
            await tx.upsert_worker(worker)
            if existing is None:
                data: dict[str, object] = {
                    "workerId": worker.worker_id,
                    "workerClass": worker.worker_class,
                }
                if worker.worker_classes:
                    data["workerClasses"] = list(worker.worker_classes)
                registered = NewEvent(EventType.WORKER_REGISTERED, data=data)
                await self.core.append_events(tx, coordinator, [registered], principal.name)
            # New labels may satisfy a placement: let waiting workers look again.
            effects.ready_classes.update(classes)
            return worker

    async def list_workers(self, principal: Principal, input: ListWorkersInput) -> Page[Worker]:
        """A page of the coordinator's workers, each with the fence it has now (if any)."""
        coordinator_id = input.coordinator_id
        request = PageRequest.parse(
            input.page_size, input.page_token, ("ListWorkers", coordinator_id)
        )
        async with self.core.store.read() as reader:
            await self.core.coordinator_for(reader, principal, coordinator_id)
            workers = await reader.list_workers(coordinator_id, request.after_id, request.fetch)
            now = self.core.clock.now()
            for worker in workers:
                worker.fence = await shown_fence(reader, worker, now)
        return request.page(workers, lambda w: [w.worker_id])
