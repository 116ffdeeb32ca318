"""Tenancy records and the storage port they need: parent grants, org members, user tokens,
browser sessions and one-time login codes.

Kept apart from :mod:`.ports` so the tenancy release adds to the storage port without
reshaping it: a store that also implements :class:`TenancyTx` serves these records (the SQL
store does); one that does not answers UNIMPLEMENTED for the tenancy calls only.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, cast

from workcoord.kit.errors import Unimplemented

from .ports import Reader, Tx

# Grants are created with a required expiry at most this far ahead: a parent's reach into a
# child always ends unless the child renews it.
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


class TenancyReader(Reader, Protocol):
    async def get_grant(self, grant_id: str) -> GrantRecord | None: ...
    async def list_grants(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[GrantRecord]: ...
    async def grants_between(
        self, coordinator_id: str, parent_coordinator_id: str
    ) -> list[GrantRecord]: ...
    async def list_members(
        self, org_slug: str, after_user: str, limit: int
    ) -> list[MemberRecord]: ...
    async def get_member(self, org_slug: str, user_id: str) -> MemberRecord | None: ...
    async def get_user_token(self, token_id: str) -> TokenRecord | None: ...
    async def find_session(self, secret_hash: str) -> SessionRecord | None: ...
    async def get_session(self, session_id: str) -> SessionRecord | None: ...
    async def find_login_code(self, code_hash: str) -> LoginCode | None: ...


class TenancyTx(TenancyReader, Tx, Protocol):
    async def insert_grant(self, grant: GrantRecord) -> None: ...
    async def find_grant_by_request(
        self, coordinator_id: str, request_id: str
    ) -> GrantRecord | None: ...
    async def revoke_grant(self, grant_id: str, when: datetime) -> None: ...
    async def remove_member(self, org_slug: str, user_id: str) -> bool: ...
    async def revoke_user_token(self, token_id: str, when: datetime) -> None: ...
    async def insert_session(self, session: SessionRecord) -> None: ...
    async def revoke_session(self, session_id: str, when: datetime) -> None: ...
    async def insert_login_code(self, code: LoginCode) -> None: ...
    async def use_login_code(self, code_hash: str, when: datetime) -> bool: ...


def tenancy_reader(reader: Reader) -> TenancyReader:
    """``reader`` as a tenancy reader, or UNIMPLEMENTED if its store keeps no tenancy records."""
    if not hasattr(reader, "get_grant"):
        raise Unimplemented("this store does not keep tenancy records")
    return cast(TenancyReader, reader)


def tenancy_tx(tx: Tx) -> TenancyTx:
    """``tx`` as a tenancy transaction, or UNIMPLEMENTED if its store keeps none."""
    if not hasattr(tx, "insert_grant"):
        raise Unimplemented("this store does not keep tenancy records")
    return cast(TenancyTx, tx)


async def parents_holding(
    reader: Reader, child_id: str, parent_id: str, permission: GrantPermission, now: datetime
) -> list[str]:
    """``[parent_id]`` when the child's configured parent holds a live grant carrying
    ``permission`` at ``now``; ``[]`` otherwise (also on a store without tenancy records)."""
    if not parent_id or not hasattr(reader, "grants_between"):
        return []
    grants: Sequence[GrantRecord] = await cast(TenancyReader, reader).grants_between(
        child_id, parent_id
    )
    return [parent_id] if any(g.allows(permission, now) for g in grants) else []
