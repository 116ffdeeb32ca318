"""Reads: the event log, why an item is where it is, and the coordinator's view."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from workcoord.kit.errors import FieldViolation, InvalidArgument, NotFound

from .. import rules, usage
from ..auth import Principal
from ..inputs import ExplainInput, GetViewInput, ListEventsInput
from ..leasability import Surroundings, key_holders
from ..model import Attempt, Coordinator, Item, PendingActionState, Ticket
from ..ports import LaneStamp, Reader
from ..results import (
    ClassUsage,
    CoordinatorView,
    EventPage,
    Explanation,
    LaneDetail,
    StuckClosure,
)
from ..stops import deadline_of
from . import budgeting
from ._base import EngineService
from .fences import shown_fence
from .gates import GateContext, item_gates, lane_gates, surroundings
from .paging import PageRequest, decode_page_token, lane_key, page_size
from .tracker_connections import MAX_CONNECTIONS
from .view_cache import CachedLane, Snapshot, lease_stamps

# Past this many events since the cached revision, the view reads its lanes afresh.
_CATCH_UP_EVENTS = 5_000


class ReadService(EngineService):
    """The read-only queries: events, explanations, the view (``engine.reads``)."""

    async def list_events(self, principal: Principal, input: ListEventsInput) -> EventPage:
        """Events after ``since_revision`` (or the page token), optionally of one lane or item,
        with the coordinator's revision at the time of reading."""
        coordinator_id, lane_id, item_id = input.coordinator_id, input.lane_id, input.item_id
        # since_revision only starts the log; a token resumes it past its own revision.
        scope = ("ListEvents", coordinator_id, lane_id, item_id)
        request = PageRequest.parse(input.page_size, input.page_token, scope)
        since = request.after_revision(input.since_revision)
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, coordinator_id)
            events = await reader.list_events(
                coordinator_id, since, request.fetch, lane_id, item_id
            )
        page = request.page(events, lambda e: [e.revision])
        return EventPage(page.items, page.next_page_token, coordinator.revision)

    async def explain(self, principal: Principal, input: ExplainInput) -> Explanation:
        """Why the lane or item is where it is: the gates that hold it, and its history."""
        coordinator_id, lane_id, item_id = input.coordinator_id, input.lane_id, input.item_id
        if not lane_id and not item_id:
            raise InvalidArgument(
                [
                    FieldViolation("lane_id", "give a lane_id or an item_id"),
                    FieldViolation("item_id", "give a lane_id or an item_id"),
                ]
            )
        now = self.core.clock.now()
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, coordinator_id)
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
                lane = await self.core.lane_in(reader, coordinator_id, lane_id)
            live = await reader.live_attempts(coordinator_id, None)
            stamp = LaneStamp(lane.lane_id, lane.create_time, lane.version)
            (detail,) = await self._view_lanes(reader, coordinator, [stamp], live)
            occupancy = await self.core.occupancy(reader, coordinator, detail.items, live)
            events = await reader.list_events(
                coordinator_id, 0, 200, lane.lane_id if not item_id else "", item_id
            )
            stuck = [] if item_id else await _stuck_closures(reader, coordinator_id, lane.lane_id)
            spent = await usage.lane_usage(reader, lane, detail.items)
            day_spent = await usage.day_spend(reader, coordinator_id, now)
            book = await budgeting.read_book(reader, coordinator, [lane.lane_id], now)
        context = GateContext(
            coordinator,
            platform_on,
            lane,
            detail.blockers,
            detail.items,
            occupancy,
            now,
            budget=book.spent_for(lane.lane_id),
        )
        # Labels never show the switch (the other reads do not know it); the gates do.
        around = replace(surroundings(context), coordination_on=True)

        def explain_item(item: Item) -> Explanation:
            return Explanation(
                lane_id=item.lane_id,
                item_id=item.item_id,
                state=item.state.value,
                next_action=rules.item_next_action(item, around),
                gates=item_gates(context, item),
                attempts=detail.attempts.get(item.item_id, []),
                deadline=deadline_of(item, detail.attempts.get(item.item_id, []), now),
            )

        if item_id:
            target = next(i for i in detail.items if i.item_id == item_id)
            result = explain_item(target)
            result.events = events
            result.usage = spent.get(item_id)
            result.day_usage = day_spent
            return result
        return Explanation(
            lane_id=lane.lane_id,
            item_id="",
            state=lane.state.value,
            next_action=rules.lane_next_action(lane, detail.items, detail.open_blockers, around),
            gates=lane_gates(context),
            events=events,
            items=[explain_item(i) for i in detail.items],
            stuck_closures=stuck,
            usage=spent.get(lane.lane_id),
            day_usage=day_spent,
        )

    async def view(self, principal: Principal, input: GetViewInput) -> CoordinatorView:
        """A page of the coordinator's lanes with its workers, capacity and open follow-ups."""
        coordinator_id, token = input.coordinator_id, input.page_token
        limit = page_size(input.page_size)
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, coordinator_id)
            # The token is read only once the caller may see the coordinator.
            scope = ("GetView", coordinator_id)
            request = PageRequest(limit, decode_page_token(token, scope), scope)
            stamps = await reader.lane_stamps(
                coordinator_id, request.after_time_and_id(), request.fetch
            )
            page = request.page(stamps, lane_key)
            live = await reader.live_attempts(coordinator_id, None)
            details = await self._view_lanes(reader, coordinator, page.items, live)
            workers = await reader.list_workers(coordinator_id, "", 10_000)
            for worker in workers:
                worker.fence = await shown_fence(reader, worker, self.core.clock.now())
            queued = await reader.count_ready(coordinator_id)
            pending = await reader.list_pending_actions(
                coordinator_id, PendingActionState.OPEN, "", 1000
            )
            escalations = await reader.open_escalations(coordinator_id)
            now = self.core.clock.now()
            day_spent = await usage.day_spend(reader, coordinator_id, now)
            lanes_spent = await usage.lanes_spend(
                reader, coordinator_id, [stamp.lane_id for stamp in page.items]
            )
        capacity, holding = rules.class_usage(live, coordinator.config.class_capacity)
        around = Surroundings(now, capacity, key_holders(live))
        # The budget gate from what was read: the lanes' budgets, the day's and lanes' totals.
        labels = budgeting.view_labels(
            coordinator, around, [d.lane for d in details], day_spent, lanes_spent
        )
        class_usage = [
            ClassUsage(cls, used, cap, holding.get(cls, []), queued.get(cls, 0))
            for cls, (used, cap) in sorted(capacity.items())
        ]
        worker_leases: dict[str, int] = {}
        for attempt in live:
            worker_leases[attempt.worker_id] = worker_leases.get(attempt.worker_id, 0) + 1
        return CoordinatorView(
            coordinator=coordinator,
            revision=coordinator.revision,
            lanes=[replace(d, surroundings=labels[d.lane.lane_id]) for d in details],
            workers=workers,
            capacity=class_usage,
            worker_leases=worker_leases,
            pending_actions=pending,
            escalations=escalations,
            next_page_token=page.next_page_token,
            day_usage=day_spent,
            lane_usage=lanes_spent,
        )

    async def _view_lanes(
        self,
        reader: Reader,
        coordinator: Coordinator,
        stamps: Sequence[LaneStamp],
        live: Sequence[Attempt],
    ) -> list[LaneDetail]:
        """The details of the lanes of ``stamps`` at the coordinator's revision: from the view
        cache where nothing changed since it was filled (see view_cache), read afresh where
        something did. The details handed out are shared with later calls: never change them."""
        cid, revision = coordinator.coordinator_id, coordinator.revision
        cached = self.core.view_cache.get(cid)
        kept: dict[str, CachedLane] = {}
        if cached is not None and cached.revision <= revision:
            touched = await reader.event_lane_ids(cid, cached.revision, _CATCH_UP_EVENTS)
            if len(touched) < _CATCH_UP_EVENTS:
                stale = set(touched)
                kept = {k: v for k, v in cached.lanes.items() if k not in stale}
        tickets: dict[str, list[Ticket]] = {}
        live_by_lane: dict[str, list[Attempt]] = {}
        if kept:
            for ticket in await reader.coordinator_tickets(cid):
                tickets.setdefault(ticket.lane_id, []).append(ticket)
            for attempt in live:
                live_by_lane.setdefault(attempt.lane_id, []).append(attempt)
        reload: list[str] = []
        for stamp in stamps:
            entry = kept.get(stamp.lane_id)
            if entry is None or not entry.still_valid(
                stamp.version,
                lease_stamps(live_by_lane.get(stamp.lane_id, ())),
                tickets.get(stamp.lane_id, []),
            ):
                reload.append(stamp.lane_id)
        lanes = await reader.get_lanes(reload) if reload else []
        for detail in await self.core.lane_details(reader, lanes, with_attempts=True):
            kept[detail.lane.lane_id] = CachedLane.of(detail)
        self.core.view_cache.put(cid, Snapshot(revision, kept))
        return [kept[s.lane_id].detail for s in stamps]


async def _stuck_closures(reader: Reader, coordinator_id: str, lane_id: str) -> list[StuckClosure]:
    """The lane's open ticket closures, each with the connection that serves its ticket."""
    actions = [
        a
        for a in await reader.list_pending_actions(
            coordinator_id, PendingActionState.OPEN, "", 1000
        )
        if a.lane_id == lane_id
    ]
    if not actions:
        return []
    connections = await reader.list_tracker_connections(coordinator_id, "", MAX_CONNECTIONS)
    return [
        StuckClosure(
            a,
            next((c for c in connections if c.serves(a.ticket_tracker, a.ticket_key)), None),
        )
        for a in actions
    ]
