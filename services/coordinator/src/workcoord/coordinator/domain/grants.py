"""Tenancy records: parent grants, org members, user tokens, browser sessions and one-time
login codes. Every store keeps them: the storage port (:mod:`.ports`) reads and writes them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

# Grants are created with a required expiry at most this far ahead.
MAX_GRANT_DAYS = 90


class GrantPermission(enum.StrEnum):
    """What a parent may do over a child (``Grant.Permission`` of the contract)."""

    SUMMARY = "SUMMARY"
    ESCALATIONS = "ESCALATIONS"
    ASSIGN = "ASSIGN"
    STEER = "STEER"
    ESCALATE = "ESCALATE"


@dataclass(frozen=True, slots=True)
class GrantRecord:
    """A child work coordinator's grant of explicit permissions to its parent."""

    grant_id: str
    coordinator_id: str  # the child, which granted
    parent_coordinator_id: str
    permissions: tuple[GrantPermission, ...]
    expire_time: datetime
    create_time: datetime
    created_by: str
    request_id: str = ""
    revoke_time: datetime | None = None

    def live(self, now: datetime) -> bool:
        """Whether the grant holds at ``now``: not revoked and not yet expired."""
        return self.revoke_time is None and now < self.expire_time

    def allows(self, permission: GrantPermission, now: datetime) -> bool:
        return self.live(now) and permission in self.permissions


@dataclass(frozen=True, slots=True)
class MemberRecord:
    org_slug: str
    user_id: str
    role: str
    create_time: datetime


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A user's admin API token (never its secret)."""

    token_id: str
    user_id: str
    display_name: str
    create_time: datetime
    expire_time: datetime | None = None
    revoke_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A browser session: its secret and CSRF token are stored as hashes only."""

    session_id: str
    user_id: str
    secret_hash: str
    csrf_hash: str
    create_time: datetime
    expire_time: datetime
    revoke_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class LoginCode:
    code_hash: str
    user_id: str
    create_time: datetime
    expire_time: datetime
    use_time: datetime | None = None


class GrantSource(Protocol):
    """What :func:`parents_holding` reads: any store reader (``Reader`` of :mod:`.ports`)."""

    async def grants_between(
        self, coordinator_id: str, parent_coordinator_id: str
    ) -> list[GrantRecord]: ...


async def parents_holding(
    reader: GrantSource,
    child_id: str,
    parent_id: str,
    permission: GrantPermission,
    now: datetime,
) -> list[str]:
    """``[parent_id]`` when the child's configured parent holds a live grant carrying
    ``permission`` at ``now``; ``[]`` otherwise."""
    if not parent_id:
        return []
    grants = await reader.grants_between(child_id, parent_id)
    return [parent_id] if any(g.allows(permission, now) for g in grants) else []
