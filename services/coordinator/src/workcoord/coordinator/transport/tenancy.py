"""Transport of the tenancy release: the caller's credential (bearer or browser session, with
CSRF for state-changing session calls), protobuf mapping of grants, members, tokens and child
summaries, and ``SessionService``."""

from __future__ import annotations

import functools
from typing import Any

import grpc
from google.api import annotations_pb2
from google.protobuf.message import Message

from workcoord.api.v1 import (
    admin_pb2,
    feed_pb2,
    lane_pb2,
    maintenance_pb2,
    recovery_pb2,
    session_pb2,
    session_pb2_grpc,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.grants import (
    GrantRecord,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)
from workcoord.coordinator.domain.tenancy import (
    ChildSummary,
    ItemSummary,
    LaneSummary,
    Tenancy,
)
from workcoord.coordinator.oidc import OidcVerifier
from workcoord.kit.errors import NotFound, Unimplemented
from workcoord.kit.validation import raise_if_invalid

from . import mapping as m
from .credentials import bearer

__all__ = [
    "CSRF_METADATA",
    "SESSION_METADATA",
    "SESSION_SERVICES",
    "SessionServicer",
    "authenticate_call",
    "child_summary_to_pb",
    "grant_to_pb",
    "is_state_changing",
    "item_summary_to_pb",
    "lane_summary_to_pb",
    "member_to_pb",
    "token_to_pb",
]

Context = grpc.aio.ServicerContext[Any, Any]

SESSION_METADATA = "x-workcoord-session"
CSRF_METADATA = "x-workcoord-csrf"

_API_MODULES = (
    admin_pb2,
    feed_pb2,
    lane_pb2,
    maintenance_pb2,
    recovery_pb2,
    session_pb2,
    work_coordinator_pb2,
    worker_pb2,
)


@functools.cache
def _safe_requests() -> frozenset[str]:
    """Full names of the request messages of RPCs bound to HTTP GET (reads). Every other
    RPC changes state and, called with a browser session, needs the CSRF token."""
    safe: set[str] = set()
    for module in _API_MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                options = method.GetOptions()
                if options.HasExtension(annotations_pb2.http):
                    rule = options.Extensions[annotations_pb2.http]
                    if rule.WhichOneof("pattern") == "get":
                        safe.add(method.input_type.full_name)
    return frozenset(safe)


def is_state_changing(request: Message) -> bool:
    return request.DESCRIPTOR.full_name not in _safe_requests()


def _metadata(context: Context, key: str) -> str | None:
    for name, value in context.invocation_metadata() or ():
        if name == key:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


async def authenticate_call(
    engine: Engine, tenancy: Tenancy, request: Message, context: Context, bearer: str | None
) -> tuple[Principal, SessionRecord | None]:
    """The caller: a bearer credential if present, else a browser session (metadata
    ``x-workcoord-session``, forwarded by the gateway from its cookie). A state-changing call
    with a session must carry the session's CSRF token (``x-workcoord-csrf``)."""
    if bearer is None:
        session_secret = _metadata(context, SESSION_METADATA)
        if session_secret:
            caller = await tenancy.authenticate_session(
                session_secret,
                _metadata(context, CSRF_METADATA),
                mutating=is_state_changing(request),
            )
            return caller.principal, caller.session
    return await engine.authenticate(bearer), None


# ---------------------------------------------------------------------- mapping


def grant_to_pb(g: GrantRecord, now: Any) -> work_coordinator_pb2.Grant:
    out = work_coordinator_pb2.Grant(
        grant_id=g.grant_id,
        coordinator_id=g.coordinator_id,
        parent_coordinator_id=g.parent_coordinator_id,
        permissions=[p.value for p in g.permissions],
        created_by=g.created_by,
        live=g.live(now),
    )
    out.expire_time.CopyFrom(m.ts(g.expire_time))
    out.create_time.CopyFrom(m.ts(g.create_time))
    if g.revoke_time is not None:
        out.revoke_time.CopyFrom(m.ts(g.revoke_time))
    return out


def member_to_pb(r: MemberRecord) -> admin_pb2.OrgMember:
    out = admin_pb2.OrgMember(user_id=r.user_id, org_slug=r.org_slug, role=r.role)
    out.create_time.CopyFrom(m.ts(r.create_time))
    return out


def token_to_pb(t: TokenRecord) -> admin_pb2.UserToken:
    out = admin_pb2.UserToken(token_id=t.token_id, user_id=t.user_id, display_name=t.display_name)
    out.create_time.CopyFrom(m.ts(t.create_time))
    if t.expire_time is not None:
        out.expire_time.CopyFrom(m.ts(t.expire_time))
    if t.revoke_time is not None:
        out.revoke_time.CopyFrom(m.ts(t.revoke_time))
    return out


def lane_summary_to_pb(s: LaneSummary) -> work_coordinator_pb2.LaneSummary:
    out = work_coordinator_pb2.LaneSummary(
        lane_id=s.lane_id,
        state=s.state.value,
        priority=s.priority,
        next_action=s.next_action,
    )
    out.create_time.CopyFrom(m.ts(s.create_time))
    out.update_time.CopyFrom(m.ts(s.update_time))
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
    out.create_time.CopyFrom(m.ts(s.create_time))
    out.update_time.CopyFrom(m.ts(s.update_time))
    return out


def child_summary_to_pb(s: ChildSummary) -> work_coordinator_pb2.ChildSummary:
    return work_coordinator_pb2.ChildSummary(
        revision=s.revision,
        lanes=[lane_summary_to_pb(lane) for lane in s.lanes],
        items=[item_summary_to_pb(item) for item in s.items],
    )


def session_to_pb(s: SessionRecord) -> session_pb2.Session:
    out = session_pb2.Session(session_id=s.session_id, user_id=s.user_id)
    out.create_time.CopyFrom(m.ts(s.create_time))
    out.expire_time.CopyFrom(m.ts(s.expire_time))
    if s.revoke_time is not None:
        out.end_time.CopyFrom(m.ts(s.revoke_time))
    return out


# ---------------------------------------------------------------------- SessionService


class SessionServicer(session_pb2_grpc.SessionServiceServicer):
    def __init__(self, engine: Engine, oidc: OidcVerifier | None = None) -> None:
        self.engine = engine
        self.tenancy = Tenancy(engine)
        self.oidc = oidc

    async def _caller(
        self, request: Message, context: Context
    ) -> tuple[Principal, SessionRecord | None]:

        raise_if_invalid(request, self.engine.clock.now())
        return await authenticate_call(self.engine, self.tenancy, request, context, bearer(context))

    async def CreateLoginCode(
        self, request: session_pb2.CreateLoginCodeRequest, context: Context
    ) -> session_pb2.CreateLoginCodeResponse:
        principal, _ = await self._caller(request, context)
        issued = await self.tenancy.create_login_code(principal, request.user_id)
        out = session_pb2.CreateLoginCodeResponse(code=issued.code, user_id=issued.user_id)
        out.expire_time.CopyFrom(m.ts(issued.expire_time))
        return out

    async def ExchangeLoginCode(
        self, request: session_pb2.ExchangeLoginCodeRequest, context: Context
    ) -> session_pb2.ExchangeLoginCodeResponse:
        raise_if_invalid(request, self.engine.clock.now())
        issued = await self.tenancy.exchange_login_code(request.code)
        return session_pb2.ExchangeLoginCodeResponse(
            session=session_to_pb(issued.session),
            session_secret=issued.secret,
            csrf_token=issued.csrf_token,
        )

    async def ExchangeIdToken(
        self, request: session_pb2.ExchangeIdTokenRequest, context: Context
    ) -> session_pb2.ExchangeIdTokenResponse:
        raise_if_invalid(request, self.engine.clock.now())
        if self.oidc is None:
            raise Unimplemented("OpenID Connect login is not configured on this coordinator")
        identity = await self.oidc.verify(request.id_token, request.nonce)
        issued = await self.tenancy.open_session_for_email(identity.email)
        return session_pb2.ExchangeIdTokenResponse(
            session=session_to_pb(issued.session),
            session_secret=issued.secret,
            csrf_token=issued.csrf_token,
        )

    async def GetSession(
        self, request: session_pb2.GetSessionRequest, context: Context
    ) -> session_pb2.GetSessionResponse:
        _, session = await self._caller(request, context)
        if session is None:
            raise NotFound("this call was not made with a browser session")
        return session_pb2.GetSessionResponse(session=session_to_pb(session))

    async def EndSession(
        self, request: session_pb2.EndSessionRequest, context: Context
    ) -> session_pb2.EndSessionResponse:
        _, session = await self._caller(request, context)
        if session is None:
            raise NotFound("this call was not made with a browser session")
        ended = await self.tenancy.end_session(session)
        return session_pb2.EndSessionResponse(session=session_to_pb(ended))


SESSION_SERVICES = (
    (
        session_pb2_grpc.add_SessionServiceServicer_to_server,
        SessionServicer,
        "SessionService",
    ),
)
