"""The engine's core: one transaction per command, its effects after commit, shared lane reads.

Each concern of the engine is a service object (an :class:`EngineService`) over one
:class:`EngineCore`, which holds the state they share (store, bus, clock, keys, caches). The
core's public methods (:meth:`~EngineCore.command`, :meth:`~EngineCore.append_events`,
:meth:`~EngineCore.before_commit`, :meth:`~EngineCore.announce`,
:meth:`~EngineCore.lane_details`, :meth:`~EngineCore.surroundings`, …) are the seams every
service (lanes, leasing, …, and the tenancy concerns: ``membership``, ``credentials``, ``grants``,
``children``, ``sessions``, ``platform``) builds its commands on.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets as _secrets
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from workcoord.kit.bus import Notification, NotificationBus
from workcoord.kit.clock import Clock
from workcoord.kit.errors import NotFound
from workcoord.kit.secrets import SystemTokenSource, TokenSource, hash_secret

from .. import rules
from ..auth import RECOVERY, Access, AccessTokens, Principal, PrincipalCache, authorize
from ..group_commit import GroupCommitter
from ..leasability import Surroundings, key_holders
from ..model import (
    Attempt,
    Coordinator,
    DigestEntry,
    DigestKind,
    Item,
    Lane,
    LaneState,
    NewEvent,
    UsageTotal,
)
from ..ports import LaneCursor, Reader, Store, Tx, WriteLock
from ..results import LaneDetail, Page, PendingActionsRun
from ..tickets import TicketTracker, TrackerConnection
from .gates import Occupancy
from .lease_replay import LEASE_TOKEN_SECRET, lease_token_key
from .paging import PageRequest, lane_key
from .view_cache import ViewCache

_log = logging.getLogger("workcoord.coordinator.engine")


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.warning("follow-up work failed: %s", task.exception())


def new_id(prefix: str) -> str:
    """A server-assigned id: a short readable prefix and 80 random bits."""
    return f"{prefix}_{_secrets.token_hex(10)}"


@dataclass(slots=True)
class Effects:
    """What a command leaves to do around its commit: digest lines and usage roll-ups to
    write before it, and the notification and ticket closures to start after it."""

    ready_classes: set[str] = field(default_factory=set)
    changed: bool = False
    # Digest lines (kind, lane id, item id, action id, reason), written before commit.
    digest: list[tuple[DigestKind, str, str, str, str]] = field(default_factory=list)
    # Tickets of lanes that just went LIVE: their closure is tried right after commit.
    close_tickets: bool = False
    # Usage roll-ups the worker writes spent, added last (see EngineCore.before_commit).
    usage: list[UsageTotal] = field(default_factory=list)

    def note(
        self,
        kind: DigestKind,
        lane_id: str,
        item_id: str = "",
        reason: str = "",
        action_id: str = "",
    ) -> None:
        """Add a line to today's digest of the work coordinator."""
        self.digest.append((kind, lane_id, item_id, action_id, reason))

    def digest_entries(self, coordinator: Coordinator, now: datetime) -> list[DigestEntry]:
        """The noted lines as digest entries of ``now``'s UTC day, for the digest owner."""
        return [
            DigestEntry(
                entry_id=new_id("dg"),
                coordinator_id=coordinator.coordinator_id,
                day=now.date().isoformat(),
                owner=coordinator.config.digest_owner,
                kind=kind,
                time=now,
                lane_id=lane_id,
                item_id=item_id,
                action_id=action_id,
                reason=reason,
            )
            for kind, lane_id, item_id, action_id, reason in self.digest
        ]


class EngineCore(ABC):
    """State and plumbing shared by every concern of the engine."""

    def __init__(
        self,
        store: Store,
        bus: NotificationBus,
        clock: Clock,
        *,
        tokens: TokenSource | None = None,
        uniform: Callable[[], float] | None = None,
        service_key: str | None = None,
        trackers: Mapping[str, TicketTracker] | None = None,
        tracker_factory: Callable[[TrackerConnection, str], TicketTracker] | None = None,
        outbound_allowed_hosts: Collection[str] = (),
        access_tokens: AccessTokens | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.clock = clock
        self.tokens = tokens or SystemTokenSource()
        self.uniform = uniform or random.random
        # The installation-wide trackers (WORKCOORD_GITHUB_TOKEN): the fallback of tickets no
        # tracker connection serves.
        self.trackers: dict[str, TicketTracker] = dict(trackers or {})
        # Builds a tracker connection's adapter; the hosts outbound calls may reach though
        # private or loopback (WORKCOORD_WEBHOOK_ALLOWED_HOSTS).
        self.tracker_factory = tracker_factory
        self.outbound_allowed_hosts = frozenset(h.lower() for h in outbound_allowed_hosts)
        # The hash of the recovery service's key: a bearer secret hashing to it is RECOVERY.
        self.service_key_hash = hash_secret(service_key) if service_key else ""
        # The identity provider's access tokens, accepted as a user's bearer credential.
        self.access_tokens = access_tokens
        # Lease tokens are derived with it (see lease_replay): never stored, never logged.
        self.lease_key = lease_token_key(service_key)
        self._lease_key_from_service = bool(service_key)
        # Principals of bearer credentials, reused while the credentials epoch stands still.
        self.principals = PrincipalCache()
        # The view's lanes per work coordinator, between calls (see view_cache).
        self.view_cache = ViewCache()
        self._background: set[asyncio.Task[Any]] = set()
        # The revision last announced per coordinator with webhooks (see announce).
        self._announced: dict[str, int] = {}
        self.worker_writes: GroupCommitter[Effects] = GroupCommitter(
            Effects, self.before_commit, self.announce
        )

    async def load_lease_token_key(self) -> None:
        """Without a service key, derive lease tokens from the installation's secret (made on
        first use): a Lease retried after a restart, or on another replica, then answers the
        same tokens. With a service key there is nothing to load."""
        if self._lease_key_from_service:
            return
        async with self.store.write() as tx:
            secret = await tx.installation_secret(LEASE_TOKEN_SECRET, _secrets.token_hex(32))
        self.lease_key = lease_token_key(None, secret)

    # ------------------------------------------------------------------ transactions

    @asynccontextmanager
    async def command(
        self,
        principal: Principal,
        coordinator_id: str,
        access: Access,
        lock: WriteLock = WriteLock.ALL,
    ) -> AsyncIterator[tuple[Tx, Coordinator, Effects]]:
        """One transaction on one work coordinator (held as ``lock`` says), authorized for
        ``access`` and held to the switch (:meth:`require_enabled`), with its effects around
        the commit."""
        effects = Effects()
        async with self.store.write(coordinator_id, lock) as tx:
            coordinator = tx.coordinator
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            authorize(principal, coordinator, access)
            await self.require_enabled(tx, principal, coordinator, access)
            yield tx, coordinator, effects
            await self.before_commit(tx, coordinator, effects)
        await self.announce(coordinator, effects)

    async def before_commit(self, tx: Tx, coordinator: Coordinator, effects: Effects) -> None:
        """Before commit: store the digest lines ``effects`` noted, then add the usage it
        gathered. The roll-ups go last, after every attempt row the transaction locks (Lock
        order, docs/architecture.md): a Heartbeat holds its attempts' rows while it waits for
        the roll-up rows, so a group of worker writes must never hold those while it waits for
        an attempt."""
        if effects.digest:
            await tx.insert_digest_entries(effects.digest_entries(coordinator, tx.now))
        if effects.usage:
            await tx.add_usage(effects.usage)

    async def announce(self, coordinator: Coordinator, effects: Effects) -> None:
        """After commit: wake waiting workers and feeds, start ticket closures."""
        # A commit that appended events to a coordinator with webhooks may have written outbox
        # rows: it is published even with nothing else to say, so that a sender waiting on
        # another replica wakes (engine/outbox_wake.py).
        outbox = bool(coordinator.webhook_filters) and self._revision_moved(coordinator)
        if effects.changed or effects.ready_classes or outbox:
            # No ready class: the feed reads the new events, waiting workers sleep on.
            await self.bus.publish(
                Notification(
                    coordinator.coordinator_id,
                    coordinator.revision,
                    frozenset(effects.ready_classes),
                    log_only=not effects.ready_classes,
                )
            )
        if coordinator.webhook_filters:
            # The flush may have written outbox rows: wake a sender waiting on this replica
            # (a spurious wake costs one read of the outbox).
            self.outbox_written()
        if effects.close_tickets:
            self.spawn(self.run_pending_actions(RECOVERY, coordinator.coordinator_id))

    def _revision_moved(self, coordinator: Coordinator) -> bool:
        """Whether ``coordinator``'s revision moved since this replica last announced it."""
        coordinator_id = coordinator.coordinator_id
        moved = self._announced.get(coordinator_id) != coordinator.revision
        self._announced[coordinator_id] = coordinator.revision
        return moved

    def outbox_written(self) -> None:
        """Wake a waiting webhook sender (``engine.webhooks``), if there is one."""
        webhooks = getattr(self, "webhooks", None)
        if webhooks is not None:
            webhooks.written.set()

    async def append_events(
        self, tx: Tx, coordinator: Coordinator, events: Sequence[NewEvent], actor: str
    ) -> None:
        """Append ``events`` with the coordinator's next revisions (none: nothing changes)."""
        if events:
            coordinator.revision = await tx.append(coordinator, events, actor)

    @asynccontextmanager
    async def open_for_workers(self, coordinator_id: str) -> AsyncIterator[tuple[Tx, Coordinator]]:
        """The shared transaction of a group of worker writes (see group_commit), beside any
        claim (``WriteLock.WORKER_WRITES``). Whether coordination is on is checked by each
        member once it is authorized: a caller who may not see the coordinator must not learn
        that it is switched off."""
        async with self.store.write(coordinator_id, WriteLock.WORKER_WRITES) as tx:
            coordinator = tx.coordinator
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            yield tx, coordinator

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        """Run follow-up work after a commit without holding the caller; keep a reference so
        the task is not collected, and log (never raise) its failure."""
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_log_failure)

    async def drain(self) -> None:
        """Wait for follow-up work started by earlier commands (tests, clean shutdown)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    @abstractmethod
    async def run_pending_actions(
        self, principal: Principal, coordinator_id: str
    ) -> PendingActionsRun:
        """Try every due pending action once (the follow-ups concern provides it)."""

    # ------------------------------------------------------------------ authorization

    async def require_enabled(
        self, reader: Reader, principal: Principal, coordinator: Coordinator, access: Access
    ) -> None:
        """Hold an authorized call to the switch: COORDINATION_DISABLED while coordination is
        switched off for the platform or ``coordinator``, unless the switch leaves this access
        to this principal (a person reading or administering; see
        :func:`~workcoord.coordinator.domain.rules.switch_refusal`)."""
        rules.require_coordination_on(
            principal, coordinator, await reader.platform_enabled(), access
        )

    async def coordinator_for(
        self,
        reader: Reader,
        principal: Principal,
        coordinator_id: str,
        *,
        access: Access = Access.READ,
    ) -> Coordinator:
        """The work coordinator, if ``principal`` may ``access`` it now (authorized, then held
        to the switch), read outside a command: unknown and hidden are both NOT_FOUND."""
        coordinator = await reader.get_coordinator(coordinator_id)
        return await self.admit(reader, principal, coordinator_id, coordinator, access)

    async def admit(
        self,
        reader: Reader,
        principal: Principal,
        coordinator_id: str,
        coordinator: Coordinator | None,
        access: Access,
    ) -> Coordinator:
        """:meth:`coordinator_for` of a work coordinator read already (None: unknown)."""
        if coordinator is None:
            raise NotFound(f"work coordinator {coordinator_id} not found")
        # Authorize before revealing anything (even that coordination is switched off).
        authorize(principal, coordinator, access)
        await self.require_enabled(reader, principal, coordinator, access)
        return coordinator

    # ------------------------------------------------------------------ lanes

    async def lane_in(self, reader: Reader, coordinator_id: str, lane_id: str) -> Lane:
        """The lane ``lane_id`` of the work coordinator (NOT_FOUND if it is another's)."""
        lane = await reader.get_lane(lane_id)
        if lane is None or lane.coordinator_id != coordinator_id:
            raise NotFound(f"lane {lane_id} not found")
        return lane

    async def item_in(
        self, reader: Reader, coordinator_id: str, lane_id: str, item_id: str
    ) -> Item:
        """The item ``item_id`` of that lane of the work coordinator (else NOT_FOUND)."""
        item = await reader.get_item(item_id)
        if item is None or item.coordinator_id != coordinator_id or item.lane_id != lane_id:
            raise NotFound(f"item {item_id} not found")
        return item

    async def lane_detail(
        self, reader: Reader, lane: Lane, with_attempts: bool = False
    ) -> LaneDetail:
        details = await self.lane_details(reader, [lane], with_attempts)
        return details[0]

    async def lane_details(
        self, reader: Reader, lanes: Sequence[Lane], with_attempts: bool = False
    ) -> list[LaneDetail]:
        """Each lane with its items, blockers and tickets (and attempts, if asked), in order."""
        ids = [lane.lane_id for lane in lanes]
        items = await reader.lane_items(ids) if ids else []
        blockers = await reader.lane_blockers(ids) if ids else []
        tickets = await reader.lane_tickets(ids) if ids else []
        by_lane: dict[str, LaneDetail] = {
            lane.lane_id: LaneDetail(lane=lane, items=[], attempts={}) for lane in lanes
        }
        if with_attempts and items:
            for attempt in await reader.item_attempts([i.item_id for i in items]):
                by_lane[attempt.lane_id].attempts.setdefault(attempt.item_id, []).append(attempt)
        for item in items:
            by_lane[item.lane_id].items.append(item)
        for blocker in blockers:
            by_lane[blocker.lane_id].blockers.append(blocker)
        for ticket in tickets:
            by_lane[ticket.lane_id].tickets.append(ticket)
        return [by_lane[i] for i in ids]

    async def lane_page(
        self,
        reader: Reader,
        coordinator_id: str,
        state: LaneState | None,
        request: PageRequest,
        after: LaneCursor | None,
    ) -> Page[LaneDetail]:
        """A page of the coordinator's lanes, newest first, with their details."""
        lanes = await reader.list_lanes(coordinator_id, state, after, request.fetch)
        page = request.page(lanes, lane_key)
        details = await self.lane_details(reader, page.items)
        return Page(details, page.next_page_token)

    async def occupancy(
        self,
        reader: Reader,
        coordinator: Coordinator,
        items: Sequence[Item],
        live: Sequence[Attempt] | None = None,
    ) -> Occupancy:
        """Live leases (``live`` if the caller read them already), holders of the exclusive
        keys ``items`` need, and the workers."""
        cid = coordinator.coordinator_id
        if live is None:
            live = await reader.live_attempts(cid, None)
        workers = await reader.list_workers(cid, "", 10_000)
        keys = sorted({k for i in items for k in rules.exclusive_keys(i)})
        holders = await reader.live_exclusive_holders(cid, keys) if keys else {}
        usage = rules.class_usage(live, coordinator.config.class_capacity)
        fenced = {w.worker_id for w in workers if w.fence}
        fenced_leases = {a.lease_id: a.worker_id for a in live if a.worker_id in fenced}
        return Occupancy(usage, holders, workers, fenced_leases)

    async def surroundings(self, reader: Reader, coordinator: Coordinator) -> Surroundings:
        """What the labels of the coordinator's queued items read besides them: per worker
        class (live attempts, capacity), the holders of exclusive keys, and now."""
        live = await reader.live_attempts(coordinator.coordinator_id, None)
        return Surroundings(
            now=self.clock.now(),
            capacity=rules.class_usage(live, coordinator.config.class_capacity).capacity,
            key_holders=key_holders(live),
            allowed_action_classes=frozenset(coordinator.config.allowed_action_classes),
        )


class EngineService:
    """One concern of the engine (lanes, leasing, attempts, …): a service object over the
    shared :class:`EngineCore`, which it reaches as ``self.core``."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core
