"""The lease engine: every command of the coordinator, one transaction each.

Each command opens a write transaction on its work coordinator (which locks the coordinator's
row, serialising changes to it), authorizes the caller against current state, applies the
rules, appends its events with the next revisions, and commits. Notifications are published
only after the commit, as wake-up hints.

The commands are grouped by concern, one service object per module, over a shared core
(:class:`EngineCore`, :mod:`._base`). :class:`Engine` is that core with one service attached
per concern: ``engine.coordinators``, ``engine.lanes``, ``engine.workers`` (registration),
``engine.leasing``, ``engine.attempts``,
``engine.fences``, ``engine.follow_ups``, ``engine.maintenance``, ``engine.reads``,
``engine.usage`` (what attempts spent), and the tenancy concerns ``engine.membership`` (orgs,
users, members), ``engine.credentials`` (bearer authentication, admin tokens, work keys),
``engine.grants`` (a child's grants to its parent), ``engine.children`` (what a parent does
with them), ``engine.sessions`` (browser sessions), ``engine.platform`` (the platform's
settings), and ``engine.tracker_connections`` (the credentials a work coordinator's tickets are
closed with). Each command takes the caller's principal and one input (:mod:`..inputs`), e.g.
``await engine.attempts.complete(principal, CompleteInput(...))``.

Module constants live where they are used (patch them there): ``BACKSTOP_POLL_SECONDS`` in
:mod:`.leasing`, for example.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from workcoord.kit.bus import NotificationBus
from workcoord.kit.clock import Clock
from workcoord.kit.secrets import TokenSource

from ..auth import AccessTokens, Principal
from ..ports import Store
from ..results import PendingActionsRun
from ..tickets import TicketTracker
from ._base import Effects, EngineCore, EngineService, new_id
from .attempts import AttemptService
from .children import Children
from .coordinators import CoordinatorService
from .credentials import Credentials
from .fences import FenceService
from .follow_ups import PENDING_ACTION_RETRY, TICKET_SYNC_BATCH, FollowUpService
from .lanes import LaneService
from .leasing import BACKSTOP_POLL_SECONDS, LeasingService
from .mail import MailService
from .maintenance import ESCALATION_BATCH, MaintenanceService
from .membership import Membership
from .paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    PageRequest,
    decode_page_token,
    encode_page_token,
    page_of,
    page_size,
)
from .parent_grants import ParentGrants
from .platform import Platform
from .reads import ReadService
from .sessions import Sessions
from .spend import UsageService
from .tracker_connections import TrackerConnections, TrackerFactory
from .transitions import CLOSE_TICKET, TICKET_CLOSED
from .webhooks import WebhookService
from .workers import WorkerRegistry

__all__ = [
    "BACKSTOP_POLL_SECONDS",
    "CLOSE_TICKET",
    "DEFAULT_PAGE_SIZE",
    "ESCALATION_BATCH",
    "MAX_PAGE_SIZE",
    "PENDING_ACTION_RETRY",
    "TICKET_CLOSED",
    "TICKET_SYNC_BATCH",
    "AttemptService",
    "CoordinatorService",
    "Effects",
    "Engine",
    "EngineCore",
    "EngineService",
    "FenceService",
    "FollowUpService",
    "LaneService",
    "LeasingService",
    "MailService",
    "MaintenanceService",
    "PageRequest",
    "ReadService",
    "TrackerConnections",
    "UsageService",
    "WebhookService",
    "WorkerRegistry",
    "decode_page_token",
    "encode_page_token",
    "new_id",
    "page_of",
    "page_size",
]


class Engine(EngineCore):
    """The coordinator's commands and reads: the shared core, with one service per concern.

    A service is attached in ``__init__`` as ``self.<concern> = <Concern>Service(self, …)``:
    it gets the core (this engine) and the sibling services it calls, nothing else."""

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
        tracker_factory: TrackerFactory | None = None,
        outbound_allowed_hosts: Collection[str] = (),
        access_tokens: AccessTokens | None = None,
    ) -> None:
        super().__init__(
            store,
            bus,
            clock,
            tokens=tokens,
            uniform=uniform,
            service_key=service_key,
            trackers=trackers,
            tracker_factory=tracker_factory,
            outbound_allowed_hosts=outbound_allowed_hosts,
            access_tokens=access_tokens,
        )
        self.coordinators = CoordinatorService(self)
        self.lanes = LaneService(self)
        self.fences = FenceService(self)
        self.workers = WorkerRegistry(self)
        self.leasing = LeasingService(self, self.fences)
        self.attempts = AttemptService(self)
        self.tracker_connections = TrackerConnections(self)
        self.follow_ups = FollowUpService(self, self.tracker_connections)
        self.webhooks = WebhookService(self, self.tracker_connections)
        self.maintenance = MaintenanceService(self, self.fences, self.follow_ups)
        self.reads = ReadService(self)
        self.usage = UsageService(self)
        self.mail = MailService(self)
        # The tenancy concerns.
        self.membership = Membership(self)
        self.credentials = Credentials(self)
        self.grants = ParentGrants(self)
        self.children = Children(self)
        self.sessions = Sessions(self)
        self.platform = Platform(self)

    async def run_pending_actions(
        self, principal: Principal, coordinator_id: str
    ) -> PendingActionsRun:
        """Try every due pending action once (the core starts it after a lane goes LIVE)."""
        return await self.follow_ups.run_pending_actions(principal, coordinator_id)
