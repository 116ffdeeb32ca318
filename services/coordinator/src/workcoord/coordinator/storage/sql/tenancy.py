"""Tenancy records: parent grants, org members, user tokens, browser sessions and one-time
login codes.

Statements: :mod:`.statements.tenancy`."""

from __future__ import annotations

from datetime import datetime

from workcoord.coordinator.domain.grants import (
    GrantRecord,
    LoginCode,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)

from ._base import SqlTxBase
from .rows import GRANTS, LOGIN_CODES, MEMBERS, SESSIONS, USER_TOKENS
from .statements import tenancy as sql


class TenancySql(SqlTxBase):
    # -------------------------------------------------------------- grants

    async def get_grant(self, grant_id: str) -> GrantRecord | None:
        return await self._get(GRANTS, sql.GET_GRANT, {"grant_id": grant_id})

    async def list_grants(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[GrantRecord]:
        params = {"coordinator_id": coordinator_id, "after": after_id, "limit": limit}
        return await self._list(GRANTS, sql.LIST_GRANTS, params)

    async def grants_between(
        self, coordinator_id: str, parent_coordinator_id: str
    ) -> list[GrantRecord]:
        """The child's unrevoked grants to that parent (expired ones included)."""
        params = {"coordinator_id": coordinator_id, "parent_coordinator_id": parent_coordinator_id}
        return await self._list(GRANTS, sql.GRANTS_BETWEEN, params)

    async def insert_grant(self, grant: GrantRecord) -> None:
        await self._insert(GRANTS, [grant])

    async def revoke_grant(self, grant_id: str, when: datetime) -> None:
        await self._rowcount(sql.REVOKE_GRANT, {"b_key": grant_id, "when": when})

    # -------------------------------------------------------------- org members

    async def list_members(self, org_slug: str, after_user: str, limit: int) -> list[MemberRecord]:
        params = {"org_slug": org_slug, "after": after_user, "limit": limit}
        return await self._list(MEMBERS, sql.LIST_MEMBERS, params)

    async def get_member(self, org_slug: str, user_id: str) -> MemberRecord | None:
        return await self._get(MEMBERS, sql.GET_MEMBER, {"org_slug": org_slug, "user_id": user_id})

    async def remove_member(self, org_slug: str, user_id: str) -> bool:
        params = {"org_slug": org_slug, "user_id": user_id}
        return bool(await self._rowcount(sql.REMOVE_MEMBER, params))

    # -------------------------------------------------------------- user tokens

    async def get_user_token(self, token_id: str) -> TokenRecord | None:
        return await self._get(USER_TOKENS, sql.GET_USER_TOKEN, {"token_id": token_id})

    async def revoke_user_token(self, token_id: str, when: datetime) -> None:
        await self._rowcount(sql.REVOKE_USER_TOKEN, {"b_key": token_id, "when": when})

    # -------------------------------------------------------------- sessions and login codes

    async def find_session(self, secret_hash: str) -> SessionRecord | None:
        return await self._get(SESSIONS, sql.FIND_SESSION, {"secret_hash": secret_hash})

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._get(SESSIONS, sql.GET_SESSION, {"session_id": session_id})

    async def insert_session(self, session: SessionRecord) -> None:
        await self._insert(SESSIONS, [session])

    async def revoke_session(self, session_id: str, when: datetime) -> None:
        await self._rowcount(sql.REVOKE_SESSION, {"b_key": session_id, "when": when})

    async def find_login_code(self, code_hash: str) -> LoginCode | None:
        return await self._get(LOGIN_CODES, sql.FIND_LOGIN_CODE, {"code_hash": code_hash})

    async def insert_login_code(self, code: LoginCode) -> None:
        await self._insert(LOGIN_CODES, [code])

    async def use_login_code(self, code_hash: str, when: datetime) -> bool:
        """Burn the code; ``False`` if it was already used (or never existed)."""
        return bool(await self._rowcount(sql.USE_LOGIN_CODE, {"b_key": code_hash, "when": when}))
