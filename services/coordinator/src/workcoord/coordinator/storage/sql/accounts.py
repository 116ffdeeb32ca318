"""Who may call: orgs, users and their org roles, user tokens and work keys, and the lookup of
a credential by its secret's hash."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, literal, null, select, update
from sqlalchemy.sql.elements import BindParameter

from workcoord.coordinator.domain.grants import MemberRecord, TokenRecord
from workcoord.coordinator.domain.ports import (
    Credential,
    OrgRecord,
    ResolvedCredential,
    UserRecord,
    WorkKeyRecord,
)

from .. import schema as t
from ._base import SqlTxBase
from .keyset import page_after
from .rows import MEMBERS, ORGS, USER_TOKENS, USERS, WORK_KEYS


class AccountsSql(SqlTxBase):
    async def find_credential(self, secret_hash: str) -> Credential | None:
        token = await self._one(
            select(t.user_tokens).where(t.user_tokens.c.secret_hash == secret_hash)
        )
        if token is not None:
            return Credential(
                "user_token", token.token_id, token.user_id, token.expire_time, token.revoke_time
            )
        key = await self._one(select(t.work_keys).where(t.work_keys.c.secret_hash == secret_hash))
        if key is not None:
            return Credential("work_key", key.key_id, key.key_id, key.expire_time, key.revoke_time)
        return None

    async def resolve_credential(self, secret_hash: str) -> ResolvedCredential | None:
        """The credential and its owner in one statement (one round trip): the work key, or
        the token's user with one row per org role; with the credentials epoch of the same
        snapshot."""
        rows = (await self.conn.execute(_RESOLVE, {"secret_hash": secret_hash})).fetchall()
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
        row = (await self.conn.execute(_EPOCH)).first()
        return None if row is None else int(row[0])

    # -------------------------------------------------------------- orgs

    async def get_org(self, slug: str) -> OrgRecord | None:
        return await self._get(ORGS, t.orgs.c.slug == slug)

    async def list_orgs(self, after_slug: str, limit: int) -> list[OrgRecord]:
        return await self._list(ORGS, page_after(t.orgs, "slug", after_slug, limit))

    async def insert_org(self, org: OrgRecord) -> None:
        await self._insert(ORGS, [org])

    # -------------------------------------------------------------- users and roles

    async def get_user(self, user_id: str) -> UserRecord | None:
        return await self._get(USERS, t.users.c.user_id == user_id)

    async def find_user_by_email(self, email: str) -> UserRecord | None:
        return await self._get(USERS, t.users.c.email == email)

    async def list_users(self, after_id: str, limit: int) -> list[UserRecord]:
        return await self._list(USERS, page_after(t.users, "user_id", after_id, limit))

    async def insert_user(self, user: UserRecord) -> None:
        await self._insert(USERS, [user])

    async def user_roles(self, user_id: str) -> dict[str, str]:
        c = t.org_members.c
        rows = await self._rows(select(c.org_slug, c.role).where(c.user_id == user_id))
        return {r.org_slug: r.role for r in rows}

    async def set_member(self, org_slug: str, user_id: str, role: str, when: datetime) -> None:
        """Add the member, or change the role of an existing one (who keeps its create time)."""
        member = MemberRecord(org_slug, user_id, role, when)
        await self.conn.execute(
            self._upsert(t.org_members)
            .values(**MEMBERS.values(member))
            .on_conflict_do_update(index_elements=["org_slug", "user_id"], set_={"role": role})
        )

    # -------------------------------------------------------------- credentials

    async def insert_user_token(self, token: TokenRecord, secret_hash: str) -> None:
        await self._insert(USER_TOKENS, [token], secret_hash=secret_hash)

    async def get_work_key(self, key_id: str) -> WorkKeyRecord | None:
        return await self._get(WORK_KEYS, t.work_keys.c.key_id == key_id)

    async def list_work_keys(self, org_slug: str, after_id: str, limit: int) -> list[WorkKeyRecord]:
        c = t.work_keys.c
        stmt = select(t.work_keys).where(c.key_id > after_id)
        if org_slug:
            stmt = stmt.where(c.org_slug == org_slug)
        return await self._list(WORK_KEYS, stmt.order_by(c.key_id).limit(limit))

    async def insert_work_key(self, key: WorkKeyRecord) -> None:
        await self._insert(WORK_KEYS, [key])

    async def revoke_work_key(self, key_id: str, when: datetime) -> None:
        await self.conn.execute(
            update(t.work_keys).where(t.work_keys.c.key_id == key_id).values(revoke_time=when)
        )


def resolve_statement(*, with_epoch: bool = True) -> Any:
    """One row per org role (at least one): a probe row left-joined to the work key and to the
    user token, its user and their memberships with that hash (at most one of the two
    matches: the hashes of 256-bit secrets do not collide), and the credentials epoch (NULL
    without ``with_epoch``: a schema before 0006 has none). The columns by position: see the
    ``_…_AT`` offsets below."""
    secret_hash: BindParameter[str] = bindparam("secret_hash")
    epoch: Any = (
        select(_SETTINGS.c.credentials_epoch).where(_SETTINGS.c.id == 1).scalar_subquery()
        if with_epoch
        else null()
    )
    epoch = epoch.label("credentials_epoch")
    probe = select(literal(1).label("one")).subquery("probe")
    wk, tok, u, m = t.work_keys, t.user_tokens, t.users, t.org_members
    columns = [
        epoch,
        *wk.c,
        *(tok.c[n] for n in _TOKEN_COLUMNS),
        *u.c,
        m.c.org_slug,
        m.c.role,
    ]
    joined = (
        probe.outerjoin(wk, wk.c.secret_hash == secret_hash)
        .outerjoin(tok, tok.c.secret_hash == secret_hash)
        .outerjoin(u, u.c.user_id == tok.c.user_id)
        .outerjoin(m, m.c.user_id == u.c.user_id)
    )
    return select(*columns).select_from(joined)


_SETTINGS = t.platform_settings
_TOKEN_COLUMNS = ("token_id", "user_id", "expire_time", "revoke_time")
_EPOCH_AT = 0
_KEY_AT = 1
_TOKEN_AT = _KEY_AT + WORK_KEYS.width
_USER_AT = _TOKEN_AT + len(_TOKEN_COLUMNS)
_ROLE_AT = _USER_AT + USERS.width
_RESOLVE = resolve_statement()
_EPOCH = select(_SETTINGS.c.credentials_epoch).where(_SETTINGS.c.id == 1)
