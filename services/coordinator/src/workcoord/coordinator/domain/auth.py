"""Principals and the authorization rules: who may do what to which work coordinator.

The coordinator decides every authorization, on every request, from current state: the
principal is resolved from the credential for each call and nothing outlives a revocation.
A resolved principal may be reused (:class:`PrincipalCache`) only while the credentials epoch,
read on every call, has not moved since it was resolved: any change to a credential, a user or
an org role moves it, so a revocation applies on the very next request.
"""

from __future__ import annotations

import enum
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from workcoord.kit.errors import NotFound, PermissionDenied, WorkcoordError

from .model import Coordinator, Scope
from .ports import Credential, UserRecord


class PrincipalKind(enum.StrEnum):
    USER = "USER"
    WORK_KEY = "WORK_KEY"
    SERVICE = "SERVICE"


class OrgRole(enum.StrEnum):
    ORG_ADMIN = "ORG_ADMIN"
    ORG_VIEWER = "ORG_VIEWER"


class Capability(enum.StrEnum):
    READ = "READ"
    LEASE = "LEASE"
    WRITE = "WRITE"


class Access(enum.StrEnum):
    """What a call does to a work coordinator."""

    READ = "READ"
    LEASE = "LEASE"  # worker calls
    WRITE = "WRITE"  # create and change lanes and items
    DECIDE = "DECIDE"  # approve, deny, resume, retry, resolve: humans only
    CONFIGURE = "CONFIGURE"  # change the work coordinator, keys, grants
    MAINTAIN = "MAINTAIN"  # recovery passes


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    id: str
    display_name: str = ""
    platform_admin: bool = False
    org_roles: dict[str, OrgRole] = field(default_factory=dict)
    org_slug: str = ""
    capabilities: frozenset[Capability] = frozenset()
    coordinator_ids: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        """The actor name recorded on events and attempts."""
        prefix = {
            PrincipalKind.USER: "user",
            PrincipalKind.WORK_KEY: "key",
            PrincipalKind.SERVICE: "service",
        }[self.kind]
        return f"{prefix}:{self.id}"

    @property
    def is_human(self) -> bool:
        return self.kind == PrincipalKind.USER


class AccessTokens(Protocol):
    """The identity provider's access tokens (JWTs an MCP client sends as its bearer
    credential), verified outside the domain (``workcoord.coordinator.oidc``)."""

    def is_access_token(self, secret: str) -> bool:
        """Whether ``secret`` has the shape of one (a JWT): no workcoord secret has."""
        ...

    async def access_token_email(self, access_token: str) -> str:
        """The verified email the token names; UNAUTHENTICATED when it is not valid."""
        ...


SYSTEM_ACTOR = "system"
RECOVERY = Principal(kind=PrincipalKind.SERVICE, id="recovery", display_name="recovery service")

_KEY_CAPABILITY = {
    Access.READ: Capability.READ,
    Access.LEASE: Capability.LEASE,
    Access.WRITE: Capability.WRITE,
}
_ORG_ROLE_ACCESS = {
    OrgRole.ORG_ADMIN: frozenset(Access),
    OrgRole.ORG_VIEWER: frozenset({Access.READ}),
}


def authorize(principal: Principal, coordinator: Coordinator, access: Access) -> None:
    """Raise unless ``principal`` may perform ``access`` on ``coordinator``.

    A caller that may not see the work coordinator at all gets NOT_FOUND (no existence
    oracle); one that sees it but may not do this gets PERMISSION_DENIED.
    """
    hidden = NotFound(f"work coordinator {coordinator.coordinator_id} not found")
    if principal.kind == PrincipalKind.SERVICE:
        if access == Access.MAINTAIN:
            return
        raise PermissionDenied("the service key may only run maintenance")
    if principal.kind == PrincipalKind.WORK_KEY:
        if coordinator.coordinator_id not in principal.coordinator_ids:
            raise hidden
        needed = _KEY_CAPABILITY.get(access)
        if needed is None:
            raise PermissionDenied(f"a work key can never {access.value.lower()}")
        if needed not in principal.capabilities:
            raise PermissionDenied(f"this work key lacks the {needed.value} capability")
        return
    if principal.platform_admin:
        return
    if coordinator.scope == Scope.GLOBAL:
        raise hidden
    role = principal.org_roles.get(coordinator.org_slug)
    if role is None:
        raise hidden
    if access not in _ORG_ROLE_ACCESS[role]:
        raise PermissionDenied(f"an {role.value} may not {access.value.lower()} here")


def may(principal: Principal, coordinator: Coordinator, access: Access) -> bool:
    """Whether :func:`authorize` lets ``principal`` perform ``access`` on ``coordinator``."""
    try:
        authorize(principal, coordinator, access)
    except WorkcoordError:
        return False
    return True


def may_read_bodies(principal: Principal, coordinator: Coordinator) -> bool:
    """Whether ``principal`` may read the private bodies of ``coordinator``'s work: the inputs
    of its lanes and items and the checkpoints of their attempts (GetLane, GetItem). Those who
    decide may: platform admins and the org's admins. Org viewers and work keys see only that
    they exist; views, feeds, summaries and events never carry them, whoever reads."""
    if not principal.is_human:
        return False
    if principal.platform_admin:
        return True
    if coordinator.scope == Scope.GLOBAL:
        return False
    return principal.org_roles.get(coordinator.org_slug) == OrgRole.ORG_ADMIN


def require_platform_admin(principal: Principal) -> None:
    if not (principal.is_human and principal.platform_admin):
        raise PermissionDenied("only a verified platform admin may do this")


def require_org_role(principal: Principal, org_slug: str, *, admin: bool) -> None:
    """Humans with a role in ``org_slug`` (an admin role if ``admin``), or platform admins.
    A human with no role in the org gets NOT_FOUND (no existence oracle), a viewer asking to
    administer PERMISSION_DENIED."""
    if not principal.is_human:
        raise PermissionDenied("only a human administrator may do this")
    if principal.platform_admin:
        return
    role = principal.org_roles.get(org_slug)
    if role is None:
        raise NotFound(f"org {org_slug!r} not found")
    if admin and role != OrgRole.ORG_ADMIN:
        raise PermissionDenied(f"only an admin of org {org_slug!r} may do this")


def require_org_admin(principal: Principal, org_slug: str) -> None:
    """Platform admins, or admins of ``org_slug``; humans only."""
    require_org_role(principal, org_slug, admin=True)


def can_see_org(principal: Principal, org_slug: str) -> bool:
    return principal.platform_admin or org_slug in principal.org_roles


def require_self_or_platform_admin(principal: Principal, user_id: str) -> None:
    """The user themself or a platform admin; anyone else learns nothing (NOT_FOUND)."""
    if not (principal.platform_admin or (principal.is_human and principal.id == user_id)):
        raise NotFound(f"user {user_id} not found")


def user_principal(user: UserRecord, roles: Mapping[str, str]) -> Principal:
    """The principal of a signed-in user, from their current record and org roles: platform
    admin only once verified."""
    return Principal(
        kind=PrincipalKind.USER,
        id=user.user_id,
        display_name=user.display_name,
        platform_admin=user.platform_admin and user.verified,
        org_roles={slug: OrgRole(role) for slug, role in roles.items()},
    )


@dataclass(frozen=True, slots=True)
class _Cached:
    epoch: int
    until: float  # monotonic
    credential: Credential
    principal: Principal


class PrincipalCache:
    """Principals of recently resolved bearer credentials (by the secret's hash), each with
    the credentials epoch it was resolved at.

    :meth:`get` answers only for the epoch the caller has just read, so nothing cached
    survives a change to credentials, users or roles; the credential's own expiry and
    revocation are checked again on every use by the caller. Entries also lapse after
    ``ttl_seconds`` and the oldest go beyond ``max_entries``.
    """

    def __init__(self, *, max_entries: int = 4096, ttl_seconds: float = 60.0) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._entries: OrderedDict[str, _Cached] = OrderedDict()

    def __contains__(self, digest: object) -> bool:
        return digest in self._entries

    def get(self, digest: str, epoch: int | None) -> tuple[Credential, Principal] | None:
        """The credential and principal cached for ``digest`` at ``epoch`` (None: resolve)."""
        if epoch is None:
            return None
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if entry.epoch != epoch or entry.until <= time.monotonic():
            del self._entries[digest]
            return None
        return entry.credential, entry.principal

    def latest(self, digest: str) -> tuple[Credential, Principal] | None:
        """What is cached for ``digest``, whatever the epoch is now: for a caller confirmed
        later, in its own transaction, before it writes (heartbeats; see
        ``Credentials.unconfirmed``)."""
        entry = self._entries.get(digest)
        if entry is None or entry.until <= time.monotonic():
            return None
        return entry.credential, entry.principal

    def put(
        self, digest: str, epoch: int | None, credential: Credential, principal: Principal
    ) -> None:
        """Keep what was resolved at ``epoch`` (nothing when the epoch is unknown)."""
        if epoch is None:
            return
        self._entries[digest] = _Cached(
            epoch, time.monotonic() + self.ttl_seconds, credential, principal
        )
        self._entries.move_to_end(digest)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


def credential_problem(credential: Credential, now: datetime) -> str:
    """Why ``credential`` cannot be used at ``now`` ("" if it can)."""
    if credential.revoke_time is not None:
        return "the credential was revoked"
    if credential.expire_time is not None and credential.expire_time <= now:
        return "the credential expired"
    return ""
