"""Links that survive sign-in: ``/sign-in?next=`` keeps only a same-origin path, so the
gateway's redirects after signing in can never send a browser to another site."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest

from workcoord.gateway.return_path import MAX_RETURN_PATH, return_path, sign_in_location

from .conftest import VALID_LOGIN_CODE

HTML = {"Accept": "text/html,application/xhtml+xml"}
PAGE = "/o/acme/work-coordinator"


@pytest.mark.parametrize(
    "kept",
    [
        PAGE,
        "/o/acme/work-coordinator?tab=2",
        "/o/acme/work-coordinator#c=wc_1",
        "/admin/work-coordinator",
        "/o/acme/%2F%2Fevil.example",  # percent-encoded: still a path of this origin
        "/" + "a" * (MAX_RETURN_PATH - 1),
    ],
)
def test_a_same_origin_path_is_kept(kept: str) -> None:
    assert return_path(kept) == kept


@pytest.mark.parametrize(
    "refused",
    [
        None,
        "",
        "https://evil.example/o/acme",
        "http:/evil.example",
        "javascript:alert(1)",
        "//evil.example/o/acme",
        "///evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "/o/acme\\..\\x",
        "o/acme/work-coordinator",
        " /o/acme",
        "/o/acme\r\nSet-Cookie: x=1",
        "/o/acme\t/x",
        "/o/acme\x00",
        "/o/acme\x7f",
        "/o/acmé",
        "/o/acme work",
        "/" + "a" * MAX_RETURN_PATH,
        "/login?code=wcses_planted",
        "/login/oidc",
        "/sign-in?next=/o/acme",
    ],
)
def test_anything_else_falls_back_to_the_root(refused: str | None) -> None:
    assert return_path(refused) == "/"


def test_the_sign_in_location_carries_next_encoded_and_drops_a_bad_one() -> None:
    assert sign_in_location("/sign-in", "/") == "/sign-in"
    assert sign_in_location("/sign-in", "//evil.example", error="expired") == (
        "/sign-in?error=expired"
    )
    location = sign_in_location("/sign-in", f"{PAGE}?a=1&b=2", error="signed-out")
    query = parse_qs(urlsplit(location).query)
    assert query == {"error": ["signed-out"], "next": [f"{PAGE}?a=1&b=2"]}


@pytest.mark.parametrize("path", [PAGE, "/admin/work-coordinator"])
async def test_a_page_sends_an_anonymous_visitor_to_sign_in_with_its_path(
    client: httpx.AsyncClient, path: str
) -> None:
    answer = await client.get(f"{path}?x=1")
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/sign-in?next={quote(f'{path}?x=1', safe='')}"


async def test_the_sign_in_page_carries_a_safe_next_into_its_form_only(
    client: httpx.AsyncClient,
) -> None:
    shown = await client.get("/sign-in", params={"next": PAGE})
    assert f'<input type="hidden" name="next" value="{PAGE}">' in shown.text
    for bad in ("//evil.example", 'x" onfocus="alert(1)', '/o/a"><script>x</script>'):
        page = await client.get("/sign-in", params={"next": bad})
        body = page.text.split("<body>", 1)[1]
        assert 'name="next"' not in body, bad
        assert "<script>" not in body and "evil" not in body, bad


async def test_signing_in_with_a_code_returns_to_next(client: httpx.AsyncClient) -> None:
    back = await client.get("/login", params={"code": VALID_LOGIN_CODE, "next": PAGE})
    assert back.status_code == 303
    assert back.headers["location"] == PAGE
    assert "workcoord_session=wcses_secret" in back.headers["set-cookie"]
    for bad in ("https://evil.example/", "//evil.example", "/\\evil.example", "/%0d%0a"):
        answer = await client.get("/login", params={"code": VALID_LOGIN_CODE, "next": bad})
        assert answer.status_code == 303, bad
        # "/%0d%0a" is a path (percent-encoded, harmless); the others fall back to the root.
        assert answer.headers["location"] in ("/", "/%0d%0a"), bad
        assert "evil" not in answer.headers["location"], bad
    plain = await client.get("/login", params={"code": VALID_LOGIN_CODE})
    assert plain.headers["location"] == "/"


async def test_a_refused_code_lands_on_sign_in_keeping_next(client: httpx.AsyncClient) -> None:
    refused = await client.get("/login", params={"code": "wcses_used", "next": PAGE}, headers=HTML)
    assert refused.status_code == 303
    assert refused.headers["location"] == f"/sign-in?error=expired&next={quote(PAGE, safe='')}"
    planted = await client.get(
        "/login", params={"code": "wcses_used", "next": "//evil.example"}, headers=HTML
    )
    assert planted.headers["location"] == "/sign-in?error=expired"
