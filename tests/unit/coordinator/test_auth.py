"""The authorization matrix of ``authorize``: every principal kind by every access."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workcoord.coordinator.domain.auth import (
    RECOVERY,
    Access,
    Capability,
    OrgRole,
    Principal,
    PrincipalKind,
    authorize,
    require_org_admin,
    require_platform_admin,
)
from workcoord.coordinator.domain.model import Coordinator, CoordinatorConfig, Scope
from workcoord.kit.errors import NotFound, PermissionDenied

NOW = datetime(2026, 1, 1, tzinfo=UTC)
OK, DENIED, HIDDEN = "ok", "denied", "hidden"


def _coordinator(cid: str, scope: Scope, org: str) -> Coordinator:
    return Coordinator(cid, scope, org, cid, True, 0, CoordinatorConfig(), 1, NOW, NOW)


ORG_WC = _coordinator("wc_acme", Scope.ORG, "acme")
GLOBAL_WC = _coordinator("wc_global", Scope.GLOBAL, "")


def _outcome(principal: Principal, coordinator: Coordinator, access: Access) -> str:
    try:
        authorize(principal, coordinator, access)
    except NotFound:
        return HIDDEN
    except PermissionDenied:
        return DENIED
    return OK


def _key(caps: set[Capability], cids: set[str]) -> Principal:
    return Principal(
        kind=PrincipalKind.WORK_KEY,
        id="key_1",
        org_slug="acme",
        capabilities=frozenset(caps),
        coordinator_ids=frozenset(cids),
    )


def _user(roles: dict[str, OrgRole], platform_admin: bool = False) -> Principal:
    return Principal(
        kind=PrincipalKind.USER, id="usr_1", org_roles=roles, platform_admin=platform_admin
    )


ALL = list(Access)
KEY_ACCESS = {Access.READ, Access.LEASE, Access.WRITE}


@pytest.mark.parametrize("capability", list(Capability))
@pytest.mark.parametrize("access", ALL)
def test_work_key_in_scope_gets_exactly_its_capability(
    capability: Capability, access: Access
) -> None:
    key = _key({capability}, {ORG_WC.coordinator_id})
    expected = OK if access.value == capability.value else DENIED
    assert _outcome(key, ORG_WC, access) == expected


@pytest.mark.parametrize("access", ALL)
def test_work_key_with_every_capability_never_decides_configures_or_maintains(
    access: Access,
) -> None:
    key = _key(set(Capability), {ORG_WC.coordinator_id})
    assert _outcome(key, ORG_WC, access) == (OK if access in KEY_ACCESS else DENIED)


@pytest.mark.parametrize("access", ALL)
def test_work_key_out_of_scope_sees_nothing(access: Access) -> None:
    key = _key(set(Capability), {"wc_other"})
    assert _outcome(key, ORG_WC, access) == HIDDEN
    assert _outcome(key, GLOBAL_WC, access) == HIDDEN


@pytest.mark.parametrize("access", ALL)
def test_service_key_only_maintains(access: Access) -> None:
    expected = OK if access == Access.MAINTAIN else DENIED
    assert _outcome(RECOVERY, ORG_WC, access) == expected
    assert _outcome(RECOVERY, GLOBAL_WC, access) == expected


@pytest.mark.parametrize("access", ALL)
def test_platform_admin_may_do_everything_everywhere(access: Access) -> None:
    admin = _user({}, platform_admin=True)
    assert _outcome(admin, ORG_WC, access) == OK
    assert _outcome(admin, GLOBAL_WC, access) == OK


@pytest.mark.parametrize("access", ALL)
def test_org_admin_of_this_org_may_do_everything_here_but_not_globally(access: Access) -> None:
    admin = _user({"acme": OrgRole.ORG_ADMIN})
    assert _outcome(admin, ORG_WC, access) == OK
    assert _outcome(admin, GLOBAL_WC, access) == HIDDEN


@pytest.mark.parametrize("access", ALL)
def test_org_viewer_only_reads(access: Access) -> None:
    viewer = _user({"acme": OrgRole.ORG_VIEWER})
    assert _outcome(viewer, ORG_WC, access) == (OK if access == Access.READ else DENIED)
    assert _outcome(viewer, GLOBAL_WC, access) == HIDDEN


@pytest.mark.parametrize("role", list(OrgRole))
@pytest.mark.parametrize("access", ALL)
def test_members_of_another_org_see_nothing(role: OrgRole, access: Access) -> None:
    outsider = _user({"globex": role})
    assert _outcome(outsider, ORG_WC, access) == HIDDEN


@pytest.mark.parametrize("access", ALL)
def test_a_user_without_roles_sees_nothing(access: Access) -> None:
    assert _outcome(_user({}), ORG_WC, access) == HIDDEN


def test_require_platform_admin() -> None:
    require_platform_admin(_user({}, platform_admin=True))
    for principal in (_user({"acme": OrgRole.ORG_ADMIN}), RECOVERY, _key(set(Capability), set())):
        with pytest.raises(PermissionDenied):
            require_platform_admin(principal)
    # A work key can never be a platform admin, whatever its flags say.
    forged = Principal(kind=PrincipalKind.WORK_KEY, id="k", platform_admin=True)
    with pytest.raises(PermissionDenied):
        require_platform_admin(forged)


def test_require_org_admin() -> None:
    require_org_admin(_user({}, platform_admin=True), "acme")
    require_org_admin(_user({"acme": OrgRole.ORG_ADMIN}), "acme")
    for principal, slug in (
        (_user({"acme": OrgRole.ORG_VIEWER}), "acme"),
        (RECOVERY, "acme"),
        (_key(set(Capability), {ORG_WC.coordinator_id}), "acme"),
    ):
        with pytest.raises(PermissionDenied):
            require_org_admin(principal, slug)
    # A human with no role in the org does not even see it.
    with pytest.raises(NotFound):
        require_org_admin(_user({"acme": OrgRole.ORG_ADMIN}), "globex")


def test_principal_names() -> None:
    assert RECOVERY.name == "service:recovery"
    assert _key(set(), set()).name == "key:key_1"
    assert _user({}).name == "user:usr_1"
    assert _user({}).is_human and not RECOVERY.is_human
