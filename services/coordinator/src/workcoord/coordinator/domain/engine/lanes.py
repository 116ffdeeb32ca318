"""Lanes and their items: creation, reads, pauses, blockers, tickets and human decisions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace

from workcoord.kit.errors import (
    EtagMismatch,
    FieldViolation,
    IllegalTransition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)

from .. import auth, policies, requests, rules, usage, workflow
from ..auth import Access, Principal
from ..inputs import (
    AddBlockerInput,
    CancelLaneInput,
    CreateItemInput,
    CreateLaneInput,
    DecideItemInput,
    GetItemInput,
    LaneEdit,
    LinkTicketInput,
    ListLanesInput,
    PauseLaneInput,
    ResolveBlockerInput,
    UpdateLaneInput,
)
from ..model import (
    TERMINAL_ITEM_STATES,
    Blocker,
    Coordinator,
    EventType,
    Item,
    ItemState,
    JsonObject,
    Lane,
    LaneState,
    NewEvent,
    Template,
    Ticket,
    UsageScope,
)
from ..ports import Tx
from ..results import ItemDetail, LaneDetail, Page
from ..specs import Decision
from . import budgeting
from ._base import Effects, new_id
from .paging import PageRequest
from .transitions import Transitions


@dataclass(slots=True)
class LaneWrite:
    """A command's hold on one lane: its transaction, the events it records and, once the
    command is done, the lane as it left it."""

    tx: Tx
    coordinator: Coordinator
    effects: Effects
    lane: Lane
    events: list[NewEvent] = field(default_factory=list)
    read_back: LaneDetail | None = None

    def event(self, type: EventType, data: JsonObject | None = None) -> NewEvent:
        return NewEvent(type, lane_id=self.lane.lane_id, data=dict(data or {}))

    def detail(self) -> LaneDetail:
        assert self.read_back is not None, "the lane was written without read_back"
        return self.read_back


class LaneService(Transitions):
    """The lane and item commands (``engine.lanes``)."""

    async def create_lane(self, principal: Principal, input: CreateLaneInput) -> LaneDetail:
        """Create a lane (and, for a STANDARD lane, the workflow's first items)."""
        coordinator_id, spec = input.coordinator_id, input.spec
        request_id, fingerprint = input.request_id, input.fingerprint
        if spec.template is None:
            raise InvalidArgument.single("lane.template", "is required")
        if spec.template == Template.STANDARD and spec.items:
            raise InvalidArgument.single(
                "lane.items", "must be empty for a STANDARD lane: the workflow creates its items"
            )
        async with self.core.command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            scope = requests.lanes_scope(coordinator_id)
            made = await requests.replayed(tx, scope, request_id, fingerprint)
            existing_lane = await tx.get_lane(made) if made else None
            if existing_lane is not None:
                return await self.core.lane_detail(tx, existing_lane)
            worker_classes = spec.worker_classes
            if spec.template == Template.STANDARD:
                worker_classes = workflow.stage_classes(
                    spec.worker_classes, coordinator.config.class_capacity
                )
            else:
                rules.check_item_specs(coordinator.config.class_capacity, spec.items, "lane.items")
                violations = rules.dag_violations(
                    [s.key for s in spec.items], [s.depends_on for s in spec.items]
                )
                if violations:
                    raise InvalidArgument(violations)
            for problem in rules.placement_problems(spec.placement):
                raise InvalidArgument.single("lane.placement", problem)
            weakened = policies.lane_weakened_fields(spec, coordinator.config)
            policies.require_may_weaken(principal, coordinator, weakened)
            lane = Lane(
                lane_id=new_id("ln"),
                coordinator_id=coordinator_id,
                title=spec.title,
                template=spec.template,
                priority=spec.priority,
                inputs=spec.inputs,
                state=LaneState.ACTIVE,
                paused=False,
                create_time=tx.now,
                update_time=tx.now,
                worker_classes=worker_classes,
                retry_policy=spec.retry_policy,
                review_policy=spec.review_policy,
                placement=spec.placement,
                brief=spec.brief,
                request_id=request_id,
                budget=spec.budget,
            )
            # A key may give a new lane a budget (it only narrows what the lane may spend).
            await _note_lane_budget(tx, coordinator, lane)
            await tx.insert_lane(lane)
            await requests.remember(tx, scope, request_id, fingerprint, lane.lane_id, tx.now)
            tickets = [
                Ticket(lane_id=lane.lane_id, tracker=t.tracker, key=t.key, url=t.url)
                for t in spec.tickets
            ]
            for ticket in tickets:
                await tx.insert_ticket(coordinator_id, ticket)
            events = [
                NewEvent(
                    EventType.LANE_CREATED,
                    lane_id=lane.lane_id,
                    data={"template": lane.template.value, "items": len(spec.items)},
                )
            ]
            specs = spec.items
            if lane.template == Template.STANDARD:
                specs = workflow.first_items(lane, worker_classes)
            if weakened:
                events.insert(1, _policy_weakened(weakened, lane.lane_id))
            items = await self._new_items(tx, coordinator, lane, specs, events, effects)
            await self.core.append_events(tx, coordinator, events, principal.name)
            return LaneDetail(lane=lane, items=items, tickets=tickets)

    async def create_item(self, principal: Principal, input: CreateItemInput) -> ItemDetail:
        """Add an item to an ACTIVE CUSTOM lane (its dependencies must already be there)."""
        coordinator_id, lane_id, spec = input.coordinator_id, input.lane_id, input.spec
        request_id, fingerprint = input.request_id, input.fingerprint
        async with self._lane_write(
            principal, coordinator_id, lane_id, active=False, read_back=False
        ) as write:
            tx, coordinator, lane = write.tx, write.coordinator, write.lane
            if lane.template != Template.CUSTOM:
                raise IllegalTransition("items can be added only to CUSTOM lanes")
            scope = requests.items_scope(coordinator_id, lane_id)
            made = await requests.replayed(tx, scope, request_id, fingerprint)
            existing = await tx.lane_items([lane_id])
            for item in existing:
                if made and item.item_id == made:
                    return ItemDetail(item=item, attempts=[])
            _require_active(lane)
            rules.check_item_specs(coordinator.config.class_capacity, [spec], "item")
            keys = [i.key for i in existing] + [spec.key]
            deps = [i.depends_on for i in existing] + [spec.depends_on]
            violations = rules.dag_violations(keys, deps, path="items")
            if violations:
                # Report against the new item, whose index is the last one.
                last = f"items[{len(keys) - 1}]"
                raise InvalidArgument(
                    [
                        FieldViolation(v.field.replace(last, "item"), v.description)
                        for v in violations
                    ]
                )
            weakened = policies.item_weakened_fields(spec, coordinator.config, "item")
            policies.require_may_weaken(principal, coordinator, weakened)
            items = await self._new_items(
                tx, coordinator, lane, [spec], write.events, write.effects, existing
            )
            if weakened:
                write.events.append(_policy_weakened(weakened, lane_id, items[0].item_id))
            await requests.remember(tx, scope, request_id, fingerprint, items[0].item_id, tx.now)
            return ItemDetail(item=items[0], attempts=[])

    async def get_lane(self, principal: Principal, coordinator_id: str, lane_id: str) -> LaneDetail:
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, coordinator_id)
            lane = await self.core.lane_in(reader, coordinator_id, lane_id)
            detail = await self.core.lane_detail(reader, lane, with_attempts=True)
            around = await self.core.surroundings(reader, coordinator)
            labels = await budgeting.with_budget(reader, coordinator, around, [lane_id])
            detail.surroundings = labels[lane_id]
            detail.usage = await usage.lane_usage(reader, lane, detail.items)
            detail.bodies = auth.may_read_bodies(principal, coordinator)
            return detail

    async def list_lanes(self, principal: Principal, input: ListLanesInput) -> Page[LaneDetail]:
        """A page of the coordinator's lanes, newest first, each with its details."""
        coordinator_id, state = input.coordinator_id, input.state
        scope = ("ListLanes", coordinator_id, state.value if state is not None else "")
        request = PageRequest.parse(input.page_size, input.page_token, scope)
        after = request.after_time_and_id()
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, coordinator_id)
            page = await self.core.lane_page(reader, coordinator_id, state, request, after)
            around = await self.core.surroundings(reader, coordinator)
            lane_ids = [d.lane.lane_id for d in page.items]
            labels = await budgeting.with_budget(reader, coordinator, around, lane_ids)
        for detail in page.items:
            detail.surroundings = labels[detail.lane.lane_id]
        return page

    async def get_item(self, principal: Principal, input: GetItemInput) -> ItemDetail:
        """One item with its attempts and the coordinator's capacity usage."""
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, input.coordinator_id)
            item = await self.core.item_in(
                reader, input.coordinator_id, input.lane_id, input.item_id
            )
            attempts = await reader.item_attempts([input.item_id])
            spent = await reader.usage_totals(
                input.coordinator_id, UsageScope.ITEM, "", [input.item_id]
            )
            around = await self.core.surroundings(reader, coordinator)
            labels = await budgeting.with_budget(reader, coordinator, around, [item.lane_id])
            return ItemDetail(
                item=item,
                attempts=attempts,
                surroundings=labels[item.lane_id],
                usage=spent[0] if spent else None,
                bodies=auth.may_read_bodies(principal, coordinator),
            )

    async def update_lane(self, principal: Principal, input: UpdateLaneInput) -> LaneDetail:
        """Edit a lane (a human's edit, or a work key's with WRITE on it): the fields ``edit``
        names. A new priority (ACTIVE lanes only) is the lane's and that of its unfinished
        items that had the lane's priority (an item given a priority of its own keeps it; a
        live one's retry runs at the new one); the next Lease honours it. One LANE_UPDATED
        event names the fields that changed, with the actor."""
        edit = input.edit
        fields = edit.fields()
        if not fields:
            raise InvalidArgument.single("update_mask", "names no field to change")
        human_only = sorted(fields & HUMAN_ONLY_LANE_FIELDS)
        if human_only and not principal.is_human:
            named = [f"lane.{name}" for name in human_only]
            raise PermissionDenied(
                f"{', '.join(named)}: only a human may change it",
                metadata={"field": named[0], "fields": ",".join(named)},
            )
        async with self._lane_write(
            principal, input.coordinator_id, input.lane_id, active=False
        ) as write:
            if input.etag and input.etag != str(write.lane.version):
                raise EtagMismatch()
            data = await self._apply_lane_edit(write, edit)
            if data["fields"]:
                write.events.append(write.event(EventType.LANE_UPDATED, data))
        return write.detail()

    async def _apply_lane_edit(self, write: LaneWrite, edit: LaneEdit) -> JsonObject:
        """Change the lane as ``edit`` says; the LANE_UPDATED event's data (the fields that
        changed, and the priority before and after)."""
        lane, tx = write.lane, write.tx
        changed: list[str] = []
        data: JsonObject = {}
        if edit.title is not None and edit.title != lane.title:
            lane.title = edit.title
            changed.append("title")
        if edit.priority is not None and edit.priority != lane.priority:
            _require_active(lane)
            previous, lane.priority = lane.priority, edit.priority
            items = await tx.lane_items([lane.lane_id])
            following = [
                i for i in items if i.state not in TERMINAL_ITEM_STATES and i.priority == previous
            ]
            for item in following:
                item.priority = edit.priority
                item.update_time = tx.now
                if item.state == ItemState.QUEUED:
                    write.effects.ready_classes.add(item.worker_class)
            await tx.update_items(following)
            changed.append("priority")
            data.update(priority=edit.priority, previousPriority=previous)
        if edit.budget is not None:
            old, new = lane.budget, edit.budget if edit.budget.limits() else None
            if new != old:
                lane.budget = new
                await _note_lane_budget(tx, write.coordinator, lane)
                changed.append("budget")
                events, reopened = await budgeting.limit_changed(
                    tx, write.coordinator, lane.lane_id, old, new
                )
                write.events.extend(events)
                if reopened:
                    # The budget gate reopened: let waiting workers look again.
                    write.effects.ready_classes.update(write.coordinator.config.class_capacity)
        return {"fields": changed, **data}

    async def pause_lane(self, principal: Principal, input: PauseLaneInput) -> LaneDetail:
        """Pause (or resume) an ACTIVE lane: nothing of it is leased while it is paused."""
        pause, reason = input.pause, input.reason
        async with self._lane_write(principal, input.coordinator_id, input.lane_id) as write:
            lane = write.lane
            if lane.paused != pause:
                lane.paused = pause
                lane.paused_time = write.tx.now if pause else None
                await self._set_lane_hold(write.tx, lane, write.effects)
                event = EventType.LANE_PAUSED if pause else EventType.LANE_RESUMED
                write.events.append(write.event(event, {"reason": reason} if reason else {}))
        return write.detail()

    async def cancel_lane(self, principal: Principal, input: CancelLaneInput) -> LaneDetail:
        """Cancel an ACTIVE lane and what is still open in it (idempotent)."""
        lane_id, reason = input.lane_id, input.reason
        async with self._lane_write(
            principal, input.coordinator_id, lane_id, active=False
        ) as write:
            lane = write.lane
            if lane.state != LaneState.CANCELLED:
                _require_active(lane)
                items = await write.tx.lane_items([lane_id])
                await self._cancel_items(write.tx, items, write.events, write.effects, reason)
                lane.state = LaneState.CANCELLED
                lane.close_reason = reason or "cancelled"
                write.events.append(write.event(EventType.LANE_CANCELLED, {"reason": reason}))
        return write.detail()

    async def add_blocker(self, principal: Principal, input: AddBlockerInput) -> LaneDetail:
        """Block an ACTIVE lane for ``reason`` until the blocker is resolved."""
        async with self._lane_write(principal, input.coordinator_id, input.lane_id) as write:
            blocker = Blocker(
                blocker_id=new_id("blk"),
                lane_id=input.lane_id,
                reason=input.reason,
                open=True,
                create_time=write.tx.now,
            )
            await write.tx.insert_blocker(input.coordinator_id, blocker)
            await self._blockers_changed(write, EventType.BLOCKER_ADDED, blocker.blocker_id)
        return write.detail()

    async def resolve_blocker(self, principal: Principal, input: ResolveBlockerInput) -> LaneDetail:
        """Resolve a blocker of the lane (idempotent); the lane runs again once none is open."""
        lane_id, blocker_id = input.lane_id, input.blocker_id
        async with self._lane_write(
            principal, input.coordinator_id, lane_id, active=False
        ) as write:
            blockers = await write.tx.lane_blockers([lane_id])
            blocker = next((b for b in blockers if b.blocker_id == blocker_id), None)
            if blocker is None:
                raise NotFound(f"blocker {blocker_id} not found")
            if blocker.open:
                blocker.open = False
                blocker.resolve_time = write.tx.now
                await write.tx.update_blocker(blocker)
                await self._blockers_changed(write, EventType.BLOCKER_RESOLVED, blocker_id)
        return write.detail()

    async def link_ticket(self, principal: Principal, input: LinkTicketInput) -> LaneDetail:
        """Link a tracker ticket to the lane (once); it is closed when the lane goes LIVE."""
        coordinator_id, lane_id = input.coordinator_id, input.lane_id
        ticket = replace(input.ticket, lane_id=lane_id)
        async with self._lane_write(principal, coordinator_id, lane_id, active=False) as write:
            existing = await write.tx.lane_tickets([lane_id])
            if not any(t.tracker == ticket.tracker and t.key == ticket.key for t in existing):
                await write.tx.insert_ticket(coordinator_id, ticket)
                linked = {"tracker": ticket.tracker, "key": ticket.key}
                write.events.append(write.event(EventType.TICKET_LINKED, linked))
        return write.detail()

    async def _blockers_changed(self, write: LaneWrite, event: EventType, blocker_id: str) -> None:
        """The lane's items are held while a blocker is open: mirror it, and say what changed."""
        await self._set_lane_hold(write.tx, write.lane, write.effects)
        write.events.append(write.event(event, {"blockerId": blocker_id}))

    @asynccontextmanager
    async def _lane_write(
        self,
        principal: Principal,
        coordinator_id: str,
        lane_id: str,
        *,
        active: bool = True,
        read_back: bool = True,
    ) -> AsyncIterator[LaneWrite]:
        """A write command on one lane, loaded for update (and refused unless ACTIVE, if
        ``active``). Before commit, the events the body recorded are appended with the lane
        stamped as changed, and the lane's detail is read back (if ``read_back``)."""
        async with self.core.command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            lane = await self.core.lane_in(tx, coordinator_id, lane_id)
            if active:
                _require_active(lane)
            write = LaneWrite(tx, coordinator, effects, lane)
            yield write
            if write.events:
                lane.update_time = tx.now
                await tx.update_lane(lane)
                await self.core.append_events(tx, coordinator, write.events, principal.name)
            if read_back:
                write.read_back = await self.core.lane_detail(tx, lane, with_attempts=True)

    async def decide_item(self, principal: Principal, input: DecideItemInput) -> ItemDetail:
        """Approve, deny, resume, retry or cancel an item. All but cancel are for humans only."""
        coordinator_id, lane_id, item_id = input.coordinator_id, input.lane_id, input.item_id
        decision, note = input.decision, input.note
        access = Access.WRITE if decision == Decision.CANCEL else Access.DECIDE
        async with self.core.command(principal, coordinator_id, access) as (
            tx,
            coordinator,
            effects,
        ):
            if access == Access.DECIDE and not principal.is_human:
                # authorize() already refuses keys; this guard keeps it true for any future
                # principal kind: only a human ever decides.
                raise PermissionDenied(f"only a human may {decision.value}")
            item = await self.core.item_in(tx, coordinator_id, lane_id, item_id)
            lane = await self.core.lane_in(tx, coordinator_id, lane_id)
            if decision in _NEED_ACTIVE_LANE:
                _require_active(lane)
            events: list[NewEvent] = []
            data = {"note": note} if note else {}
            match decision:
                case Decision.APPROVE:
                    _require_state(item, ItemState.AWAITING_APPROVAL)
                    item.stop_reason = ""  # approved: whatever policy change asked for it
                    self._queue(tx, item, events, effects, None, EventType.ITEM_APPROVED, data)
                case Decision.DENY:
                    _require_state(item, ItemState.AWAITING_APPROVAL)
                    item.state = ItemState.CANCELLED
                    item.update_time = tx.now
                    events.append(NewEvent.for_item(EventType.ITEM_DENIED, item, data=data))
                    # Stored first, so closing the lane sees the denied item as already final.
                    await tx.update_items([item])
                    if lane.state == LaneState.ACTIVE:
                        await self._close_lane(
                            tx, lane, LaneState.CLOSED_OUT, "denied", events, effects
                        )
                case Decision.RESUME:
                    _require_state(item, ItemState.STOPPED)
                    item.stop_reason = ""
                    self._queue(tx, item, events, effects, None, EventType.ITEM_RESUMED, data)
                case Decision.RETRY:
                    _require_state(item, ItemState.DEAD)
                    item.attempt_count = 0
                    item.dead_letter_reason = None
                    self._queue(tx, item, events, effects, None, EventType.ITEM_REDRIVEN, data)
                case Decision.CANCEL:
                    if item.state in TERMINAL_ITEM_STATES:
                        if item.state == ItemState.CANCELLED:
                            return ItemDetail(item=item, attempts=await tx.item_attempts([item_id]))
                        raise IllegalTransition(f"the item is already {item.state.value}")
                    await self._cancel_items(tx, [item], events, effects, note)
                    if lane.state == LaneState.ACTIVE:
                        await self._after_cancel(tx, lane, item, events, effects)
            if decision != Decision.CANCEL:
                await tx.update_items([item])
            await self.core.append_events(tx, coordinator, events, principal.name)
            return ItemDetail(item=item, attempts=await tx.item_attempts([item_id]))


# Decisions that put an item back to work, so only in a lane still running.
_NEED_ACTIVE_LANE = frozenset({Decision.APPROVE, Decision.RESUME, Decision.RETRY})
#: The fields of a lane only a human may change.
HUMAN_ONLY_LANE_FIELDS: frozenset[str] = frozenset({"budget"})


async def _note_lane_budget(tx: Tx, coordinator: Coordinator, lane: Lane) -> None:
    """Once a lane of the work coordinator has a budget, its heartbeats and claims read lane
    budgets (``Coordinator.lane_budgets``, set once)."""
    if lane.budget is not None and not coordinator.lane_budgets:
        coordinator.lane_budgets = True
        await tx.update_coordinator(coordinator)


def _policy_weakened(fields: list[str], lane_id: str, item_id: str = "") -> NewEvent:
    """The record of a human's weakening (the actor is the human who created it)."""
    return NewEvent(
        EventType.POLICY_WEAKENED, lane_id=lane_id, item_id=item_id, data={"fields": fields}
    )


def _require_active(lane: Lane) -> None:
    if lane.state != LaneState.ACTIVE:
        raise IllegalTransition(f"the lane is {lane.state.value}")


def _require_state(item: Item, state: ItemState) -> None:
    if item.state != state:
        raise IllegalTransition(f"the item is {item.state.value}, not {state.value}")
