"""The children routes, the parent's side (``/v1/work-coordinators/{parent}/children/{child}/…``).

The caller must be allowed to act for the PARENT (READ for the summary and the escalations,
WRITE for assign, steer and escalate), the child must name that parent, and a live grant from
the child to the parent (:mod:`.parent_grants`) must carry the route's permission, checked at
the moment of the request. A parent only ever sees the redacted summary (ids, kinds, states,
priority, next-action labels, timestamps; :mod:`..child_summaries`) and open escalations (ids,
reasons, times); it never reads bodies nor leases work of the child. What it does is recorded
in the child as a ``PARENT_ACTION`` event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime

from workcoord.kit.errors import IllegalTransition, InvalidArgument, NotFound, PermissionDenied

from .. import rules
from ..auth import Access, Principal, authorize
from ..child_summaries import ChildSummary, ItemSummary, LaneSummary, item_summary, lane_summary
from ..grants import GrantPermission
from ..inputs import AssignChildWorkInput, EscalateChildWorkInput, SteerChildWorkInput
from ..model import (
    TERMINAL_ITEM_STATES,
    Coordinator,
    DigestKind,
    Escalation,
    EventType,
    ItemState,
    LaneState,
    NewEvent,
)
from ..ports import Reader, Tx
from ._base import Effects, EngineCore, new_id

__all__ = ["CHILD_ACCESS", "Children"]

SUMMARY_LIMIT = 1000

# What a caller must be allowed to do on the PARENT for each children route.
CHILD_ACCESS = {
    GrantPermission.SUMMARY: Access.READ,
    GrantPermission.ESCALATIONS: Access.READ,
    GrantPermission.ASSIGN: Access.WRITE,
    GrantPermission.STEER: Access.WRITE,
    GrantPermission.ESCALATE: Access.WRITE,
}
# States in which a parent may place an item on a worker (no live attempt, not finished).
_ASSIGNABLE = frozenset(
    {ItemState.WAITING, ItemState.QUEUED, ItemState.AWAITING_APPROVAL, ItemState.STOPPED}
)


def _parent_action_event(
    action: str, parent_id: str, lane_id: str, item_id: str = "", **details: object
) -> NewEvent:
    """The child's record of what its parent did."""
    data = {"action": action, "parentCoordinatorId": parent_id, **details}
    return NewEvent(EventType.PARENT_ACTION, lane_id=lane_id, item_id=item_id, data=data)


class Children:
    """What a parent reads of and does to its children, over the engine's shared core."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    async def child_summary(
        self, principal: Principal, parent_id: str, child_id: str
    ) -> ChildSummary:
        """The redacted summary of a child's lanes and items."""
        async with self._child_read(principal, parent_id, child_id, GrantPermission.SUMMARY) as (
            reader,
            child,
        ):
            lanes = await reader.list_lanes(child_id, None, None, SUMMARY_LIMIT)
            details = await self.core.lane_details(reader, lanes)
            around = await self.core.surroundings(reader, child)
        summary = ChildSummary(revision=child.revision)
        for detail in details:
            label = rules.lane_next_action(detail.lane, detail.items, detail.open_blockers, around)
            summary.lanes.append(lane_summary(detail.lane, label))
            for item in detail.items:
                summary.items.append(item_summary(item, rules.item_next_action(item, around)))
        return summary

    async def child_escalations(
        self, principal: Principal, parent_id: str, child_id: str
    ) -> list[Escalation]:
        permission = GrantPermission.ESCALATIONS
        async with self._child_read(principal, parent_id, child_id, permission) as (reader, _):
            escalations = await reader.open_escalations(child_id)
        # Ids, reasons and times only: who it went to (the child's people) stays private.
        return [replace(e, escalated_to=[]) for e in escalations]

    async def assign_child_work(
        self, principal: Principal, assign: AssignChildWorkInput
    ) -> ItemSummary:
        """Place a child's item on one worker (its placement's ``worker_id``)."""
        lane_id, item_id = assign.lane_id, assign.item_id
        async with self._parent_action(
            principal, assign.parent_id, assign.child_id, GrantPermission.ASSIGN
        ) as (tx, child, effects):
            item = await self.core.item_in(tx, assign.child_id, lane_id, item_id)
            if item.state not in _ASSIGNABLE or item.state in TERMINAL_ITEM_STATES:
                raise IllegalTransition(
                    f"item {item_id} is {item.state.value}: only work not yet leased is assigned"
                )
            placement = dict(item.placement or {})
            placement["worker_id"] = assign.worker_id
            problems = rules.placement_problems(placement)
            if problems:
                raise InvalidArgument.single("worker_id", "; ".join(problems))
            item.placement = placement
            item.update_time = tx.now
            await tx.update_items([item])
            if item.state == ItemState.QUEUED:
                effects.ready_classes.add(item.worker_class)
            assigned = _parent_action_event(
                "ASSIGN", assign.parent_id, lane_id, item_id, workerId=assign.worker_id
            )
            await self.core.append_events(tx, child, [assigned], principal.name)
            around = await self.core.surroundings(tx, child)
            return item_summary(item, rules.item_next_action(item, around))

    async def steer_child_work(
        self, principal: Principal, steer: SteerChildWorkInput
    ) -> LaneSummary:
        """Set a child lane's priority and that of its queued (not yet leased) items."""
        lane_id = steer.lane_id
        async with self._parent_action(
            principal, steer.parent_id, steer.child_id, GrantPermission.STEER
        ) as (tx, child, effects):
            lane = await self.core.lane_in(tx, steer.child_id, lane_id)
            if lane.state != LaneState.ACTIVE:
                raise IllegalTransition(f"lane {lane_id} is {lane.state.value}")
            previous = lane.priority
            lane.priority = steer.priority
            lane.update_time = tx.now
            await tx.update_lane(lane)
            items = await tx.lane_items([lane_id])
            steered = [i for i in items if i.state in (ItemState.QUEUED, ItemState.WAITING)]
            for item in steered:
                item.priority = steer.priority
                item.update_time = tx.now
                if item.state == ItemState.QUEUED:
                    effects.ready_classes.add(item.worker_class)
            if steered:
                await tx.update_items(steered)
            event = _parent_action_event(
                "STEER",
                steer.parent_id,
                lane_id,
                priority=steer.priority,
                previousPriority=previous,
            )
            await self.core.append_events(tx, child, [event], principal.name)
            blockers = await tx.lane_blockers([lane_id])
            around = await self.core.surroundings(tx, child)
            label = rules.lane_next_action(lane, items, sum(1 for b in blockers if b.open), around)
            return lane_summary(lane, label)

    async def escalate_child_work(
        self, principal: Principal, escalate: EscalateChildWorkInput
    ) -> Escalation:
        """Raise an escalation to the child's digest owner (an ESCALATED event and a digest
        line in the child)."""
        parent_id, child_id = escalate.parent_id, escalate.child_id
        lane_id, item_id = escalate.lane_id, escalate.item_id
        async with self._parent_action(
            principal, parent_id, child_id, GrantPermission.ESCALATE
        ) as (tx, child, effects):
            await self.core.lane_in(tx, child_id, lane_id)
            if item_id:
                await self.core.item_in(tx, child_id, lane_id, item_id)
            recipients = [child.config.digest_owner or "digest owner"]
            escalation = Escalation(
                escalation_id=new_id("esc"),
                coordinator_id=child_id,
                lane_id=lane_id,
                item_id=item_id,
                reason=escalate.reason,
                escalated_to=recipients,
                open=True,
                create_time=tx.now,
            )
            await tx.insert_escalations([escalation])
            escalated = NewEvent(
                EventType.ESCALATED,
                lane_id=lane_id,
                item_id=item_id,
                data={"by": "parent", "parentCoordinatorId": parent_id, "to": recipients},
            )
            recorded = _parent_action_event(
                "ESCALATE", parent_id, lane_id, item_id, escalationId=escalation.escalation_id
            )
            await self.core.append_events(tx, child, [escalated, recorded], principal.name)
            effects.note(DigestKind.ESCALATED, lane_id, item_id, escalate.reason)
            return replace(escalation, escalated_to=[])

    # ------------------------------------------------------------------ the grant check

    async def _check_child(
        self,
        reader: Reader,
        principal: Principal,
        parent_id: str,
        child: Coordinator | None,
        child_id: str,
        permission: GrantPermission,
        now: datetime,
    ) -> Coordinator:
        """The child, if ``principal`` may act for the parent with ``permission``'s access,
        the child names that parent and a grant of it carrying ``permission`` is live at
        ``now``; PERMISSION_DENIED otherwise (the same for an unknown child)."""
        parent = await reader.get_coordinator(parent_id)
        if parent is None:
            raise NotFound(f"work coordinator {parent_id} not found")
        access = CHILD_ACCESS[permission]
        authorize(principal, parent, access)
        denied = PermissionDenied(
            f"work coordinator {parent_id} holds no live {permission.value} grant from {child_id}"
        )
        if child is None or child.config.parent_coordinator_id != parent_id:
            raise denied
        grants = await reader.grants_between(child_id, parent_id)
        if not any(g.allows(permission, now) for g in grants):
            raise denied
        # The parent's work stops with its own switch as well as with the child's.
        await self.core.require_enabled(reader, principal, parent, access)
        await self.core.require_enabled(reader, principal, child, access)
        return child

    @asynccontextmanager
    async def _child_read(
        self, principal: Principal, parent_id: str, child_id: str, permission: GrantPermission
    ) -> AsyncIterator[tuple[Reader, Coordinator]]:
        """A read of the child for a parent holding a live ``permission`` grant."""
        async with self.core.store.read() as reader:
            child = await self._check_child(
                reader,
                principal,
                parent_id,
                await reader.get_coordinator(child_id),
                child_id,
                permission,
                self.core.clock.now(),
            )
            yield reader, child

    @asynccontextmanager
    async def _parent_action(
        self, principal: Principal, parent_id: str, child_id: str, permission: GrantPermission
    ) -> AsyncIterator[tuple[Tx, Coordinator, Effects]]:
        """A write transaction on the child for a parent's action: the child's lock is held
        while the grant is checked, so a revocation committed first is always seen."""
        effects = Effects(changed=True)
        async with self.core.store.write(child_id) as tx:
            child = await self._check_child(
                tx, principal, parent_id, tx.coordinator, child_id, permission, tx.now
            )
            yield tx, child, effects
            await self.core.before_commit(tx, child, effects)
        await self.core.announce(child, effects)
