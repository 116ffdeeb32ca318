"""Browser login: ``GET /login?code=…`` exchanges a one-time login code (``workcoord dev``
prints the URL) for a session and sets its cookies, then sends the browser to ``next`` (a
same-origin path, see :mod:`workcoord.gateway.return_path`) or ``/``.

- ``workcoord_session``: the session secret; HttpOnly, SameSite=Strict, Path=/, Secure over
  TLS. The gateway forwards it to the coordinator as ``x-workcoord-session`` metadata
  (:mod:`workcoord.gateway.upstream`); the coordinator authenticates it like an admin token.
- ``workcoord_csrf``: the CSRF token, readable by the UI (not HttpOnly), SameSite=Strict. Every
  state-changing cookie-authenticated request must echo it in ``X-CSRF-Token`` (forwarded as
  ``x-workcoord-csrf``); the coordinator compares it with the session's stored hash and answers
  403 otherwise (double submit, checked server side).

The gateway decides nothing: a bad code is the coordinator's 401.
"""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
from starlette.requests import Request
from starlette.responses import Response

from workcoord.api.v1 import session_pb2
from workcoord.gateway.errors import make_status, status_from_rpc_error, status_response
from workcoord.gateway.return_path import NEXT_PARAM, return_path
from workcoord.gateway.upstream import SESSION_COOKIE, Upstreams
from workcoord.kit.errors import Code
from workcoord.kit.wire import API_PACKAGE

__all__ = ["CSRF_COOKIE", "LOGIN_PATH", "login", "no_store", "open_session", "session_response"]

LOGIN_PATH = "/login"
CSRF_COOKIE = "workcoord_csrf"
_TIMEOUT_SECONDS = 10.0


async def login(request: Request, upstreams: Upstreams | None) -> Response:
    """Exchange ``?code=`` for a session; 303 to ``?next=`` (when safe) or ``/`` with the
    cookies set. The code's field rules (required, at most 128 characters) are the
    coordinator's to check, like any request's."""
    code = request.query_params.get("code", "")
    if upstreams is None:
        return status_response(
            make_status(Code.UNAVAILABLE, "the gateway is not connected to its upstreams")
        )
    return await open_session(
        upstreams,
        session_pb2.ExchangeLoginCodeRequest(code=code),
        secure=request.url.scheme in ("https", "wss"),
        location=return_path(request.query_params.get(NEXT_PARAM)),
    )


_ExchangeRequest = session_pb2.ExchangeLoginCodeRequest | session_pb2.ExchangeIdTokenRequest
_ExchangeResponse = session_pb2.ExchangeLoginCodeResponse | session_pb2.ExchangeIdTokenResponse

# SessionService's two exchanges, by request type: method name and response type.
_EXCHANGES: dict[type[_ExchangeRequest], tuple[str, type[_ExchangeResponse]]] = {
    session_pb2.ExchangeLoginCodeRequest: (
        "ExchangeLoginCode",
        session_pb2.ExchangeLoginCodeResponse,
    ),
    session_pb2.ExchangeIdTokenRequest: ("ExchangeIdToken", session_pb2.ExchangeIdTokenResponse),
}


async def open_session(
    upstreams: Upstreams, request: _ExchangeRequest, *, secure: bool, location: str = "/"
) -> Response:
    """Exchange a login code or an id_token for a session and answer with its cookies (303 to
    ``location``, a path the caller has checked), or with the coordinator's error; never
    cached either way."""
    method, response_class = _EXCHANGES[type(request)]
    call: grpc.aio.UnaryUnaryMultiCallable[_ExchangeRequest, _ExchangeResponse]
    call = upstreams.coordinator.unary_unary(
        f"/{API_PACKAGE}.SessionService/{method}",
        request_serializer=type(request).SerializeToString,
        response_deserializer=response_class.FromString,
    )
    try:
        issued = await call(request, timeout=_TIMEOUT_SECONDS)
    except grpc.RpcError as exc:
        return no_store(status_response(status_from_rpc_error(exc)))
    return no_store(
        session_response(
            issued.session,
            issued.session_secret,
            issued.csrf_token,
            secure=secure,
            location=location,
        )
    )


def session_response(
    session: session_pb2.Session,
    secret: str,
    csrf_token: str,
    *,
    secure: bool,
    location: str = "/",
) -> Response:
    """303 to ``location`` setting the session cookie (HttpOnly) and the CSRF cookie."""
    expires = session.expire_time.ToDatetime(tzinfo=UTC)
    max_age = max(0, int((expires - datetime.now(UTC)).total_seconds()))
    response = Response(status_code=303, headers={"Location": location})
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=max_age,
        path="/",
        secure=secure,
        httponly=True,
        samesite="strict",
    )
    response.set_cookie(
        CSRF_COOKIE,
        csrf_token,
        max_age=max_age,
        path="/",
        secure=secure,
        httponly=False,
        samesite="strict",
    )
    return response


def no_store(response: Response) -> Response:
    """``response`` kept out of caches and of the next page's Referer (a login's code or state
    travelled in the URL)."""
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
