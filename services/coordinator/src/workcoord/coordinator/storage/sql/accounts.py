"""Who may call: orgs, users and their org roles, user tokens and work keys, and the lookup of
a credential by its secret's hash.

Statements: :mod:`.statements.accounts`."""

from __future__ import annotations

from datetime import datetime

from workcoord.coordinator.domain.grants import MemberRecord, TokenRecord
from workcoord.coordinator.domain.ports import (
    Credential,
    OrgRecord,
    ResolvedCredential,
    UserRecord,
    WorkKeyRecord,
)

from ._base import SqlTxBase
from .rows import MEMBERS, ORGS, USER_TOKENS, USERS, WORK_KEYS
from .statements import accounts as sql

# Where each part of a RESOLVE_CREDENTIAL row starts.
_EPOCH_AT = 0
_KEY_AT = 1
_TOKEN_AT = _KEY_AT + WORK_KEYS.width
_USER_AT = _TOKEN_AT + len(sql.TOKEN_COLUMNS)
_ROLE_AT = _USER_AT + USERS.width


class AccountsSql(SqlTxBase):
    async def find_credential(self, secret_hash: str) -> Credential | None:
        params = {"secret_hash": secret_hash}
        token = await self._one(sql.TOKEN_BY_HASH, params)
        if token is not None:
            return Credential(
                "user_token", token.token_id, token.user_id, token.expire_time, token.revoke_time
            )
        key = await self._one(sql.WORK_KEY_BY_HASH, params)
        if key is not None:
            return Credential("work_key", key.key_id, key.key_id, key.expire_time, key.revoke_time)
        return None

    async def resolve_credential(self, secret_hash: str) -> ResolvedCredential | None:
        """The credential and its owner in one statement (one round trip): the work key, or
        the token's user with one row per org role; with the credentials epoch of the same
        snapshot."""
        rows = await self._rows(sql.RESOLVE_CREDENTIAL, {"secret_hash": secret_hash})
        if not rows:
            return None
        first = rows[0]
        epoch = first[_EPOCH_AT]
        epoch = None if epoch is None else int(epoch)
        if first[_KEY_AT] is not None:
            key = WORK_KEYS.load(first, _KEY_AT)
            credential = Credential(
                "work_key", key.key_id, key.key_id, key.expire_time, key.revoke_time
            )
            return ResolvedCredential(credential, work_key=key, epoch=epoch)
        token_id, user_id, expire_time, revoke_time = first[_TOKEN_AT : _TOKEN_AT + 4]
        if token_id is None:
            return None
        credential = Credential("user_token", token_id, user_id, expire_time, revoke_time)
        if first[_USER_AT] is None:
            return ResolvedCredential(credential, epoch=epoch)
        user = USERS.load(first, _USER_AT)
        roles = {r[_ROLE_AT]: r[_ROLE_AT + 1] for r in rows if r[_ROLE_AT] is not None}
        return ResolvedCredential(credential, user=user, roles=roles, epoch=epoch)

    async def credentials_epoch(self) -> int | None:
        row = await self._one(sql.CREDENTIALS_EPOCH)
        return None if row is None else int(row[0])

    # -------------------------------------------------------------- orgs

    async def get_org(self, slug: str) -> OrgRecord | None:
        return await self._get(ORGS, sql.GET_ORG, {"slug": slug})

    async def list_orgs(self, after_slug: str, limit: int) -> list[OrgRecord]:
        return await self._list(ORGS, sql.LIST_ORGS, {"after": after_slug, "limit": limit})

    async def insert_org(self, org: OrgRecord) -> None:
        await self._insert(ORGS, [org])

    # -------------------------------------------------------------- users and roles

    async def get_user(self, user_id: str) -> UserRecord | None:
        return await self._get(USERS, sql.GET_USER, {"user_id": user_id})

    async def find_user_by_email(self, email: str) -> UserRecord | None:
        return await self._get(USERS, sql.USER_BY_EMAIL, {"email": email})

    async def list_users(self, after_id: str, limit: int) -> list[UserRecord]:
        return await self._list(USERS, sql.LIST_USERS, {"after": after_id, "limit": limit})

    async def insert_user(self, user: UserRecord) -> None:
        await self._insert(USERS, [user])

    async def user_roles(self, user_id: str) -> dict[str, str]:
        rows = await self._rows(sql.USER_ROLES, {"user_id": user_id})
        return {r.org_slug: r.role for r in rows}

    async def set_member(self, org_slug: str, user_id: str, role: str, when: datetime) -> None:
        """Add the member, or change the role of an existing one (who keeps its create time)."""
        member = MemberRecord(org_slug, user_id, role, when)
        await self.conn.execute(sql.SET_MEMBER.of(self.dialect), MEMBERS.values(member))

    # -------------------------------------------------------------- credentials

    async def insert_user_token(self, token: TokenRecord, secret_hash: str) -> None:
        await self._insert(USER_TOKENS, [token], secret_hash=secret_hash)

    async def get_work_key(self, key_id: str) -> WorkKeyRecord | None:
        return await self._get(WORK_KEYS, sql.GET_WORK_KEY, {"key_id": key_id})

    async def list_work_keys(self, org_slug: str, after_id: str, limit: int) -> list[WorkKeyRecord]:
        return await self._list(WORK_KEYS, sql.list_work_keys(org_slug, after_id, limit))

    async def insert_work_key(self, key: WorkKeyRecord) -> None:
        await self._insert(WORK_KEYS, [key])

    async def revoke_work_key(self, key_id: str, when: datetime) -> None:
        await self.conn.execute(sql.REVOKE_WORK_KEY, {"b_key_id": key_id, "revoke_time": when})
