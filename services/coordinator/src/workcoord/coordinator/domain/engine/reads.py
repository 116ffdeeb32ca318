"""Reads: the event log, why an item is where it is, and the coordinator's view."""

from __future__ import annotations

from workcoord.kit.errors import FieldViolation, InvalidArgument, NotFound

from .. import rules
from ..auth import Principal
from ..model import Item, PendingActionState
from ..specs import ClassUsage, CoordinatorView, EventPage, Explanation
from ._base import EngineCore
from .fences import shown_fence
from .gates import GateContext, item_gates, lane_gates
from .paging import PageRequest, decode_page_token, page_size


class Reads(EngineCore):
    """The read-only queries."""

    async def list_events(
        self,
        principal: Principal,
        coordinator_id: str,
        since_revision: int,
        size: int,
        token: str,
        lane_id: str,
        item_id: str,
    ) -> EventPage:
        """Events after ``since_revision`` (or the page token), optionally of one lane or item,
        with the coordinator's revision at the time of reading."""
        request = PageRequest.parse(size, token)
        since = request.after_revision(since_revision)
        async with self.store.read() as reader:
            coordinator = await self.coordinator_for(reader, principal, coordinator_id)
            events = await reader.list_events(
                coordinator_id, since, request.fetch, lane_id, item_id
            )
        page = request.page(events, lambda e: [e.revision])
        return EventPage(page.items, page.next_page_token, coordinator.revision)

    async def explain(
        self, principal: Principal, coordinator_id: str, lane_id: str, item_id: str
    ) -> Explanation:
        if not lane_id and not item_id:
            raise InvalidArgument(
                [
                    FieldViolation("lane_id", "give a lane_id or an item_id"),
                    FieldViolation("item_id", "give a lane_id or an item_id"),
                ]
            )
        now = self.clock.now()
        async with self.store.read() as reader:
            coordinator = await self.coordinator_for(reader, principal, coordinator_id, work=False)
            platform_on = await reader.platform_enabled()
            if item_id:
                item = await reader.get_item(item_id)
                if (
                    item is None
                    or item.coordinator_id != coordinator_id
                    or (lane_id and item.lane_id != lane_id)
                ):
                    raise NotFound(f"item {item_id} not found")
                lane = await reader.get_lane(item.lane_id)
                assert lane is not None
            else:
                lane = await self.lane_in(reader, coordinator_id, lane_id)
            detail = await self._lane_detail(reader, lane, with_attempts=True)
            occupancy = await self._occupancy(reader, coordinator, detail.items)
            events = await reader.list_events(
                coordinator_id, 0, 200, lane.lane_id if not item_id else "", item_id
            )
        context = GateContext(
            coordinator, platform_on, lane, detail.blockers, detail.items, occupancy, now
        )
        capacity = occupancy.usage.capacity

        def explain_item(item: Item) -> Explanation:
            return Explanation(
                lane_id=item.lane_id,
                item_id=item.item_id,
                state=item.state.value,
                next_action=rules.item_next_action(item, capacity),
                gates=item_gates(context, item),
                attempts=detail.attempts.get(item.item_id, []),
            )

        if item_id:
            target = next(i for i in detail.items if i.item_id == item_id)
            result = explain_item(target)
            result.events = events
            return result
        return Explanation(
            lane_id=lane.lane_id,
            item_id="",
            state=lane.state.value,
            next_action=rules.lane_next_action(lane, detail.items, detail.open_blockers, capacity),
            gates=lane_gates(context),
            events=events,
            items=[explain_item(i) for i in detail.items],
        )

    async def view(
        self, principal: Principal, coordinator_id: str, size: int, token: str
    ) -> CoordinatorView:
        limit = page_size(size)
        async with self.store.read() as reader:
            coordinator = await self.coordinator_for(reader, principal, coordinator_id)
            # The token is read only once the caller may see the coordinator.
            request = PageRequest(limit, decode_page_token(token))
            page = await self._lane_page(
                reader, coordinator_id, None, request, request.after_time_and_id(), True
            )
            details = page.items
            workers = await reader.list_workers(coordinator_id, "", 10_000)
            for worker in workers:
                worker.fence = await shown_fence(reader, worker, self.clock.now())
            live = await reader.live_attempts(coordinator_id, None)
            queued = await reader.count_ready(coordinator_id)
            pending = await reader.list_pending_actions(
                coordinator_id, PendingActionState.OPEN, "", 1000
            )
            escalations = await reader.open_escalations(coordinator_id)
        capacity, holding = rules.class_usage(live, coordinator.config.class_capacity)
        usage = [
            ClassUsage(cls, used, cap, holding.get(cls, []), queued.get(cls, 0))
            for cls, (used, cap) in sorted(capacity.items())
        ]
        for detail in details:
            detail.capacity = capacity
        worker_leases: dict[str, int] = {}
        for attempt in live:
            worker_leases[attempt.worker_id] = worker_leases.get(attempt.worker_id, 0) + 1
        return CoordinatorView(
            coordinator=coordinator,
            revision=coordinator.revision,
            lanes=details,
            workers=workers,
            capacity=usage,
            worker_leases=worker_leases,
            pending_actions=pending,
            escalations=escalations,
            next_page_token=page.next_page_token,
        )
