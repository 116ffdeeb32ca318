"""Tenancy records, in memory: the twin of :mod:`..sql.tenancy`."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from workcoord.coordinator.domain.grants import (
    GrantRecord,
    LoginCode,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)

from ._base import MemoryTxBase, TokenRow, insert_new, refuse, refuse_taken, revoke, selected


class TenancyMemory(MemoryTxBase):
    # -------------------------------------------------------------- grants

    async def get_grant(self, grant_id: str) -> GrantRecord | None:
        return self.tables.grants.get(grant_id)

    async def list_grants(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[GrantRecord]:
        return selected(
            self.tables.grants.values(),
            lambda g: g.coordinator_id == coordinator_id and g.grant_id > after_id,
            lambda g: g.grant_id,
            limit,
        )

    async def grants_between(
        self, coordinator_id: str, parent_coordinator_id: str
    ) -> list[GrantRecord]:
        """The child's unrevoked grants to that parent (expired ones included)."""
        return selected(
            self.tables.grants.values(),
            lambda g: (
                g.coordinator_id == coordinator_id
                and g.parent_coordinator_id == parent_coordinator_id
                and g.revoke_time is None
            ),
            lambda g: g.grant_id,
        )

    async def insert_grant(self, grant: GrantRecord) -> None:
        insert_new(self._w().grants, [grant], lambda g: g.grant_id, "pk_grants")

    async def revoke_grant(self, grant_id: str, when: datetime) -> None:
        revoke(self._w().grants, grant_id, when)

    # -------------------------------------------------------------- org members

    async def list_members(self, org_slug: str, after_user: str, limit: int) -> list[MemberRecord]:
        return selected(
            self.tables.members.values(),
            lambda m: m.org_slug == org_slug and m.user_id > after_user,
            lambda m: m.user_id,
            limit,
        )

    async def get_member(self, org_slug: str, user_id: str) -> MemberRecord | None:
        return self.tables.members.get((org_slug, user_id))

    async def remove_member(self, org_slug: str, user_id: str) -> bool:
        return self._credentials_changed().members.pop((org_slug, user_id), None) is not None

    # -------------------------------------------------------------- user tokens

    async def get_user_token(self, token_id: str) -> TokenRecord | None:
        row = self.tables.tokens.get(token_id)
        return row.token if row is not None else None

    async def revoke_user_token(self, token_id: str, when: datetime) -> None:
        tokens = self._credentials_changed().tokens
        row = tokens.get(token_id)
        if row is not None and row.token.revoke_time is None:
            revoked = dataclasses.replace(row.token, revoke_time=when)
            tokens[token_id] = TokenRow(revoked, row.secret_hash)

    # -------------------------------------------------------------- sessions and login codes

    async def find_session(self, secret_hash: str) -> SessionRecord | None:
        return next(
            (s for s in self.tables.sessions.values() if s.secret_hash == secret_hash), None
        )

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return self.tables.sessions.get(session_id)

    async def insert_session(self, session: SessionRecord) -> None:
        sessions = self._w().sessions
        secret = ("uq_sessions_secret_hash", lambda s: s.secret_hash == session.secret_hash)
        refuse_taken(sessions, session.session_id, "pk_sessions", secret)
        if session.user_id not in self.tables.users:
            refuse("fk_sessions_user_id_users")
        sessions[session.session_id] = session

    async def revoke_session(self, session_id: str, when: datetime) -> None:
        revoke(self._w().sessions, session_id, when)

    async def find_login_code(self, code_hash: str) -> LoginCode | None:
        return self.tables.login_codes.get(code_hash)

    async def insert_login_code(self, code: LoginCode) -> None:
        codes = self._w().login_codes
        refuse_taken(codes, code.code_hash, "pk_login_codes")
        if code.user_id not in self.tables.users:
            refuse("fk_login_codes_user_id_users")
        codes[code.code_hash] = code

    async def use_login_code(self, code_hash: str, when: datetime) -> bool:
        """Burn the code; ``False`` if it was already used (or never existed)."""
        codes = self._w().login_codes
        code = codes.get(code_hash)
        if code is None or code.use_time is not None:
            return False
        codes[code_hash] = dataclasses.replace(code, use_time=when)
        return True
