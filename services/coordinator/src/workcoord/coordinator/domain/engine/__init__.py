"""The lease engine: every command of the coordinator, one transaction each.

Each command opens a write transaction on its work coordinator (which locks the coordinator's
row, serialising changes to it), authorizes the caller against current state, applies the
rules, appends its events with the next revisions, and commits. Notifications are published
only after the commit, as wake-up hints.

The commands are grouped by concern, one module each, over a shared core (:mod:`._base`);
:class:`Engine` composes them. The tenancy concerns are service objects over that core,
attributes of the engine: ``engine.membership`` (orgs, users, members), ``engine.credentials``
(bearer authentication, admin tokens, work keys), ``engine.grants`` (a child's grants to its
parent), ``engine.children`` (what a parent does with them), ``engine.sessions`` (browser
sessions) and ``engine.platform`` (the platform's settings). Module constants live where they
are used (patch them there): ``BACKSTOP_POLL_SECONDS`` in :mod:`.leasing`, for example.
"""

from __future__ import annotations

from functools import cached_property

from ._base import Effects, EngineCore, new_id
from .attempts import AttemptCommands
from .children import Children
from .coordinators import CoordinatorCommands
from .credentials import Credentials
from .follow_ups import PENDING_ACTION_RETRY, TICKET_SYNC_BATCH
from .lanes import LaneCommands
from .leasing import BACKSTOP_POLL_SECONDS, CLAIM_SCAN_FACTOR, LeasingCommands
from .maintenance import ESCALATION_BATCH, Maintenance
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
from .reads import Reads
from .sessions import Sessions
from .transitions import CLOSE_TICKET, TICKET_CLOSED

__all__ = [
    "BACKSTOP_POLL_SECONDS",
    "CLAIM_SCAN_FACTOR",
    "CLOSE_TICKET",
    "DEFAULT_PAGE_SIZE",
    "ESCALATION_BATCH",
    "MAX_PAGE_SIZE",
    "PENDING_ACTION_RETRY",
    "TICKET_CLOSED",
    "TICKET_SYNC_BATCH",
    "Effects",
    "Engine",
    "EngineCore",
    "PageRequest",
    "decode_page_token",
    "encode_page_token",
    "new_id",
    "page_of",
    "page_size",
]


class Engine(
    CoordinatorCommands,
    LaneCommands,
    LeasingCommands,
    AttemptCommands,
    Maintenance,
    Reads,
):
    """The coordinator's commands and reads."""

    # The tenancy concerns: service objects over this core, made on first use.
    @cached_property
    def membership(self) -> Membership:
        return Membership(self)

    @cached_property
    def credentials(self) -> Credentials:
        return Credentials(self)

    @cached_property
    def grants(self) -> ParentGrants:
        return ParentGrants(self)

    @cached_property
    def children(self) -> Children:
        return Children(self)

    @cached_property
    def sessions(self) -> Sessions:
        return Sessions(self)

    @cached_property
    def platform(self) -> Platform:
        return Platform(self)
