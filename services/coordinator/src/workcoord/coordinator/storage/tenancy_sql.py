"""SQL for the tenancy records of :mod:`workcoord.coordinator.domain.grants`: parent grants, org
members, user tokens, browser sessions and one-time login codes (tables of schema 0002).

A mixin of :class:`~workcoord.coordinator.storage.sql.SqlTx`: it uses the transaction's
connection and nothing else, on both dialects.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from workcoord.coordinator.domain.grants import (
    GrantPermission,
    GrantRecord,
    LoginCode,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)

from . import schema as t

__all__ = ["TenancySql"]


class TenancySql:
    """Tenancy reads and writes on ``self.conn`` (provided by the transaction class)."""

    conn: AsyncConnection

    async def _t_one(self, stmt: Any) -> Row[Any] | None:
        return (await self.conn.execute(stmt)).first()

    async def _t_rows(self, stmt: Any) -> list[Row[Any]]:
        return list((await self.conn.execute(stmt)).fetchall())

    # -------------------------------------------------------------- grants

    async def get_grant(self, grant_id: str) -> GrantRecord | None:
        row = await self._t_one(select(t.grants).where(t.grants.c.grant_id == grant_id))
        return _grant(row) if row else None

    async def list_grants(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[GrantRecord]:
        c = t.grants.c
        rows = await self._t_rows(
            select(t.grants)
            .where(c.coordinator_id == coordinator_id, c.grant_id > after_id)
            .order_by(c.grant_id)
            .limit(limit)
        )
        return [_grant(r) for r in rows]

    async def grants_between(
        self, coordinator_id: str, parent_coordinator_id: str
    ) -> list[GrantRecord]:
        c = t.grants.c
        rows = await self._t_rows(
            select(t.grants)
            .where(
                c.parent_coordinator_id == parent_coordinator_id,
                c.coordinator_id == coordinator_id,
                c.revoke_time.is_(None),
            )
            .order_by(c.grant_id)
        )
        return [_grant(r) for r in rows]

    async def insert_grant(self, grant: GrantRecord) -> None:
        await self.conn.execute(
            insert(t.grants).values(
                grant_id=grant.grant_id,
                coordinator_id=grant.coordinator_id,
                parent_coordinator_id=grant.parent_coordinator_id,
                permissions=[p.value for p in grant.permissions],
                expire_time=grant.expire_time,
                revoke_time=grant.revoke_time,
                create_time=grant.create_time,
                created_by=grant.created_by,
                request_id=grant.request_id,
            )
        )

    async def find_grant_by_request(
        self, coordinator_id: str, request_id: str
    ) -> GrantRecord | None:
        c = t.grants.c
        row = await self._t_one(
            select(t.grants).where(c.coordinator_id == coordinator_id, c.request_id == request_id)
        )
        return _grant(row) if row else None

    async def revoke_grant(self, grant_id: str, when: datetime) -> None:
        await self.conn.execute(
            update(t.grants)
            .where(t.grants.c.grant_id == grant_id, t.grants.c.revoke_time.is_(None))
            .values(revoke_time=when)
        )

    # -------------------------------------------------------------- org members

    async def list_members(self, org_slug: str, after_user: str, limit: int) -> list[MemberRecord]:
        c = t.org_members.c
        rows = await self._t_rows(
            select(t.org_members)
            .where(c.org_slug == org_slug, c.user_id > after_user)
            .order_by(c.user_id)
            .limit(limit)
        )
        return [MemberRecord(r.org_slug, r.user_id, r.role, r.create_time) for r in rows]

    async def get_member(self, org_slug: str, user_id: str) -> MemberRecord | None:
        c = t.org_members.c
        row = await self._t_one(
            select(t.org_members).where(c.org_slug == org_slug, c.user_id == user_id)
        )
        return MemberRecord(row.org_slug, row.user_id, row.role, row.create_time) if row else None

    async def remove_member(self, org_slug: str, user_id: str) -> bool:
        c = t.org_members.c
        result = await self.conn.execute(
            delete(t.org_members).where(c.org_slug == org_slug, c.user_id == user_id)
        )
        return bool(result.rowcount)

    # -------------------------------------------------------------- user tokens

    async def get_user_token(self, token_id: str) -> TokenRecord | None:
        row = await self._t_one(select(t.user_tokens).where(t.user_tokens.c.token_id == token_id))
        if row is None:
            return None
        return TokenRecord(
            token_id=row.token_id,
            user_id=row.user_id,
            display_name=row.display_name,
            create_time=row.create_time,
            expire_time=row.expire_time,
            revoke_time=row.revoke_time,
        )

    async def revoke_user_token(self, token_id: str, when: datetime) -> None:
        c = t.user_tokens.c
        await self.conn.execute(
            update(t.user_tokens)
            .where(c.token_id == token_id, c.revoke_time.is_(None))
            .values(revoke_time=when)
        )

    # -------------------------------------------------------------- sessions and login codes

    async def find_session(self, secret_hash: str) -> SessionRecord | None:
        row = await self._t_one(select(t.sessions).where(t.sessions.c.secret_hash == secret_hash))
        return _session(row) if row else None

    async def get_session(self, session_id: str) -> SessionRecord | None:
        row = await self._t_one(select(t.sessions).where(t.sessions.c.session_id == session_id))
        return _session(row) if row else None

    async def insert_session(self, session: SessionRecord) -> None:
        await self.conn.execute(
            insert(t.sessions).values(
                session_id=session.session_id,
                user_id=session.user_id,
                secret_hash=session.secret_hash,
                csrf_hash=session.csrf_hash,
                create_time=session.create_time,
                expire_time=session.expire_time,
                revoke_time=session.revoke_time,
            )
        )

    async def revoke_session(self, session_id: str, when: datetime) -> None:
        c = t.sessions.c
        await self.conn.execute(
            update(t.sessions)
            .where(c.session_id == session_id, c.revoke_time.is_(None))
            .values(revoke_time=when)
        )

    async def find_login_code(self, code_hash: str) -> LoginCode | None:
        row = await self._t_one(select(t.login_codes).where(t.login_codes.c.code_hash == code_hash))
        if row is None:
            return None
        return LoginCode(row.code_hash, row.user_id, row.create_time, row.expire_time, row.use_time)

    async def insert_login_code(self, code: LoginCode) -> None:
        await self.conn.execute(
            insert(t.login_codes).values(
                code_hash=code.code_hash,
                user_id=code.user_id,
                create_time=code.create_time,
                expire_time=code.expire_time,
                use_time=code.use_time,
            )
        )

    async def use_login_code(self, code_hash: str, when: datetime) -> bool:
        """Burn the code; ``False`` if it was already used (or never existed)."""
        c = t.login_codes.c
        result = await self.conn.execute(
            update(t.login_codes)
            .where(c.code_hash == code_hash, c.use_time.is_(None))
            .values(use_time=when)
        )
        return bool(result.rowcount)


def _grant(row: Row[Any]) -> GrantRecord:
    return GrantRecord(
        grant_id=row.grant_id,
        coordinator_id=row.coordinator_id,
        parent_coordinator_id=row.parent_coordinator_id,
        permissions=tuple(GrantPermission(p) for p in (row.permissions or [])),
        expire_time=row.expire_time,
        create_time=row.create_time,
        created_by=row.created_by,
        request_id=row.request_id,
        revoke_time=row.revoke_time,
    )


def _session(row: Row[Any]) -> SessionRecord:
    return SessionRecord(
        session_id=row.session_id,
        user_id=row.user_id,
        secret_hash=row.secret_hash,
        csrf_hash=row.csrf_hash,
        create_time=row.create_time,
        expire_time=row.expire_time,
        revoke_time=row.revoke_time,
    )
