"""Bearer credentials: resolving a secret into a principal, the bootstrap admin, users' admin API
tokens and work keys. A secret is shown once, when it is made, and stored only as its hash;
revocation takes effect on the credential's very next call."""

from __future__ import annotations

import secrets as _secrets
from dataclasses import replace

from workcoord.kit.errors import (
    FieldViolation,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from workcoord.kit.secrets import hash_secret, new_secret

from ..auth import (
    RECOVERY,
    Access,
    AccessTokens,
    Capability,
    OrgRole,
    Principal,
    PrincipalKind,
    authorize,
    credential_problem,
    require_org_admin,
    require_platform_admin,
    require_self_or_platform_admin,
    user_principal,
)
from ..grants import TokenRecord
from ..inputs import CreateUserTokenInput, CreateWorkKeyInput, ListWorkKeysInput
from ..model import Scope
from ..ports import UserRecord, WorkKeyRecord
from ..results import IssuedUserToken, IssuedWorkKey, Page
from ._base import EngineCore, new_id
from .paging import PageRequest

__all__ = ["BOOTSTRAP_USER_EMAIL", "Credentials"]

BOOTSTRAP_USER_EMAIL = "admin@workcoord.local"


class Credentials:
    """Authentication by bearer secret, and the credentials behind it, over the engine's
    shared core (whose :attr:`~EngineCore.principals` cache the resolved principals)."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    # ------------------------------------------------------------------ authentication

    async def authenticate(self, secret: str | None) -> Principal:
        """Resolve a bearer secret into a principal, from current state: a principal resolved
        earlier is reused only while the credentials epoch has not moved since (see
        :class:`~workcoord.coordinator.domain.auth.PrincipalCache`)."""
        if not secret:
            raise Unauthenticated("a credential is required: Authorization: Bearer <secret>")
        access_tokens = self.core.access_tokens
        if access_tokens is not None and access_tokens.is_access_token(secret):
            return await self._authenticate_access_token(access_tokens, secret)
        digest = hash_secret(secret)
        service_key_hash = self.core.service_key_hash
        if service_key_hash and _secrets.compare_digest(digest, service_key_hash):
            return RECOVERY
        now = self.core.clock.now()
        principals = self.core.principals
        async with self.core.store.read(snapshot=False) as reader:
            if digest in principals:
                cached = principals.get(digest, await reader.credentials_epoch())
            else:
                cached = None
            if cached is not None:
                credential, principal = cached
                problem = credential_problem(credential, now)
                if problem:
                    raise Unauthenticated(problem)
                return principal
            # One statement: the credential, its work key or its user with their org roles.
            resolved = await reader.resolve_credential(digest)
        if resolved is None:
            raise Unauthenticated("unknown credential")
        credential = resolved.credential
        problem = credential_problem(credential, now)
        if problem:
            raise Unauthenticated(problem)
        if credential.kind == "work_key":
            key = resolved.work_key
            if key is None:
                raise Unauthenticated("unknown credential")
            principal = Principal(
                kind=PrincipalKind.WORK_KEY,
                id=key.key_id,
                display_name=key.display_name,
                org_slug=key.org_slug,
                capabilities=frozenset(Capability(c) for c in key.capabilities),
                coordinator_ids=frozenset(key.coordinator_ids),
            )
        else:
            if resolved.user is None:
                raise Unauthenticated("unknown credential")
            principal = user_principal(resolved.user, resolved.roles or {})
        # Kept under the epoch read with it, in the same statement.
        principals.put(digest, resolved.epoch, credential, principal)
        return principal

    def unconfirmed(self, secret: str | None) -> Principal | None:
        """The principal cached for a bearer ``secret``, at whatever epoch it was resolved,
        WITHOUT reading the epoch now (no I/O): only for a call that confirms it in its own
        transaction before it writes anything (:meth:`cached_principal` at the epoch it reads
        there), else resolves its caller again. None when only
        :meth:`authenticate` can say (nothing cached, an access token, the service key, a
        credential expired or revoked as cached)."""
        if not secret:
            return None
        access_tokens = self.core.access_tokens
        if access_tokens is not None and access_tokens.is_access_token(secret):
            return None
        found = self.core.principals.latest(hash_secret(secret))
        if found is None:
            return None
        credential, principal = found
        if credential_problem(credential, self.core.clock.now()):
            return None
        return principal

    def cached_principal(self, secret: str | None, epoch: int | None) -> Principal | None:
        """The principal of a bearer ``secret`` as the principal cache holds it at ``epoch`` (an
        epoch the caller has just read, e.g. with a coordinator's lock), if its credential is
        still usable now; None when only :meth:`authenticate` can say (nothing cached at that
        epoch, an access token, the service key). No I/O."""
        if not secret or secret == "" or epoch is None:
            return None
        access_tokens = self.core.access_tokens
        if access_tokens is not None and access_tokens.is_access_token(secret):
            return None
        cached = self.core.principals.get(hash_secret(secret), epoch)
        if cached is None:
            return None
        credential, principal = cached
        return None if credential_problem(credential, self.core.clock.now()) else principal

    async def _authenticate_access_token(self, tokens: AccessTokens, token: str) -> Principal:
        """The provisioned user an identity provider's access token names (by its verified
        email, as OIDC browser sign-in maps an id_token), with their current roles. Nothing is
        cached: the token's own expiry bounds it, the user's roles are read on every call."""
        email = await tokens.access_token_email(token)
        async with self.core.store.read() as reader:
            user = await reader.find_user_by_email(email)
            if user is None:
                raise Unauthenticated("no such user")
            roles = await reader.user_roles(user.user_id)
        return user_principal(user, roles)

    async def bootstrap_admin(self, token: str) -> str:
        """Ensure a verified platform admin whose API token is ``token`` (idempotent); its
        user id."""
        digest = hash_secret(token)
        async with self.core.store.write() as tx:
            existing = await tx.find_credential(digest)
            if existing is not None:
                return existing.owner_id
            user = await tx.find_user_by_email(BOOTSTRAP_USER_EMAIL)
            if user is None:
                user = UserRecord(
                    user_id=new_id("usr"),
                    email=BOOTSTRAP_USER_EMAIL,
                    display_name="Bootstrap admin",
                    platform_admin=True,
                    verified=True,
                    create_time=tx.now,
                )
                await tx.insert_user(user)
            record = TokenRecord(new_id("tok"), user.user_id, "bootstrap", tx.now)
            await tx.insert_user_token(record, digest)
            return user.user_id

    # ------------------------------------------------------------------ user tokens

    async def create_user_token(
        self, principal: Principal, new: CreateUserTokenInput
    ) -> IssuedUserToken:
        """A new API token of the user; its secret is returned once, stored as a hash."""
        require_self_or_platform_admin(principal, new.user_id)
        secret = new_secret("wcadm_", self.core.tokens)
        async with self.core.store.write() as tx:
            if new.expire_time is not None and new.expire_time <= tx.now:
                raise InvalidArgument.single("token.expire_time", "must be in the future")
            if await tx.get_user(new.user_id) is None:
                raise NotFound(f"user {new.user_id} not found")
            token = TokenRecord(
                new_id("tok"), new.user_id, new.display_name, tx.now, new.expire_time
            )
            await tx.insert_user_token(token, hash_secret(secret))
            return IssuedUserToken(token, secret)

    async def revoke_user_token(
        self, principal: Principal, user_id: str, token_id: str
    ) -> TokenRecord:
        """Revoke at once: the token's very next request is UNAUTHENTICATED."""
        require_self_or_platform_admin(principal, user_id)
        async with self.core.store.write() as tx:
            token = await tx.get_user_token(token_id)
            if token is None or token.user_id != user_id:
                raise NotFound(f"token {token_id} not found")
            if token.revoke_time is None:
                await tx.revoke_user_token(token_id, tx.now)
                token = replace(token, revoke_time=tx.now)
            return token

    # ------------------------------------------------------------------ work keys

    async def create_work_key(self, principal: Principal, new: CreateWorkKeyInput) -> IssuedWorkKey:
        """Create a work key; its secret is returned once and stored only as a hash."""
        if not principal.is_human:
            raise PermissionDenied("only a human administrator may create work keys")
        violations: list[FieldViolation] = []
        if not new.coordinator_ids:
            violations.append(FieldViolation("work_key.coordinator_ids", "is required"))
        if not new.capabilities:
            violations.append(FieldViolation("work_key.capabilities", "is required"))
        if violations:
            raise InvalidArgument(violations)
        secret = new_secret("wck_", self.core.tokens)
        async with self.core.store.write() as tx:
            if new.expire_time is not None and new.expire_time <= tx.now:
                raise InvalidArgument.single("work_key.expire_time", "must be in the future")
            # Authorize every coordinator before saying anything about it (no existence
            # oracle): an unknown id and one the caller may not see are both NOT_FOUND.
            key_orgs: set[str] = set()
            for cid in new.coordinator_ids:
                coordinator = await tx.get_coordinator(cid)
                if coordinator is None:
                    raise NotFound(f"work coordinator {cid} not found")
                authorize(principal, coordinator, Access.CONFIGURE)
                if coordinator.scope == Scope.GLOBAL:
                    require_platform_admin(principal)
                key_orgs.add(coordinator.org_slug)
            # A key belongs to the one org of its work coordinators (GLOBAL: no org).
            if len(key_orgs) > 1:
                raise InvalidArgument.single(
                    "work_key.coordinator_ids", "must all belong to one org (or all be GLOBAL)"
                )
            (org_slug,) = key_orgs
            if new.org_slug and new.org_slug != org_slug:
                raise InvalidArgument.single(
                    "work_key.org_slug", "must be the org of the key's work coordinators"
                )
            if org_slug:
                require_org_admin(principal, org_slug)
            key = WorkKeyRecord(
                key_id=new_id("key"),
                display_name=new.display_name,
                org_slug=org_slug,
                coordinator_ids=tuple(dict.fromkeys(new.coordinator_ids)),
                capabilities=tuple(sorted({c.value for c in new.capabilities})),
                secret_hash=hash_secret(secret),
                create_time=tx.now,
                created_by=principal.name,
                expire_time=new.expire_time,
            )
            await tx.insert_work_key(key)
            return IssuedWorkKey(key, secret)

    async def get_work_key(self, principal: Principal, key_id: str) -> WorkKeyRecord:
        async with self.core.store.read() as reader:
            key = await reader.get_work_key(key_id)
        return _visible_key(principal, key)

    async def list_work_keys(
        self, principal: Principal, listing: ListWorkKeysInput
    ) -> Page[WorkKeyRecord]:
        if not principal.is_human:
            raise PermissionDenied("only a human administrator may list work keys")
        org_slug = listing.org_slug
        if not principal.platform_admin:
            if not org_slug:
                raise InvalidArgument.single(
                    "org_slug", "is required unless you are a platform admin"
                )
            require_org_admin(principal, org_slug)
        request = PageRequest.parse(
            listing.page_size, listing.page_token, ("ListWorkKeys", org_slug)
        )
        async with self.core.store.read() as reader:
            keys = await reader.list_work_keys(org_slug, request.after_id, request.fetch)
        return request.page(keys, lambda k: [k.key_id])

    async def revoke_work_key(self, principal: Principal, key_id: str) -> WorkKeyRecord:
        """Revoke at once: the key's very next request is UNAUTHENTICATED."""
        async with self.core.store.write() as tx:
            key = _visible_key(principal, await tx.get_work_key(key_id))
            if key.revoke_time is None:
                await tx.revoke_work_key(key_id, tx.now)
                key = replace(key, revoke_time=tx.now)
            return key


def _visible_key(principal: Principal, key: WorkKeyRecord | None) -> WorkKeyRecord:
    """The key, if the caller administers it (a platform admin, or an admin of its org):
    NOT_FOUND otherwise, as for an unknown key."""
    if key is None or not principal.is_human:
        raise NotFound("work key not found")
    if principal.platform_admin:
        return key
    if key.org_slug and principal.org_roles.get(key.org_slug) == OrgRole.ORG_ADMIN:
        return key
    raise NotFound("work key not found")
