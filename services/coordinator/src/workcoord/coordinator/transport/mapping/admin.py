"""Administration: platform settings, orgs, users, work keys, principals and leadership."""

from __future__ import annotations

from workcoord.api.v1 import (
    admin_pb2,
    maintenance_pb2,
)
from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.ports import Leadership, OrgRecord, UserRecord, WorkKeyRecord
from workcoord.coordinator.domain.specs import PlatformSettings

from .scalars import (
    set_message,
    ts,
)


def settings_to_pb(settings: PlatformSettings) -> admin_pb2.Settings:
    out = admin_pb2.Settings(work_coordinator_enabled=settings.enabled, etag=str(settings.version))
    out.update_time.CopyFrom(ts(settings.update_time))
    return out


def org_to_pb(org: OrgRecord) -> admin_pb2.Org:
    out = admin_pb2.Org(slug=org.slug, display_name=org.display_name)
    set_message(out, "create_time", ts(org.create_time))
    return out


def user_to_pb(user: UserRecord) -> admin_pb2.User:
    out = admin_pb2.User(
        user_id=user.user_id,
        email=user.email,
        display_name=user.display_name,
        platform_admin=user.platform_admin,
        verified=user.verified,
    )
    set_message(out, "create_time", ts(user.create_time))
    return out


def work_key_to_pb(key: WorkKeyRecord) -> admin_pb2.WorkKey:
    out = admin_pb2.WorkKey(
        key_id=key.key_id,
        display_name=key.display_name,
        org_slug=key.org_slug,
        coordinator_ids=list(key.coordinator_ids),
        capabilities=list(key.capabilities),
        created_by=key.created_by,
    )
    set_message(out, "create_time", ts(key.create_time))
    set_message(out, "expire_time", ts(key.expire_time))
    set_message(out, "revoke_time", ts(key.revoke_time))
    return out


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
    out = maintenance_pb2.Leadership(
        name=leadership.name, holder_id=leadership.holder_id, held=held, term=leadership.term
    )
    set_message(out, "expire_time", ts(leadership.expire_time))
    return out
