"""Protobuf mapping of the tenancy records: org members, user tokens, parent grants, child
summaries and browser sessions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from workcoord.api.v1 import admin_pb2, session_pb2, work_coordinator_pb2
from workcoord.coordinator.domain.child_summaries import ChildSummary, ItemSummary, LaneSummary
from workcoord.coordinator.domain.grants import (
    GrantRecord,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)
from workcoord.coordinator.domain.results import IssuedSession

from .mapping import ts


def member_to_pb(r: MemberRecord) -> admin_pb2.OrgMember:
    out = admin_pb2.OrgMember(user_id=r.user_id, org_slug=r.org_slug, role=r.role)
    out.create_time.CopyFrom(ts(r.create_time))
    return out


def token_to_pb(t: TokenRecord) -> admin_pb2.UserToken:
    out = admin_pb2.UserToken(token_id=t.token_id, user_id=t.user_id, display_name=t.display_name)
    out.create_time.CopyFrom(ts(t.create_time))
    if t.expire_time is not None:
        out.expire_time.CopyFrom(ts(t.expire_time))
    if t.revoke_time is not None:
        out.revoke_time.CopyFrom(ts(t.revoke_time))
    return out


def grant_to_pb(g: GrantRecord, now: datetime) -> work_coordinator_pb2.Grant:
    out = work_coordinator_pb2.Grant(
        grant_id=g.grant_id,
        coordinator_id=g.coordinator_id,
        parent_coordinator_id=g.parent_coordinator_id,
        permissions=[p.value for p in g.permissions],
        created_by=g.created_by,
        live=g.live(now),
    )
    out.expire_time.CopyFrom(ts(g.expire_time))
    out.create_time.CopyFrom(ts(g.create_time))
    if g.revoke_time is not None:
        out.revoke_time.CopyFrom(ts(g.revoke_time))
    return out


def lane_summary_to_pb(s: LaneSummary) -> work_coordinator_pb2.LaneSummary:
    out = work_coordinator_pb2.LaneSummary(
        lane_id=s.lane_id, state=s.state.value, priority=s.priority, next_action=s.next_action
    )
    out.create_time.CopyFrom(ts(s.create_time))
    out.update_time.CopyFrom(ts(s.update_time))
    return out


def item_summary_to_pb(s: ItemSummary) -> work_coordinator_pb2.ItemSummary:
    out = work_coordinator_pb2.ItemSummary(
        item_id=s.item_id,
        lane_id=s.lane_id,
        kind=s.kind.value,
        state=s.state.value,
        priority=s.priority,
        next_action=s.next_action,
    )
    out.create_time.CopyFrom(ts(s.create_time))
    out.update_time.CopyFrom(ts(s.update_time))
    return out


def child_summary_to_pb(s: ChildSummary) -> work_coordinator_pb2.ChildSummary:
    return work_coordinator_pb2.ChildSummary(
        revision=s.revision,
        lanes=[lane_summary_to_pb(lane) for lane in s.lanes],
        items=[item_summary_to_pb(item) for item in s.items],
    )


def session_to_pb(s: SessionRecord) -> session_pb2.Session:
    out = session_pb2.Session(session_id=s.session_id, user_id=s.user_id)
    out.create_time.CopyFrom(ts(s.create_time))
    out.expire_time.CopyFrom(ts(s.expire_time))
    if s.revoke_time is not None:
        out.end_time.CopyFrom(ts(s.revoke_time))
    return out


def issued_session_fields(issued: IssuedSession) -> dict[str, Any]:
    """The fields both session exchanges answer: the session, its secret and CSRF token (the
    only time either is shown)."""
    return {
        "session": session_to_pb(issued.session),
        "session_secret": issued.secret,
        "csrf_token": issued.csrf_token,
    }
