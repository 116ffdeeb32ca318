"""Work coordinators: create, read, list and reconfigure them."""

from __future__ import annotations

from dataclasses import replace

from workcoord.kit.errors import AlreadyExists, EtagMismatch, InvalidArgument, PermissionDenied

from .. import requests, rules, stops
from ..auth import Access, Principal, may, require_org_admin, require_platform_admin
from ..budgets import BudgetLimit
from ..inputs import CreateCoordinatorInput, ListCoordinatorsInput, UpdateCoordinatorInput
from ..model import (
    DEFAULT_REVIEW_POLICY,
    Coordinator,
    CoordinatorConfig,
    EventType,
    Item,
    ItemKind,
    ItemState,
    Lane,
    LaneState,
    NewEvent,
    Scope,
    Template,
)
from ..ports import LaneCursor, Reader, Tx
from ..results import Page
from . import budgeting
from ._base import new_id
from .paging import PageRequest
from .transitions import Transitions


class CoordinatorService(Transitions):
    """The work coordinator commands (``engine.coordinators``)."""

    async def create_coordinator(
        self, principal: Principal, input: CreateCoordinatorInput
    ) -> Coordinator:
        """Create a GLOBAL (platform admins) or ORG (its admins) work coordinator."""
        spec, request_id, fingerprint = input.spec, input.request_id, input.fingerprint
        if spec.scope is None:
            raise InvalidArgument.single("work_coordinator.scope", "is required")
        if spec.scope == Scope.GLOBAL:
            require_platform_admin(principal)
            if spec.org_slug:
                raise InvalidArgument.single(
                    "work_coordinator.org_slug", "must be empty for a GLOBAL work coordinator"
                )
        else:
            if not spec.org_slug:
                raise InvalidArgument.single(
                    "work_coordinator.org_slug", "is required for an ORG work coordinator"
                )
            require_org_admin(principal, spec.org_slug)
        config = rules.apply_config_changes(CoordinatorConfig(), spec.changes)
        rules.require_digest_owner(spec.scope, config)
        async with self.core.store.write() as tx:
            # Scoped to the org the caller was just authorized for: never another org's.
            scope = requests.coordinators_scope(spec.org_slug)
            made = await requests.replayed(tx, scope, request_id, fingerprint)
            if made is not None:
                existing = await tx.get_coordinator(made)
                if existing is not None:
                    return existing
            if spec.scope == Scope.ORG and await tx.get_org(spec.org_slug) is None:
                raise InvalidArgument.single(
                    "work_coordinator.org_slug", f"no such org: {spec.org_slug!r}"
                )
            if spec.scope == Scope.GLOBAL:
                existing_global = await tx.list_coordinators("", 10_000, None)
                if any(c.scope == Scope.GLOBAL for c in existing_global):
                    raise AlreadyExists("the installation already has its GLOBAL work coordinator")
            await self._check_parent(tx, spec.scope, config.parent_coordinator_id)
            coordinator = Coordinator(
                coordinator_id=new_id("wc"),
                scope=spec.scope,
                org_slug=spec.org_slug,
                display_name=spec.display_name,
                enabled=True if spec.enabled is None else spec.enabled,
                revision=0,
                config=config,
                config_version=1,
                create_time=tx.now,
                update_time=tx.now,
            )
            await tx.insert_coordinator(coordinator, request_id)
            await requests.remember(
                tx, scope, request_id, fingerprint, coordinator.coordinator_id, tx.now
            )
            await self.core.append_events(
                tx,
                coordinator,
                [NewEvent(EventType.COORDINATOR_CREATED, data={"scope": spec.scope.value})],
                principal.name,
            )
            return coordinator

    async def _check_parent(self, reader: Reader, scope: Scope, parent_id: str) -> None:
        if not parent_id:
            return
        field_name = "work_coordinator.parent_coordinator_id"
        if scope == Scope.GLOBAL:
            raise InvalidArgument.single(field_name, "a GLOBAL work coordinator has no parent")
        parent = await reader.get_coordinator(parent_id)
        if parent is None or parent.scope != Scope.GLOBAL:
            raise InvalidArgument.single(field_name, "must name the GLOBAL work coordinator")

    async def get_coordinator(self, principal: Principal, coordinator_id: str) -> Coordinator:
        async with self.core.store.read() as reader:
            return await self.core.coordinator_for(reader, principal, coordinator_id)

    async def list_coordinators(
        self, principal: Principal, input: ListCoordinatorsInput
    ) -> Page[Coordinator]:
        """A page of the work coordinators the caller may read (of one org, if named)."""
        org_slug = input.org_slug
        request = PageRequest.parse(
            input.page_size, input.page_token, ("ListWorkCoordinators", org_slug)
        )
        slugs = [org_slug] if org_slug else None
        async with self.core.store.read() as reader:
            found = await reader.list_coordinators(request.after_id, 10_000, slugs)
            platform_on = await reader.platform_enabled()
        rules.require_coordination_on(principal, None, platform_on, Access.READ)
        visible = [c for c in found if may(principal, c, Access.READ)]
        # The switch hides what it refuses (a work key's switched-off coordinators); with
        # nothing left but those, the caller learns why rather than getting an empty list.
        reachable = [
            c
            for c in visible
            if rules.switch_refusal(principal, c, platform_on, Access.READ) is None
        ]
        if visible and not reachable:
            rules.require_coordination_on(principal, visible[0], platform_on, Access.READ)
        return request.page(reachable[: request.fetch], lambda c: [c.coordinator_id])

    async def update_coordinator(
        self, principal: Principal, input: UpdateCoordinatorInput
    ) -> Coordinator:
        """Reconfigure a work coordinator; narrowing its action classes stops what used them."""
        coordinator_id, spec, etag = input.coordinator_id, input.spec, input.etag
        if input.budget is not None and not principal.is_human:
            raise PermissionDenied(
                "work_coordinator.budget: only a human administrator may set a budget",
                metadata={"field": "work_coordinator.budget"},
            )
        async with self.core.command(principal, coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            effects,
        ):
            if etag and etag != str(coordinator.config_version):
                raise EtagMismatch()
            config = rules.apply_config_changes(coordinator.config, spec.changes)
            if "digest_owner" in spec.changes:
                rules.require_digest_owner(coordinator.scope, config)
            await self._check_parent(tx, coordinator.scope, config.parent_coordinator_id)
            removed = set(coordinator.config.allowed_action_classes) - set(
                config.allowed_action_classes
            )
            approval_added = _ship_approval(config) and not _ship_approval(coordinator.config)
            changed = sorted(spec.changes)
            if spec.enabled is not None and spec.enabled != coordinator.enabled:
                coordinator.enabled = spec.enabled
                changed.append("enabled")
            if spec.display_name:
                coordinator.display_name = spec.display_name
                changed.append("display_name")
            budget_events: list[NewEvent] = []
            if input.budget is not None:
                old = coordinator.budget
                coordinator.budget = _new_budget(old, input.budget)
                if coordinator.budget != old:
                    changed.append("budget")
                    budget_events, _ = await budgeting.limit_changed(
                        tx, coordinator, "", old, coordinator.budget
                    )
            coordinator.config = config
            coordinator.config_version += 1
            coordinator.update_time = tx.now
            await tx.update_coordinator(coordinator)
            events = [NewEvent(EventType.COORDINATOR_UPDATED, data={"fields": changed})]
            if removed:
                events.append(await self._narrowed(tx, coordinator, removed))
            if approval_added:
                await self._approval_required(tx, coordinator, events)
            events += budget_events
            await self.core.append_events(tx, coordinator, events, principal.name)
            effects.changed = True
            # Capacity or the switch may have changed: wake every waiting worker.
            effects.ready_classes.update(coordinator.config.class_capacity)
            return coordinator

    @staticmethod
    async def _narrowed(tx: Tx, coordinator: Coordinator, removed: set[str]) -> NewEvent:
        """The POLICY_NARROWED event of a narrowing that removed ``removed`` action classes.
        Nothing else is written: the live attempts whose item declares a removed class are
        told ``stop POLICY_CHANGED`` by their next heartbeat, which no longer extends their
        lease, and may not complete or checkpoint (``stops.require_allowed``); their queued
        items wait behind the ``policy`` gate (``leasability``), until a human widens the
        policy again. Widening changes nothing of live work."""
        cid = coordinator.coordinator_id
        live = await tx.live_attempts(cid, None)
        items = {i.item_id: i for i in await tx.items_by_ids(sorted({a.item_id for a in live}))}
        stopping = sorted(
            a.lease_id
            for a in live
            if a.item_id in items and set(items[a.item_id].action_classes) & removed
        )
        held = sorted(
            i.item_id for i in await tx.queued_items(cid) if set(i.action_classes) & removed
        )
        data = {
            "fields": ["action_policy"],
            "removed": sorted(removed),
            "stopping": stopping,
            "held": held,
        }
        return NewEvent(EventType.POLICY_NARROWED, data=data)

    async def _approval_required(
        self, tx: Tx, coordinator: Coordinator, events: list[NewEvent]
    ) -> None:
        """Shipping now needs a human's approval (the coordinator's review policy turned
        ``ship_requires_approval`` on): every unfinished SHIP item of a STANDARD lane that
        inherits the setting and was made without an approval now requires one. A queued one
        awaits it at once (``APPROVAL_REQUESTED``); a waiting one will when it is ready; a live
        one's attempt is told ``stop POLICY_CHANGED`` by its next heartbeat, may not complete
        or checkpoint, and its item awaits the approval once the attempt ends
        (``stops.approval_withdrawn``). One ``POLICY_NARROWED`` event names them
        (``data.stopping``: the live leases, ``data.held``: the items now awaiting approval),
        before the items' own events."""
        affected = await _unapproved_ships(tx, coordinator.coordinator_id)
        stopping: list[str] = []
        held: list[str] = []
        item_events: list[NewEvent] = []
        for item in affected:
            item.requires_approval = True
            item.update_time = tx.now
            if item.state == ItemState.QUEUED:
                self._await_approval(tx, item, item_events)
                held.append(item.item_id)
            elif item.state in (ItemState.LEASED, ItemState.RUNNING):
                item.stop_reason = stops.APPROVAL_NOW_REQUIRED
                # A live item names its live attempt (the invariants' rule 4).
                stopping.append(item.current_lease_id)
        await tx.update_items(affected)
        data = {
            "fields": ["review_policy.ship_requires_approval"],
            "stopping": sorted(stopping),
            "held": sorted(held),
        }
        events.append(NewEvent(EventType.POLICY_NARROWED, data=data))
        events.extend(item_events)


def _ship_approval(config: CoordinatorConfig) -> bool:
    """Whether the coordinator's review policy (over the defaults) requires shipping to be
    approved."""
    return bool(config.review_policy.over(DEFAULT_REVIEW_POLICY).ship_requires_approval)


async def _unapproved_ships(tx: Tx, coordinator_id: str) -> list[Item]:
    """The unfinished SHIP items made without an approval in the coordinator's ACTIVE
    STANDARD lanes that inherit ``ship_requires_approval`` (a lane's own value is fixed)."""
    lanes: list[Lane] = []
    after: LaneCursor | None = None
    while True:
        page = await tx.list_lanes(coordinator_id, LaneState.ACTIVE, after, _LANE_PAGE)
        lanes.extend(
            lane
            for lane in page
            if lane.template == Template.STANDARD
            and lane.review_policy.ship_requires_approval is None
        )
        if len(page) < _LANE_PAGE:
            break
        after = (page[-1].create_time, page[-1].lane_id)
    if not lanes:
        return []
    return [
        item
        for item in await tx.lane_items([lane.lane_id for lane in lanes])
        if item.kind == ItemKind.SHIP
        and not item.requires_approval
        and item.state in _UNAPPROVED_STATES
    ]


_LANE_PAGE = 500
_UNAPPROVED_STATES = frozenset(
    {ItemState.WAITING, ItemState.QUEUED, ItemState.LEASED, ItemState.RUNNING}
)


def _new_budget(old: BudgetLimit | None, limits: dict[str, int | None]) -> BudgetLimit | None:
    """``old`` with ``limits`` set (a None value removes that limit); None when none is left."""
    new = replace(old or BudgetLimit(), **limits)
    return new if new.limits() else None
