"""Browser sessions: a one-time login code (or an identity verified elsewhere, such as an OIDC
id_token's email) opens a session; a session authenticates like an admin token (the user's
current roles; revocable; expiring) and state-changing calls must also carry its CSRF token.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from workcoord.kit.errors import NotFound, PermissionDenied, Unauthenticated
from workcoord.kit.secrets import SESSION_PREFIX, hash_secret, new_secret, secrets_equal

from ..auth import Principal, require_platform_admin, user_principal
from ..grants import LoginCode, SessionRecord
from ..ports import Tx
from ..results import IssuedLoginCode, IssuedSession, SessionCaller
from ._base import EngineCore, new_id

__all__ = ["LOGIN_CODE_SECONDS", "SESSION_SECONDS", "Sessions"]

LOGIN_CODE_SECONDS = 600
SESSION_SECONDS = 12 * 3600


class Sessions:
    """Login codes and browser sessions, over the engine's shared core."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    async def create_login_code(self, principal: Principal, user_id: str) -> IssuedLoginCode:
        """A one-time login code for ``user_id`` (default: the caller); platform admins only."""
        require_platform_admin(principal)
        target = user_id or principal.id
        code = new_secret(SESSION_PREFIX, self.core.tokens)
        async with self.core.store.write() as tx:
            if await tx.get_user(target) is None:
                raise NotFound(f"user {target} not found")
            expire = tx.now + timedelta(seconds=LOGIN_CODE_SECONDS)
            await tx.insert_login_code(LoginCode(hash_secret(code), target, tx.now, expire))
        return IssuedLoginCode(code=code, expire_time=expire, user_id=target)

    async def exchange_login_code(self, code: str) -> IssuedSession:
        """Burn a one-time code and open a session. Any failure is one UNAUTHENTICATED."""
        refused = Unauthenticated("the login code is unknown, used or expired")
        digest = hash_secret(code)
        secret = new_secret(SESSION_PREFIX, self.core.tokens)
        csrf = new_secret(SESSION_PREFIX, self.core.tokens)
        async with self.core.store.write() as tx:
            found = await tx.find_login_code(digest)
            if found is None or not secrets_equal(found.code_hash, digest):
                raise refused
            if found.use_time is not None or found.expire_time <= tx.now:
                raise refused
            if not await tx.use_login_code(digest, tx.now):
                raise refused
            return await _insert_session(tx, found.user_id, secret, csrf)

    async def open_session_for_email(self, email: str) -> IssuedSession:
        """Open a session for the provisioned user with ``email`` (an identity the caller has
        verified, e.g. an OIDC id_token's verified email). Unknown: UNAUTHENTICATED; no user
        is ever created here, and the user's roles and ``verified`` stay as provisioned."""
        secret = new_secret(SESSION_PREFIX, self.core.tokens)
        csrf = new_secret(SESSION_PREFIX, self.core.tokens)
        async with self.core.store.write() as tx:
            user = await tx.find_user_by_email(email.strip().lower())
            if user is None:
                raise Unauthenticated("no such user")
            return await _insert_session(tx, user.user_id, secret, csrf)

    async def authenticate_session(
        self, secret: str, csrf_token: str | None, *, mutating: bool
    ) -> SessionCaller:
        """Resolve a session secret like an admin token (current roles; revocable; expiring).
        A state-changing call must carry the session's CSRF token (double submit)."""
        digest = hash_secret(secret)
        now = self.core.clock.now()
        async with self.core.store.read() as reader:
            session = await reader.find_session(digest)
            if session is None or not secrets_equal(session.secret_hash, digest):
                raise Unauthenticated("unknown session")
            if session.revoke_time is not None:
                raise Unauthenticated("the session has ended")
            if session.expire_time <= now:
                raise Unauthenticated("the session expired")
            user = await reader.get_user(session.user_id)
            if user is None:
                raise Unauthenticated("unknown session")
            roles = await reader.user_roles(user.user_id)
        if mutating and not (
            csrf_token and secrets_equal(hash_secret(csrf_token), session.csrf_hash)
        ):
            raise PermissionDenied("a state-changing request needs the session's X-CSRF-Token")
        return SessionCaller(principal=user_principal(user, roles), session=session)

    async def end_session(self, session: SessionRecord) -> SessionRecord:
        """End the session at once: its very next call is UNAUTHENTICATED."""
        async with self.core.store.write() as tx:
            current = await tx.get_session(session.session_id)
            if current is None:
                raise NotFound("session not found")
            if current.revoke_time is None:
                await tx.revoke_session(session.session_id, tx.now)
                current = replace(current, revoke_time=tx.now)
            return current


async def _insert_session(tx: Tx, user_id: str, secret: str, csrf: str) -> IssuedSession:
    session = SessionRecord(
        session_id=new_id("ses"),
        user_id=user_id,
        secret_hash=hash_secret(secret),
        csrf_hash=hash_secret(csrf),
        create_time=tx.now,
        expire_time=tx.now + timedelta(seconds=SESSION_SECONDS),
    )
    await tx.insert_session(session)
    return IssuedSession(session=session, secret=secret, csrf_token=csrf)
