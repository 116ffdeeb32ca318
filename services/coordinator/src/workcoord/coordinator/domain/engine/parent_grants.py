"""Parent grants, the child's side: a child work coordinator's admins grant its configured
parent explicit, expiring permissions, list them and revoke them. What a grant lets the parent
do is in :mod:`.children`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime, timedelta

from workcoord.kit.errors import FieldViolation, InvalidArgument, NotFound, PermissionDenied

from .. import requests
from ..auth import Access, Principal
from ..grants import MAX_GRANT_DAYS, GrantRecord
from ..inputs import CreateGrantInput, ListGrantsInput
from ..model import Coordinator, EventType, NewEvent
from ..ports import Tx
from ..results import Page
from ._base import EngineCore, new_id
from .paging import PageRequest

__all__ = ["ParentGrants"]


class ParentGrants:
    """A child's grants to its parent, over the engine's shared core."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    async def create_grant(self, principal: Principal, new: CreateGrantInput) -> GrantRecord:
        """The child's admin grants its configured parent explicit, expiring permissions."""
        cid = new.coordinator_id
        async with self._child_write(principal, cid, Access.CONFIGURE) as (tx, child):
            scope = requests.grants_scope(cid)
            made = await requests.replayed(tx, scope, new.request_id, new.fingerprint)
            existing = await tx.get_grant(made) if made else None
            if existing is not None:
                return existing
            expire_time = _grant_expiry(new, child, tx.now)
            grant = GrantRecord(
                grant_id=new_id("gr"),
                coordinator_id=cid,
                parent_coordinator_id=new.parent_coordinator_id,
                permissions=tuple(dict.fromkeys(new.permissions)),
                expire_time=expire_time,
                create_time=tx.now,
                created_by=principal.name,
                request_id=new.request_id,
            )
            await tx.insert_grant(grant)
            await requests.remember(
                tx, scope, new.request_id, new.fingerprint, grant.grant_id, tx.now
            )
            created = NewEvent(
                EventType.GRANT_CREATED,
                data={
                    "grantId": grant.grant_id,
                    "parentCoordinatorId": grant.parent_coordinator_id,
                    "permissions": [p.value for p in grant.permissions],
                    "expireTime": expire_time.isoformat(),
                },
            )
            await self.core.append_events(tx, child, [created], principal.name)
            return grant

    async def list_grants(
        self, principal: Principal, listing: ListGrantsInput
    ) -> Page[GrantRecord]:
        cid = listing.coordinator_id
        if not principal.is_human:
            async with self.core.store.read() as reader:
                # Who may not see the coordinator learns only that (NOT_FOUND).
                await self.core.coordinator_for(reader, principal, cid)
            raise PermissionDenied("only humans read grants")
        request = PageRequest.parse(listing.page_size, listing.page_token, ("ListGrants", cid))
        async with self.core.store.read() as reader:
            await self.core.coordinator_for(reader, principal, cid)
            rows = await reader.list_grants(cid, request.after_id, request.fetch)
        return request.page(rows, lambda g: [g.grant_id])

    async def revoke_grant(
        self, principal: Principal, coordinator_id: str, grant_id: str
    ) -> GrantRecord:
        """Revoke at once: the parent's very next children call fails."""
        async with self._child_write(principal, coordinator_id, Access.CONFIGURE) as (tx, child):
            grant = await tx.get_grant(grant_id)
            if grant is None or grant.coordinator_id != coordinator_id:
                raise NotFound(f"grant {grant_id} not found")
            if grant.revoke_time is not None:
                return grant
            await tx.revoke_grant(grant_id, tx.now)
            revoked = NewEvent(
                EventType.GRANT_REVOKED,
                data={"grantId": grant_id, "parentCoordinatorId": grant.parent_coordinator_id},
            )
            await self.core.append_events(tx, child, [revoked], principal.name)
            return replace(grant, revoke_time=tx.now)

    @asynccontextmanager
    async def _child_write(
        self, principal: Principal, coordinator_id: str, access: Access
    ) -> AsyncIterator[tuple[Tx, Coordinator]]:
        """A write transaction on the child for its administration (which a person keeps while
        coordination is switched off)."""
        async with self.core.command(principal, coordinator_id, access) as (tx, child, effects):
            effects.changed = True
            yield tx, child


def _grant_expiry(new: CreateGrantInput, child: Coordinator, now: datetime) -> datetime:
    """The new grant's expiry, once its permissions, expiry and parent are checked (every
    problem at once, INVALID_ARGUMENT naming its field)."""
    violations: list[tuple[str, str]] = []
    if not new.permissions:
        violations.append(("grant.permissions", "is required"))
    expire_time = new.expire_time
    if expire_time is None:
        violations.append(("grant.expire_time", "is required"))
    elif expire_time <= now:
        violations.append(("grant.expire_time", "must be in the future"))
    elif expire_time > now + timedelta(days=MAX_GRANT_DAYS):
        violations.append(("grant.expire_time", f"must be at most {MAX_GRANT_DAYS} days ahead"))
    parent_id = new.parent_coordinator_id
    if not parent_id or parent_id != child.config.parent_coordinator_id:
        violations.append(
            ("grant.parent_coordinator_id", "must be this work coordinator's configured parent")
        )
    if violations or expire_time is None:
        raise InvalidArgument([FieldViolation(f, d) for f, d in violations])
    return expire_time
