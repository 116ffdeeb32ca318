"""Ticket trackers: the interface the domain uses to read and close linked tickets, and the
tracker connections of a work coordinator that say which credential reaches which project.

Adapters (GitHub Issues, GitLab issues, Jira) live outside the domain, in
``workcoord.coordinator.trackers``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

__all__ = [
    "TicketTracker",
    "TrackerConnection",
    "TrackerError",
    "TrackerKind",
    "TrackerRateLimited",
    "ticket_project",
]


class TrackerError(Exception):
    """The tracker could not answer or refused; the message is safe to show and store."""


class TrackerRateLimited(TrackerError):
    """The tracker asked us to wait (HTTP 429, or GitHub's exhausted rate limit) for
    ``retry_after`` seconds before calling it again."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TrackerKind(enum.StrEnum):
    """The trackers a connection may name."""

    GITHUB = "github"
    GITLAB = "gitlab"
    JIRA = "jira"


class TicketTracker(Protocol):
    """One tracker: read tickets' states and close one."""

    name: str

    async def get_state(self, key: str) -> str:
        """``OPEN`` or ``CLOSED``, as the tracker has it now."""
        ...

    async def get_states(self, keys: Sequence[str]) -> dict[str, str]:
        """The states of several tickets (each as :meth:`get_state`), in as few calls as the
        tracker allows; a key the tracker does not know is left out."""
        ...

    async def close(self, key: str) -> None:
        """Close the ticket (idempotent: closing a closed ticket succeeds)."""
        ...

    async def aclose(self) -> None:
        """Release the adapter's connections."""
        ...


@dataclass(slots=True)
class TrackerConnection:
    """A work coordinator's credential for one tracker and the projects it reaches.

    ``credential_ciphertext`` is the credential sealed with the installation key (bound to
    ``tracker_id``); the plain credential is never stored, returned, logged or put in an event.
    ``credential_fingerprint`` tells connections apart without revealing anything."""

    tracker_id: str
    coordinator_id: str
    tracker: TrackerKind
    base_url: str
    projects: tuple[str, ...]
    credential_ciphertext: str
    credential_fingerprint: str
    create_time: datetime
    update_time: datetime
    # Jira: the status a closed ticket is moved to (by name).
    done_status: str = ""
    created_by: str = ""
    # Health: the last call that went through, and the last that failed (with its error).
    last_success_time: datetime | None = None
    last_error: str = ""
    last_error_time: datetime | None = None

    def serves(self, tracker: str, key: str) -> bool:
        """Whether a ticket ``key`` of ``tracker`` is in one of this connection's projects."""
        if tracker != self.tracker.value:
            return False
        project = ticket_project(self.tracker, key)
        return project is not None and project.casefold() in {p.casefold() for p in self.projects}

    @property
    def label(self) -> str:
        """How errors and health name the connection (never with its credential)."""
        kind, fingerprint = self.tracker.value, self.credential_fingerprint
        return f"tracker connection {self.tracker_id} ({kind}, credential {fingerprint})"


def ticket_project(tracker: TrackerKind, key: str) -> str | None:
    """The project a ticket key belongs to: ``o/r`` of ``o/r#12`` (GitHub), ``group/proj`` of
    ``group/proj#12`` (GitLab), ``KEY`` of ``KEY-123`` (Jira); None when the key has no project."""
    if tracker == TrackerKind.JIRA:
        project, dash, number = key.rpartition("-")
        return project if dash and project and number.isdigit() else None
    project, hash_, number = key.rpartition("#")
    return project if hash_ and project and number.isdigit() else None
