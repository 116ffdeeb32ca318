"""Ticket trackers: the interface the domain uses to read and close linked tickets.

Adapters (GitHub Issues first) live outside the domain, in ``workcoord.coordinator.trackers``.
"""

from __future__ import annotations

from typing import Protocol


class TrackerError(Exception):
    """The tracker could not answer or refused; the message is safe to show and store."""


class TicketTracker(Protocol):
    """One tracker (``github``): read a ticket's state and close it."""

    name: str

    async def get_state(self, key: str) -> str:
        """``OPEN`` or ``CLOSED``, as the tracker has it now."""
        ...

    async def close(self, key: str) -> None:
        """Close the ticket (idempotent: closing a closed ticket succeeds)."""
        ...
