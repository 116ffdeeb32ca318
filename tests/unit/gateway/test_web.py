"""The web pages' routes through the gateway app: where ``/`` sends whom, what an anonymous
request gets, the security headers, the packaged assets, and a refused ``/login`` in a browser.

The pages' behaviour in a browser is tested end to end in ``tests/e2e/test_web.py``.
"""

from __future__ import annotations

import re
from importlib import resources

import httpx
import pytest

from workcoord.gateway.app import build_app
from workcoord.gateway.upstream import Upstreams
from workcoord.gateway.web import CONTENT_SECURITY_POLICY
from workcoord.kit.settings import GatewaySettings

from .conftest import Recorder, Upstream, gateway_settings

HTML = {"Accept": "text/html,application/xhtml+xml"}
STATIC = resources.files("workcoord.gateway.web").joinpath("static")


def session(value: str) -> dict[str, str]:
    return {"Cookie": f"workcoord_session={value}"}


@pytest.mark.parametrize(
    ("who", "location"),
    [
        ("platform-admin", "/admin/work-coordinator"),
        ("member-of:acme", "/o/acme/work-coordinator"),
        ("ended", "/sign-in?error=signed-out"),
    ],
)
async def test_root_sends_a_signed_in_person_to_their_page(
    client: httpx.AsyncClient, recorder: Recorder, who: str, location: str
) -> None:
    answer = await client.get("/", headers=session(who))
    assert answer.status_code == 303
    assert answer.headers["location"] == location
    # The gateway asked the coordinator, forwarding the session as it forwards it for the API.
    assert recorder.last("GetCurrentPrincipal").metadata["x-workcoord-session"] == who


async def test_root_shows_the_chooser_to_members_of_several_orgs_or_none(
    client: httpx.AsyncClient,
) -> None:
    for who in ("member-of:acme,beta", "nobody"):
        answer = await client.get("/", headers=session(who))
        assert answer.status_code == 200
        assert '<script type="module" src="/ui/home.js">' in answer.text


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/", "/sign-in"),
        ("/o/acme/work-coordinator", "/sign-in?next=%2Fo%2Facme%2Fwork-coordinator"),
        ("/admin/work-coordinator", "/sign-in?next=%2Fadmin%2Fwork-coordinator"),
    ],
)
async def test_anonymous_requests_are_sent_to_sign_in(
    client: httpx.AsyncClient, recorder: Recorder, path: str, location: str
) -> None:
    before = len(recorder.calls)
    answer = await client.get(path)
    assert answer.status_code == 303
    assert answer.headers["location"] == location
    assert len(recorder.calls) == before  # nothing was asked upstream


async def test_pages_carry_a_strict_policy_and_are_never_cached(
    client: httpx.AsyncClient,
) -> None:
    for path, headers in (
        ("/sign-in", {}),
        ("/o/acme/work-coordinator", session("member-of:acme")),
        ("/admin/work-coordinator", session("platform-admin")),
    ):
        answer = await client.get(path, headers=headers)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"] == "text/html; charset=utf-8"
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["cache-control"] == "no-store"
    policy = dict(part.split(" ", 1) for part in CONTENT_SECURITY_POLICY.split("; "))
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"


@pytest.mark.parametrize(
    ("path", "who", "title", "script"),
    [
        ("/sign-in", "", "Sign in · workcoord", "sign-in.js"),
        ("/o/acme/work-coordinator", "member-of:acme", "Work coordinators · workcoord", "org.js"),
        ("/admin/work-coordinator", "platform-admin", "Platform admin · workcoord", "admin.js"),
    ],
)
async def test_every_page_is_one_whole_document_with_its_title_and_module(
    client: httpx.AsyncClient, path: str, who: str, title: str, script: str | None
) -> None:
    text = (await client.get(path, headers=session(who) if who else {})).text
    assert text.startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    assert f"<title>{title}</title>" in text
    assert text.count("<body>") == 1 and "<!--{" not in text
    modules = re.findall(r'<script type="module" src="/ui/([^"]+)"></script>', text)
    assert modules == ([script] if script else [])
    assert all(STATIC.joinpath(name).is_file() for name in modules)


async def test_assets_are_served_with_etags_and_only_known_files(
    client: httpx.AsyncClient,
) -> None:
    script = await client.get("/ui/coordinator.js")
    assert script.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    etag = script.headers["etag"]
    again = await client.get("/ui/coordinator.js", headers={"If-None-Match": etag})
    assert again.status_code == 304
    for missing in ("/ui/nothing.js", "/ui/org.html", "/ui/../app.py", "/ui/%2e%2e/app.py"):
        assert (await client.get(missing)).status_code == 404, missing


async def test_other_paths_stay_the_apis(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    # Not a slug: the API's own Status JSON, not a page.
    answer = await client.get("/o/Not_A_Slug/work-coordinator")
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/json"
    refused = await client.post("/sign-in")
    assert refused.status_code == 405


async def test_a_refused_login_code_lands_a_browser_on_the_sign_in_page(
    client: httpx.AsyncClient,
) -> None:
    browser = await client.get("/login", headers=HTML)
    assert browser.status_code == 303
    assert browser.headers["location"] == "/sign-in?error=expired"
    assert browser.content == b""
    program = await client.get("/login")
    assert program.status_code == 400
    assert program.json()["details"][0]["reason"] == "INVALID_ARGUMENT"
    shown = await client.get("/sign-in?error=expired")
    assert "did not work" in shown.text
    unknown = await client.get("/sign-in?error=<script>")
    assert "<script>" not in unknown.text.split("<body>", 1)[1]


async def test_sign_in_offers_oidc_only_when_configured(
    client: httpx.AsyncClient, upstream: Upstream, channels: Upstreams
) -> None:
    assert "/login/oidc" not in (await client.get("/sign-in")).text
    settings = GatewaySettings(
        **{
            **gateway_settings(upstream.address).model_dump(),
            "oidc_issuer": "https://id.example.test",
            "oidc_client_id": "workcoord",
            "oidc_client_secret": "s3cret-value",
            "oidc_redirect_url": "https://wc.example.test/login/oidc/callback",
        }
    )
    app = build_app(settings, channels)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://gateway"
    ) as with_oidc:
        page = await with_oidc.get("/sign-in")
        # A callback the gateway refuses (no flow cookie) lands a browser back on sign-in.
        refused = await with_oidc.get("/login/oidc/callback?code=c&state=s", headers=HTML)
        program = await with_oidc.get("/login/oidc/callback?code=c&state=s")
    assert 'href="/login/oidc"' in page.text
    assert refused.status_code == 303
    assert refused.headers["location"] == "/sign-in?error=refused"
    assert program.status_code == 401


def test_the_pages_have_no_inline_script_style_or_remote_resource() -> None:
    files = {entry.name: entry.read_text() for entry in STATIC.iterdir() if entry.is_file()}
    for name, text in files.items():
        assert not re.search(r"https?://", text.replace("http://www.w3.org/2000/svg", "")), name
        if name.endswith(".html"):
            assert not re.search(r"<script(?![^>]*\bsrc=)", text), name
            assert not re.search(r"\son[a-z]+=", text), name
            assert " style=" not in text and "<style" not in text, name
            for source in re.findall(r'(?:src|href)="/ui/([^"]+)"', text):
                assert source in files, f"{name} loads a missing /ui/{source}"
        if name.endswith(".js"):
            assert "innerHTML" not in text and "eval(" not in text, name
            assert 'setAttribute("style' not in text, name
            for imported in re.findall(r'from "\./([^"]+)"', text):
                assert imported in files, f"{name} imports a missing ./{imported}"
