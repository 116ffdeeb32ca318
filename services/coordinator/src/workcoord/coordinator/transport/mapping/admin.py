"""Administration: platform settings, orgs, users, work keys, principals and leadership."""

from __future__ import annotations

from workcoord.api.v1 import (
    admin_pb2,
    maintenance_pb2,
)
from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.ports import Leadership, OrgRecord, UserRecord, WorkKeyRecord
from workcoord.coordinator.domain.results import PlatformSettings

from .fields import ToPb

_SETTINGS = ToPb(admin_pb2.Settings, times=("update_time",))
_ORG = ToPb(admin_pb2.Org, plain=("slug", "display_name"), times=("create_time",))
_USER = ToPb(
    admin_pb2.User,
    plain=("user_id", "email", "display_name", "platform_admin", "verified"),
    times=("create_time",),
)
# Never the secret hash.
_WORK_KEY = ToPb(
    admin_pb2.WorkKey,
    plain=("key_id", "display_name", "org_slug", "coordinator_ids", "capabilities", "created_by"),
    times=("create_time", "expire_time", "revoke_time"),
)
_LEADERSHIP = ToPb(
    maintenance_pb2.Leadership, plain=("name", "holder_id", "term"), times=("expire_time",)
)


def settings_to_pb(settings: PlatformSettings) -> admin_pb2.Settings:
    return _SETTINGS(
        settings, work_coordinator_enabled=settings.enabled, etag=str(settings.version)
    )


def org_to_pb(org: OrgRecord) -> admin_pb2.Org:
    return _ORG(org)


def user_to_pb(user: UserRecord) -> admin_pb2.User:
    return _USER(user)


def work_key_to_pb(key: WorkKeyRecord) -> admin_pb2.WorkKey:
    return _WORK_KEY(key)


def principal_to_pb(p: Principal) -> admin_pb2.Principal:
    return admin_pb2.Principal(
        kind=p.kind.value,
        name=p.name,
        id=p.id,
        display_name=p.display_name,
        platform_admin=p.platform_admin,
        memberships=[
            admin_pb2.OrgMember(user_id=p.id, org_slug=slug, role=role.value)
            for slug, role in sorted(p.org_roles.items())
        ],
        capabilities=sorted(c.value for c in p.capabilities),
        coordinator_ids=sorted(p.coordinator_ids),
    )


def leadership_to_pb(leadership: Leadership, held: bool) -> maintenance_pb2.Leadership:
    return _LEADERSHIP(leadership, held=held)
