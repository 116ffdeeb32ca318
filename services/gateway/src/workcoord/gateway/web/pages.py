"""The web pages people keep open: routing, sign-in redirects and security headers.

:class:`WebPages` sits in front of the API's ASGI callable and answers only its own paths:

- ``/``: a signed-in person goes to the right page (platform admins to the admin page, a member
  of one org to that org's page, anyone else to a chooser); an anonymous one to ``/sign-in``.
- ``/sign-in``: the one-time code form (and OpenID Connect when the gateway has it). Its
  ``?next=`` (a same-origin path, :mod:`workcoord.gateway.return_path`) rides along with the
  code and the OIDC login, so a person lands back where they were headed.
- ``/o/<slug>/work-coordinator`` and ``/admin/work-coordinator``: static page shells. Every bit
  of data they show comes from the API, with the caller's session, so an anonymous request
  never sees any; without a session cookie they redirect to ``/sign-in?next=<the page>``.
- ``/ui/<file>``: the pages' scripts and styles (:mod:`workcoord.gateway.web.assets`).
- ``GET /login`` and ``/login/oidc/callback`` from a browser: a refusal lands on ``/sign-in``
  with a message (and the ``next`` it came with) instead of the API's JSON (programs, which do
  not ask for HTML, still get the Status).

The gateway still decides nothing: who may see or do what is the coordinator's answer to the
API calls the pages make.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import quote

import grpc
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workcoord.api.v1 import admin_pb2
from workcoord.gateway.metrics import label_route
from workcoord.gateway.oidc import OIDC_CALLBACK_PATH, OIDC_LOGIN_PATH, OidcLogin
from workcoord.gateway.return_path import NEXT_PARAM, return_path, sign_in_location
from workcoord.gateway.session import LOGIN_PATH
from workcoord.gateway.upstream import SESSION_COOKIE, Upstreams, forwarded
from workcoord.gateway.web.assets import ASSET_PREFIX, Assets, page_headers
from workcoord.kit.errors import Unauthenticated

__all__ = ["ADMIN_PAGE", "SIGN_IN_PAGE", "WebPages", "org_page"]

_log = logging.getLogger(__name__)

SIGN_IN_PAGE = "/sign-in"
ADMIN_PAGE = "/admin/work-coordinator"
_ORG_PAGE = re.compile(r"/o/([a-z0-9][a-z0-9-]{0,62})/work-coordinator")
_WHO_AM_I = "/workcoord.api.v1.AdminService/GetCurrentPrincipal"
_TIMEOUT_SECONDS = 10.0
_SIGN_IN_ERRORS = {
    "expired": "That sign-in link did not work: it has expired or was used already. "
    "Ask for a new one (workcoord dev prints one each time it starts).",
    "unavailable": "The service is not answering right now. Try again in a moment.",
    "signed-out": "You are signed out.",
    "refused": "Your organization's sign-in did not let you in here. If you should have "
    "access, ask an admin to add you.",
}
# Sign-in endpoints whose refusals a browser sees as the sign-in page with this message.
_SIGN_IN_FAILURES = {LOGIN_PATH: "expired", OIDC_CALLBACK_PATH: "refused"}


def org_page(slug: str) -> str:
    """The path of an org's page."""
    return f"/o/{slug}/work-coordinator"


class ApiSide(Protocol):
    """What the pages need from the gateway: its upstream channels and its OIDC login."""

    upstreams: Upstreams | None
    oidc: OidcLogin | None


_Handler = Callable[[Request], Awaitable[Response]]


class WebPages:
    """ASGI: serves the pages and their assets, passes everything else to ``api``."""

    def __init__(self, api: ASGIApp, side: ApiSide) -> None:
        self.api = api
        self.side = side
        self.assets = Assets.load()
        self._fixed: dict[str, _Handler] = {
            "/": self._root,
            SIGN_IN_PAGE: self._sign_in,
            ADMIN_PAGE: self._admin,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.api(scope, receive, send)
            return
        path = _path(scope)
        refused_as = _SIGN_IN_FAILURES.get(path)
        if refused_as is not None and _wants_html(scope):
            back = Request(scope).query_params.get(NEXT_PARAM, "")
            await self.api(scope, receive, _failures_to_sign_in(send, refused_as, back))
            return
        handler = self._handler(path)
        if handler is None:
            await self.api(scope, receive, send)
            return
        label_route(scope, _route_label(path))
        request = Request(scope, receive)
        if request.method not in ("GET", "HEAD"):
            response: Response = Response(
                "method not allowed", status_code=405, headers={"Allow": "GET, HEAD"}
            )
        else:
            response = await handler(request)
        for name, value in page_headers().items():
            response.headers.setdefault(name, value)
        await response(scope, receive, send)

    def _handler(self, path: str) -> _Handler | None:
        fixed = self._fixed.get(path)
        if fixed is not None:
            return fixed
        if path.startswith(ASSET_PREFIX):
            return self._asset
        if _ORG_PAGE.fullmatch(path):
            return self._org
        return None

    # --- pages ---------------------------------------------------------------------------

    async def _root(self, request: Request) -> Response:
        if not _has_credential(request):
            return _redirect(SIGN_IN_PAGE)
        principal = await self._principal(request)
        if principal is None:
            return _redirect(sign_in_location(SIGN_IN_PAGE, "/", error="signed-out"))
        if principal.platform_admin:
            return _redirect(ADMIN_PAGE)
        orgs = sorted({member.org_slug for member in principal.memberships})
        if len(orgs) == 1:
            return _redirect(org_page(orgs[0]))
        # Several orgs, or none yet: the chooser lists them (from /v1/me) or says so.
        return self.assets.page("app.html", "workcoord", "home.js")

    async def _sign_in(self, request: Request) -> Response:
        message = _SIGN_IN_ERRORS.get(request.query_params.get("error", ""), "")
        notice = f'<p class="notice" role="alert">{html.escape(message)}</p>' if message else ""
        back = return_path(request.query_params.get(NEXT_PARAM))
        carried = ""
        oidc_href = OIDC_LOGIN_PATH
        if back != "/":
            carried = f'<input type="hidden" name="{NEXT_PARAM}" value="{html.escape(back)}">'
            oidc_href = f"{OIDC_LOGIN_PATH}?{NEXT_PARAM}={quote(back, safe='')}"
        oidc = ""
        if self.side.oidc is not None:
            oidc = (
                f'<p class="or">or</p><a class="button primary wide" '
                f'href="{html.escape(oidc_href)}">'
                "Sign in with your organization's account</a>"
            )
        return self.assets.page(
            "sign-in.html",
            "Sign in · workcoord",
            "sign-in.js",
            fields={"notice": notice, "oidc": oidc, "next": carried},
        )

    async def _org(self, request: Request) -> Response:
        if not _has_credential(request):
            return _redirect_to_sign_in(request)
        return self.assets.page("app.html", "Work coordinators · workcoord", "org.js")

    async def _admin(self, request: Request) -> Response:
        if not _has_credential(request):
            return _redirect_to_sign_in(request)
        return self.assets.page("app.html", "Platform admin · workcoord", "admin.js")

    async def _asset(self, request: Request) -> Response:
        return self.assets.asset(_path(request.scope)[len(ASSET_PREFIX) :], request)

    async def _principal(self, request: Request) -> admin_pb2.Principal | None:
        """Who the request's credential is; None when the coordinator does not know it."""
        upstreams = self.side.upstreams
        if upstreams is None:
            return None
        who = upstreams.coordinator.unary_unary(
            _WHO_AM_I,
            request_serializer=admin_pb2.GetCurrentPrincipalRequest.SerializeToString,
            response_deserializer=admin_pb2.GetCurrentPrincipalResponse.FromString,
        )
        try:
            metadata = forwarded(request.scope).metadata()
        except Unauthenticated:
            return None  # a malformed Authorization header: not the session's either
        try:
            reply: admin_pb2.GetCurrentPrincipalResponse = await who(
                admin_pb2.GetCurrentPrincipalRequest(),
                metadata=metadata,
                timeout=_TIMEOUT_SECONDS,
            )
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            if code not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                _log.warning("who-am-i for / answered %s", code)
            return None
        return reply.principal


def _path(scope: Scope) -> str:
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        return raw.split(b"?", 1)[0].decode("latin-1")
    return str(scope["path"])


def _route_label(path: str) -> str:
    """The page's path template, for the request metrics (no org slug or file name in it)."""
    if path.startswith(ASSET_PREFIX):
        return ASSET_PREFIX + "{file}"
    if _ORG_PAGE.fullmatch(path):
        return org_page("{orgSlug}")
    return path


def _has_credential(request: Request) -> bool:
    return bool(request.cookies.get(SESSION_COOKIE)) or "authorization" in request.headers


def _wants_html(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"accept":
            return b"text/html" in value
    return False


def _redirect(location: str) -> Response:
    return RedirectResponse(location, status_code=303, headers={"Cache-Control": "no-store"})


def _redirect_to_sign_in(request: Request) -> Response:
    """To the sign-in page, which sends the person back to this page (path and query) after."""
    scope = request.scope
    here = _path(scope)
    query = scope.get("query_string", b"")
    if isinstance(query, bytes) and query:
        here = f"{here}?{query.decode('latin-1')}"
    return _redirect(sign_in_location(SIGN_IN_PAGE, here))


def _failures_to_sign_in(send: Send, refused_as: str, back: str) -> Send:
    """Wrap ``send`` so that a refused sign-in becomes a redirect to the sign-in page, which
    says why (``refused_as``, or that the service is unavailable), keeping where the person
    was going (``back``, checked again there)."""
    replaced = False

    async def wrapped(message: Message) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start" and message["status"] >= 400:
            replaced = True
            error = "unavailable" if message["status"] >= 500 else refused_as
            headers: list[tuple[bytes, bytes]] = [
                (b"location", sign_in_location(SIGN_IN_PAGE, back, error=error).encode()),
                (b"cache-control", b"no-store"),
                (b"referrer-policy", b"no-referrer"),
                (b"content-length", b"0"),
            ]
            await send({"type": "http.response.start", "status": 303, "headers": headers})
            return
        if replaced and message["type"] == "http.response.body":
            if not message.get("more_body", False):
                await send({"type": "http.response.body", "body": b""})
            return
        await send(message)

    return wrapped
