"""Credentials and platform administration: orgs, users, tokens, work keys, settings."""

from __future__ import annotations

import secrets as _secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from workcoord.kit.bus import Notification
from workcoord.kit.errors import (
    AlreadyExists,
    EtagMismatch,
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
    Capability,
    OrgRole,
    Principal,
    PrincipalKind,
    authorize,
    can_see_org,
    credential_problem,
    require_org_admin,
    require_platform_admin,
    require_self_or_platform_admin,
    user_principal,
)
from ..grants import TokenRecord
from ..model import Scope
from ..ports import OrgRecord, UserRecord, WorkKeyRecord
from ..results import IssuedUserToken, IssuedWorkKey, Page, PlatformSettings
from ._base import EngineCore, new_id
from .paging import PageRequest

BOOTSTRAP_USER_EMAIL = "admin@workcoord.local"


class AdminCommands(EngineCore):
    """Authentication and the platform's administration."""

    async def authenticate(self, secret: str | None) -> Principal:
        """Resolve a bearer secret into a principal, from current state: a principal resolved
        earlier is reused only while the credentials epoch has not moved since (see
        :class:`~workcoord.coordinator.domain.auth.PrincipalCache`)."""
        if not secret:
            raise Unauthenticated("a credential is required: Authorization: Bearer <secret>")
        digest = hash_secret(secret)
        if self._service_key_hash and _secrets.compare_digest(digest, self._service_key_hash):
            return RECOVERY
        now = self.clock.now()
        async with self.store.read(snapshot=False) as reader:
            if digest in self.principals:
                cached = self.principals.get(digest, await reader.credentials_epoch())
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
        self.principals.put(digest, resolved.epoch, credential, principal)
        return principal

    async def bootstrap_admin(self, token: str) -> str:
        """Ensure a verified platform admin whose API token is ``token`` (idempotent)."""
        digest = hash_secret(token)
        async with self.store.write() as tx:
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

    async def create_org(self, principal: Principal, slug: str, display_name: str) -> OrgRecord:
        require_platform_admin(principal)
        async with self.store.write() as tx:
            if await tx.get_org(slug) is not None:
                raise AlreadyExists(f"org {slug!r} already exists")
            org = OrgRecord(slug=slug, display_name=display_name or slug, create_time=tx.now)
            await tx.insert_org(org)
            return org

    async def get_org(self, principal: Principal, slug: str) -> OrgRecord:
        async with self.store.read() as reader:
            org = await reader.get_org(slug)
        if org is None or not can_see_org(principal, slug):
            raise NotFound(f"org {slug!r} not found")
        return org

    async def list_orgs(self, principal: Principal, size: int, token: str) -> Page[OrgRecord]:
        request = PageRequest.parse(size, token, ("ListOrgs",))
        async with self.store.read() as reader:
            orgs = await reader.list_orgs(request.after_id, request.fetch)
        visible = [o for o in orgs if can_see_org(principal, o.slug)]
        return request.page(visible, lambda o: [o.slug])

    async def create_user(
        self,
        principal: Principal,
        email: str,
        display_name: str,
        platform_admin: bool,
        verified: bool,
    ) -> UserRecord:
        require_platform_admin(principal)
        async with self.store.write() as tx:
            if await tx.find_user_by_email(email.lower()) is not None:
                raise AlreadyExists(f"a user with email {email!r} already exists")
            user = UserRecord(
                user_id=new_id("usr"),
                email=email.lower(),
                display_name=display_name,
                platform_admin=platform_admin,
                verified=verified,
                create_time=tx.now,
            )
            await tx.insert_user(user)
            return user

    async def get_user(self, principal: Principal, user_id: str) -> UserRecord:
        require_self_or_platform_admin(principal, user_id)
        async with self.store.read() as reader:
            user = await reader.get_user(user_id)
        if user is None:
            raise NotFound(f"user {user_id} not found")
        return user

    async def list_users(self, principal: Principal, size: int, token: str) -> Page[UserRecord]:
        require_platform_admin(principal)
        request = PageRequest.parse(size, token, ("ListUsers",))
        async with self.store.read() as reader:
            users = await reader.list_users(request.after_id, request.fetch)
        return request.page(users, lambda u: [u.user_id])

    async def add_org_member(
        self, principal: Principal, org_slug: str, user_id: str, role: OrgRole
    ) -> datetime:
        require_org_admin(principal, org_slug)
        async with self.store.write() as tx:
            if await tx.get_org(org_slug) is None:
                raise NotFound(f"org {org_slug!r} not found")
            if await tx.get_user(user_id) is None:
                raise NotFound(f"user {user_id} not found")
            await tx.set_member(org_slug, user_id, role.value, tx.now)
            return tx.now

    async def create_user_token(
        self, principal: Principal, user_id: str, display_name: str, expire_time: datetime | None
    ) -> IssuedUserToken:
        """A new API token for ``user_id``; its secret is returned once, stored as a hash."""
        require_self_or_platform_admin(principal, user_id)
        secret = new_secret("wcadm_", self.tokens)
        token_id = new_id("tok")
        async with self.store.write() as tx:
            if expire_time is not None and expire_time <= tx.now:
                raise InvalidArgument.single("token.expire_time", "must be in the future")
            if await tx.get_user(user_id) is None:
                raise NotFound(f"user {user_id} not found")
            record = TokenRecord(token_id, user_id, display_name, tx.now, expire_time)
            await tx.insert_user_token(record, hash_secret(secret))
            return IssuedUserToken(token_id, secret, tx.now)

    async def create_work_key(
        self,
        principal: Principal,
        display_name: str,
        org_slug: str,
        coordinator_ids: Sequence[str],
        capabilities: Sequence[Capability],
        expire_time: datetime | None,
    ) -> IssuedWorkKey:
        """Create a work key; its secret is returned once and stored only as a hash."""
        if not principal.is_human:
            raise PermissionDenied("only a human administrator may create work keys")
        violations: list[FieldViolation] = []
        if not coordinator_ids:
            violations.append(FieldViolation("work_key.coordinator_ids", "is required"))
        if not capabilities:
            violations.append(FieldViolation("work_key.capabilities", "is required"))
        if violations:
            raise InvalidArgument(violations)
        secret = new_secret("wck_", self.tokens)
        async with self.store.write() as tx:
            if expire_time is not None and expire_time <= tx.now:
                raise InvalidArgument.single("work_key.expire_time", "must be in the future")
            # Authorize every coordinator before saying anything about it (no existence
            # oracle): an unknown id and one the caller may not see are both NOT_FOUND.
            key_orgs: set[str] = set()
            for cid in coordinator_ids:
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
            (key_org,) = key_orgs
            if org_slug and org_slug != key_org:
                raise InvalidArgument.single(
                    "work_key.org_slug", "must be the org of the key's work coordinators"
                )
            org_slug = key_org
            if org_slug:
                require_org_admin(principal, org_slug)
            key = WorkKeyRecord(
                key_id=new_id("key"),
                display_name=display_name,
                org_slug=org_slug,
                coordinator_ids=tuple(dict.fromkeys(coordinator_ids)),
                capabilities=tuple(sorted({c.value for c in capabilities})),
                secret_hash=hash_secret(secret),
                create_time=tx.now,
                created_by=principal.name,
                expire_time=expire_time,
            )
            await tx.insert_work_key(key)
            return IssuedWorkKey(key, secret)

    async def _key_visible(self, principal: Principal, key: WorkKeyRecord | None) -> WorkKeyRecord:
        if key is None or not principal.is_human:
            raise NotFound("work key not found")
        if principal.platform_admin:
            return key
        if key.org_slug and principal.org_roles.get(key.org_slug) == OrgRole.ORG_ADMIN:
            return key
        raise NotFound("work key not found")

    async def get_work_key(self, principal: Principal, key_id: str) -> WorkKeyRecord:
        async with self.store.read() as reader:
            key = await reader.get_work_key(key_id)
        return await self._key_visible(principal, key)

    async def list_work_keys(
        self, principal: Principal, org_slug: str, size: int, token: str
    ) -> Page[WorkKeyRecord]:
        if not principal.is_human:
            raise PermissionDenied("only a human administrator may list work keys")
        if not principal.platform_admin:
            if not org_slug:
                raise InvalidArgument.single(
                    "org_slug", "is required unless you are a platform admin"
                )
            require_org_admin(principal, org_slug)
        request = PageRequest.parse(size, token, ("ListWorkKeys", org_slug))
        async with self.store.read() as reader:
            keys = await reader.list_work_keys(org_slug, request.after_id, request.fetch)
        return request.page(keys, lambda k: [k.key_id])

    async def revoke_work_key(self, principal: Principal, key_id: str) -> WorkKeyRecord:
        async with self.store.write() as tx:
            key = await self._key_visible(principal, await tx.get_work_key(key_id))
            if key.revoke_time is None:
                await tx.revoke_work_key(key_id, tx.now)
                key = replace(key, revoke_time=tx.now)
            return key

    async def get_settings(self, principal: Principal) -> PlatformSettings:
        if not principal.is_human:
            raise PermissionDenied("only humans read platform settings")
        async with self.store.read() as reader:
            return PlatformSettings(*await reader.settings_row())

    async def update_settings(
        self, principal: Principal, enabled: bool | None, etag: str
    ) -> PlatformSettings:
        """Switch coordination on or off for the whole platform (``None``: leave it)."""
        require_platform_admin(principal)
        async with self.store.write() as tx:
            current, _, version = await tx.settings_row()
            if etag and etag != str(version):
                raise EtagMismatch()
            if enabled is not None and enabled != current:
                await tx.set_platform_enabled(enabled, tx.now)
            settings = PlatformSettings(*await tx.settings_row())
        if enabled:
            # Wake every long-poll: work may be leasable again.
            async with self.store.read() as reader:
                coordinators = await reader.list_coordinators("", 10_000, None)
            for c in coordinators:
                await self.bus.publish(Notification(c.coordinator_id, c.revision, frozenset()))
        return settings
