"""Orgs, users and roles, user tokens, work keys and credential lookups, in memory:
the twin of :mod:`..sql.accounts`."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from workcoord.coordinator.domain.grants import MemberRecord, TokenRecord
from workcoord.coordinator.domain.ports import (
    Credential,
    OrgRecord,
    ResolvedCredential,
    UserRecord,
    WorkKeyRecord,
)

from ._base import MemoryTxBase, TokenRow, refuse, refuse_taken


class AccountsMemory(MemoryTxBase):
    async def find_credential(self, secret_hash: str) -> Credential | None:
        for row in self.tables.tokens.values():
            if row.secret_hash == secret_hash:
                token = row.token
                return Credential(
                    "user_token",
                    token.token_id,
                    token.user_id,
                    token.expire_time,
                    token.revoke_time,
                )
        for key in self.tables.work_keys.values():
            if key.secret_hash == secret_hash:
                return Credential(
                    "work_key", key.key_id, key.key_id, key.expire_time, key.revoke_time
                )
        return None

    async def resolve_credential(self, secret_hash: str) -> ResolvedCredential | None:
        credential = await self.find_credential(secret_hash)
        if credential is None:
            return None
        epoch = await self.credentials_epoch()
        if credential.kind == "work_key":
            key = await self.get_work_key(credential.owner_id)
            return ResolvedCredential(credential, work_key=key, epoch=epoch)
        user = await self.get_user(credential.owner_id)
        if user is None:
            return ResolvedCredential(credential, epoch=epoch)
        return ResolvedCredential(
            credential, user=user, roles=await self.user_roles(user.user_id), epoch=epoch
        )

    async def credentials_epoch(self) -> int | None:
        settings = self.tables.settings
        return None if settings is None else settings.credentials_epoch

    # -------------------------------------------------------------- orgs

    async def get_org(self, slug: str) -> OrgRecord | None:
        return self.tables.orgs.get(slug)

    async def list_orgs(self, after_slug: str, limit: int) -> list[OrgRecord]:
        return sorted(
            (o for o in self.tables.orgs.values() if o.slug > after_slug), key=lambda o: o.slug
        )[:limit]

    async def insert_org(self, org: OrgRecord) -> None:
        orgs = self._w().orgs
        refuse_taken(orgs, org.slug, "pk_orgs")
        orgs[org.slug] = org

    # -------------------------------------------------------------- users and roles

    async def get_user(self, user_id: str) -> UserRecord | None:
        return self.tables.users.get(user_id)

    async def find_user_by_email(self, email: str) -> UserRecord | None:
        return next((u for u in self.tables.users.values() if u.email == email), None)

    async def list_users(self, after_id: str, limit: int) -> list[UserRecord]:
        return sorted(
            (u for u in self.tables.users.values() if u.user_id > after_id),
            key=lambda u: u.user_id,
        )[:limit]

    async def insert_user(self, user: UserRecord) -> None:
        users = self._credentials_changed().users
        email = ("uq_users_email", lambda u: u.email == user.email)
        refuse_taken(users, user.user_id, "pk_users", email)
        users[user.user_id] = user

    def _check_user(self, user_id: str, constraint: str) -> None:
        if user_id not in self.tables.users:
            refuse(constraint)

    async def user_roles(self, user_id: str) -> dict[str, str]:
        return {m.org_slug: m.role for m in self.tables.members.values() if m.user_id == user_id}

    async def set_member(self, org_slug: str, user_id: str, role: str, when: datetime) -> None:
        """Add the member, or change the role of an existing one (who keeps its create time)."""
        members = self._credentials_changed().members
        if org_slug not in self.tables.orgs:
            refuse("fk_org_members_org_slug_orgs")
        self._check_user(user_id, "fk_org_members_user_id_users")
        existing = members.get((org_slug, user_id))
        since = existing.create_time if existing is not None else when
        members[(org_slug, user_id)] = MemberRecord(org_slug, user_id, role, since)

    # -------------------------------------------------------------- credentials

    async def insert_user_token(self, token: TokenRecord, secret_hash: str) -> None:
        tokens = self._credentials_changed().tokens
        secret = ("uq_user_tokens_secret_hash", lambda r: r.secret_hash == secret_hash)
        refuse_taken(tokens, token.token_id, "pk_user_tokens", secret)
        self._check_user(token.user_id, "fk_user_tokens_user_id_users")
        tokens[token.token_id] = TokenRow(token, secret_hash)

    async def get_work_key(self, key_id: str) -> WorkKeyRecord | None:
        return self.tables.work_keys.get(key_id)

    async def list_work_keys(self, org_slug: str, after_id: str, limit: int) -> list[WorkKeyRecord]:
        keys = [
            k
            for k in self.tables.work_keys.values()
            if k.key_id > after_id and (not org_slug or k.org_slug == org_slug)
        ]
        return sorted(keys, key=lambda k: k.key_id)[:limit]

    async def insert_work_key(self, key: WorkKeyRecord) -> None:
        keys = self._credentials_changed().work_keys
        secret = ("uq_work_keys_secret_hash", lambda k: k.secret_hash == key.secret_hash)
        refuse_taken(keys, key.key_id, "pk_work_keys", secret)
        keys[key.key_id] = key

    async def revoke_work_key(self, key_id: str, when: datetime) -> None:
        keys = self._credentials_changed().work_keys
        key = keys.get(key_id)
        if key is not None:
            keys[key_id] = dataclasses.replace(key, revoke_time=when)
