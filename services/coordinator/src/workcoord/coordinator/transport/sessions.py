"""``SessionService``: browser sessions. A signed-in caller mints a one-time login code; the
code, or an OpenID Connect id_token, is exchanged for a session (those two exchanges take no
credential: see :data:`.gate.OPEN_METHODS`); a session can be shown and ended."""

from __future__ import annotations

from workcoord.api.v1 import session_pb2, session_pb2_grpc
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.grants import SessionRecord
from workcoord.coordinator.oidc import OidcVerifier
from workcoord.kit.errors import NotFound, Unimplemented

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller
from .tenancy_mapping import issued_session_fields, session_to_pb

__all__ = ["SessionServicer"]


class SessionServicer(EngineServicer, session_pb2_grpc.SessionServiceServicer):
    def __init__(self, engine: Engine, oidc: OidcVerifier | None = None) -> None:
        super().__init__(engine)
        self.oidc = oidc

    async def CreateLoginCode(
        self, request: session_pb2.CreateLoginCodeRequest, context: Context
    ) -> session_pb2.CreateLoginCodeResponse:
        p = caller().principal
        issued = await self.engine.sessions.create_login_code(p, request.user_id)
        out = session_pb2.CreateLoginCodeResponse(code=issued.code, user_id=issued.user_id)
        out.expire_time.CopyFrom(m.ts(issued.expire_time))
        return out

    async def ExchangeLoginCode(
        self, request: session_pb2.ExchangeLoginCodeRequest, context: Context
    ) -> session_pb2.ExchangeLoginCodeResponse:
        issued = await self.engine.sessions.exchange_login_code(request.code)
        return session_pb2.ExchangeLoginCodeResponse(**issued_session_fields(issued))

    async def ExchangeIdToken(
        self, request: session_pb2.ExchangeIdTokenRequest, context: Context
    ) -> session_pb2.ExchangeIdTokenResponse:
        if self.oidc is None:
            raise Unimplemented("OpenID Connect login is not configured on this coordinator")
        identity = await self.oidc.verify(request.id_token, request.nonce)
        issued = await self.engine.sessions.open_session_for_email(identity.email)
        return session_pb2.ExchangeIdTokenResponse(**issued_session_fields(issued))

    async def GetSession(
        self, request: session_pb2.GetSessionRequest, context: Context
    ) -> session_pb2.GetSessionResponse:
        return session_pb2.GetSessionResponse(session=session_to_pb(_current_session()))

    async def EndSession(
        self, request: session_pb2.EndSessionRequest, context: Context
    ) -> session_pb2.EndSessionResponse:
        ended = await self.engine.sessions.end_session(_current_session())
        return session_pb2.EndSessionResponse(session=session_to_pb(ended))


def _current_session() -> SessionRecord:
    session = caller().session
    if session is None:
        raise NotFound("this call was not made with a browser session")
    return session
