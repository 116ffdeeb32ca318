"""Tenancy records: parent grants, org members, user tokens, browser sessions and one-time
login codes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Table, delete, select, update
from sqlalchemy.sql import ColumnElement

from workcoord.coordinator.domain.grants import (
    GrantRecord,
    LoginCode,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)

from .. import schema as t
from ._base import SqlTxBase
from .keyset import page_after
from .rows import GRANTS, LOGIN_CODES, MEMBERS, SESSIONS, USER_TOKENS


class TenancySql(SqlTxBase):
    async def _stamp_once(
        self, table: Table, column: str, where: ColumnElement[bool], when: datetime
    ) -> bool:
        """Set ``column`` (a revoke or use time) where it is still unset; whether a row was."""
        result = await self.conn.execute(
            update(table).where(where, table.c[column].is_(None)).values({column: when})
        )
        return bool(result.rowcount)

    # -------------------------------------------------------------- grants

    async def get_grant(self, grant_id: str) -> GrantRecord | None:
        return await self._get(GRANTS, t.grants.c.grant_id == grant_id)

    async def list_grants(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[GrantRecord]:
        mine = t.grants.c.coordinator_id == coordinator_id
        return await self._list(GRANTS, page_after(t.grants, "grant_id", after_id, limit, mine))

    async def grants_between(
        self, coordinator_id: str, parent_coordinator_id: str
    ) -> list[GrantRecord]:
        """The child's unrevoked grants to that parent (expired ones included)."""
        c = t.grants.c
        return await self._list(
            GRANTS,
            select(t.grants)
            .where(
                c.parent_coordinator_id == parent_coordinator_id,
                c.coordinator_id == coordinator_id,
                c.revoke_time.is_(None),
            )
            .order_by(c.grant_id),
        )

    async def insert_grant(self, grant: GrantRecord) -> None:
        await self._insert(GRANTS, [grant])

    async def revoke_grant(self, grant_id: str, when: datetime) -> None:
        await self._stamp_once(t.grants, "revoke_time", t.grants.c.grant_id == grant_id, when)

    # -------------------------------------------------------------- org members

    async def list_members(self, org_slug: str, after_user: str, limit: int) -> list[MemberRecord]:
        org = t.org_members.c.org_slug == org_slug
        return await self._list(
            MEMBERS, page_after(t.org_members, "user_id", after_user, limit, org)
        )

    async def get_member(self, org_slug: str, user_id: str) -> MemberRecord | None:
        c = t.org_members.c
        return await self._get(MEMBERS, c.org_slug == org_slug, c.user_id == user_id)

    async def remove_member(self, org_slug: str, user_id: str) -> bool:
        c = t.org_members.c
        result = await self.conn.execute(
            delete(t.org_members).where(c.org_slug == org_slug, c.user_id == user_id)
        )
        return bool(result.rowcount)

    # -------------------------------------------------------------- user tokens

    async def get_user_token(self, token_id: str) -> TokenRecord | None:
        return await self._get(USER_TOKENS, t.user_tokens.c.token_id == token_id)

    async def revoke_user_token(self, token_id: str, when: datetime) -> None:
        where = t.user_tokens.c.token_id == token_id
        await self._stamp_once(t.user_tokens, "revoke_time", where, when)

    # -------------------------------------------------------------- sessions and login codes

    async def find_session(self, secret_hash: str) -> SessionRecord | None:
        return await self._get(SESSIONS, t.sessions.c.secret_hash == secret_hash)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._get(SESSIONS, t.sessions.c.session_id == session_id)

    async def insert_session(self, session: SessionRecord) -> None:
        await self._insert(SESSIONS, [session])

    async def revoke_session(self, session_id: str, when: datetime) -> None:
        where = t.sessions.c.session_id == session_id
        await self._stamp_once(t.sessions, "revoke_time", where, when)

    async def find_login_code(self, code_hash: str) -> LoginCode | None:
        return await self._get(LOGIN_CODES, t.login_codes.c.code_hash == code_hash)

    async def insert_login_code(self, code: LoginCode) -> None:
        await self._insert(LOGIN_CODES, [code])

    async def use_login_code(self, code_hash: str, when: datetime) -> bool:
        """Burn the code; ``False`` if it was already used (or never existed)."""
        where = t.login_codes.c.code_hash == code_hash
        return await self._stamp_once(t.login_codes, "use_time", where, when)
