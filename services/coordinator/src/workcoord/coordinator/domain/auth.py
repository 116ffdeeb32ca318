"""Principals and the authorization rules: who may do what to which work coordinator.

The coordinator decides every authorization, on every request, from current state: the
principal is resolved from the credential for each call and nothing outlives a revocation.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from workcoord.kit.errors import NotFound, PermissionDenied, WorkcoordError

from .model import Coordinator, Scope
from .ports import UserRecord


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
