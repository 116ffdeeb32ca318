"""The lease engine: every command of the coordinator, one transaction each.

Each command opens a write transaction on its work coordinator (which locks the coordinator's
row, serialising changes to it), authorizes the caller against current state, applies the
rules, appends its events with the next revisions, and commits. Notifications are published
only after the commit, as wake-up hints.

The commands are grouped by concern, one module each, over a shared core (:mod:`._base`);
:class:`Engine` composes them. Module constants live where they are used (patch them there):
``BACKSTOP_POLL_SECONDS`` in :mod:`.leasing`, for example.
"""

from __future__ import annotations

from ._base import Effects, EngineCore, new_id
from .admin import BOOTSTRAP_USER_EMAIL, AdminCommands
from .attempts import AttemptCommands
from .coordinators import CoordinatorCommands
from .follow_ups import PENDING_ACTION_RETRY, TICKET_SYNC_BATCH
from .lanes import LaneCommands
from .leasing import BACKSTOP_POLL_SECONDS, CLAIM_SCAN_FACTOR, LeasingCommands
from .maintenance import ESCALATION_BATCH, Maintenance
from .paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    PageRequest,
    decode_page_token,
    encode_page_token,
    page_of,
    page_size,
)
from .reads import Reads
from .transitions import CLOSE_TICKET, TICKET_CLOSED

__all__ = [
    "BACKSTOP_POLL_SECONDS",
    "BOOTSTRAP_USER_EMAIL",
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
    AdminCommands,
    CoordinatorCommands,
    LaneCommands,
    LeasingCommands,
    AttemptCommands,
    Maintenance,
    Reads,
):
    """The coordinator's commands and reads."""
