"""Helpers of the browser tests: Chromium from Debian's package driven by Playwright, signing
in with one-time login codes, lanes brought to the states a human decides on (over REST), and
the checks every page must pass (no sideways scrolling, tap targets of 44 px, no script error,
no Content-Security-Policy violation)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ViewportSize,
    expect,
    sync_playwright,
)

from tests.support.rest import JSON, ok

from .harness import System
from .rest import Tenant

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
# Generous: the machine is shared and slow at times; nothing here waits for a fixed time.
UI_TIMEOUT_MS = 30_000
RECONNECT_TIMEOUT_MS = 60_000
expect.set_options(timeout=UI_TIMEOUT_MS)
ARTIFACTS = Path(os.environ.get("WORKCOORD_TEST_ARTIFACTS", "test-artifacts")) / "web"

# Every element a person taps or tabs to.
INTERACTIVE = "a[href], button, input, select, textarea, summary"


def launch(playwright: Playwright) -> Browser:
    """Debian's Chromium (Playwright's own browser download cannot work here)."""
    executable = shutil.which("chromium")
    assert executable is not None, "the browser tests need Chromium: apt-get install -y chromium"
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)


def browser_session() -> Iterator[Browser]:
    """A running browser for a module's tests."""
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    """A page and what went wrong on it: uncaught errors and CSP violations."""

    page: Page
    problems: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert not self.problems, self.problems


def open_page(browser: Browser, *, phone: bool = False) -> tuple[BrowserContext, Watched]:
    """A fresh context (no cookies) at the desktop or phone size, and its watched page."""
    context = browser.new_context(
        viewport=PHONE if phone else DESKTOP,
        is_mobile=phone,
        has_touch=phone,
        device_scale_factor=2 if phone else 1,
    )
    context.set_default_timeout(UI_TIMEOUT_MS)
    return context, watch(context.new_page())


def watch(page: Page) -> Watched:
    """``page``, with its uncaught errors and CSP violations recorded."""
    watched = Watched(page)
    page.on("pageerror", lambda error: watched.problems.append(f"page error: {error}"))

    def on_console(message: Any) -> None:
        text = message.text
        if "Content Security Policy" in text or "Refused to" in text:
            watched.problems.append(f"CSP: {text}")

    page.on("console", on_console)
    return watched


def admin_client(system: System) -> httpx.Client:
    return httpx.Client(
        base_url=system.gateway_url,
        headers={"Authorization": f"Bearer {system.admin_token}"},
        timeout=30.0,
    )


def login_url(system: System, user_id: str = "") -> str:
    """A one-time login URL (the bootstrap admin's, or ``user_id``'s)."""
    with admin_client(system) as admin:
        body = {"userId": user_id} if user_id else {}
        code = ok(admin.post("/v1/sessions/login-codes", json=body))["code"]
    return f"{system.gateway_url}/login?code={code}"


def sign_in(page: Page, system: System, user_id: str = "") -> None:
    """Open a one-time login URL, as a person following the link would."""
    page.goto(login_url(system, user_id))


def make_viewer(system: System, org_slug: str) -> str:
    """A new user who may only read ``org_slug``; their id."""
    with admin_client(system) as admin:
        suffix = os.urandom(3).hex()
        user = ok(
            admin.post(
                "/v1/users",
                json={"email": f"viewer-{suffix}@example.test", "displayName": f"Viewer {suffix}"},
            )
        )
        ok(
            admin.post(
                f"/v1/orgs/{org_slug}/members",
                json={"userId": user["userId"], "role": "ORG_VIEWER"},
            )
        )
    user_id: str = user["userId"]
    return user_id


def global_parent_of(system: System, tenant: Tenant) -> JSON:
    """The installation's GLOBAL work coordinator (made if missing), named by the tenant's
    coordinator as its parent with a live SUMMARY grant; the grant."""
    with admin_client(system) as admin:
        listed = ok(admin.get("/v1/work-coordinators", params={"pageSize": 500}))
        found = [c for c in listed.get("workCoordinators", []) if c["scope"] == "GLOBAL"]
        if not found:
            made = admin.post(
                "/v1/work-coordinators", json={"scope": "GLOBAL", "displayName": "Platform"}
            )
            assert made.status_code in (200, 409), made.text  # 409: another test made it first
            listed = ok(admin.get("/v1/work-coordinators", params={"pageSize": 500}))
            found = [c for c in listed["workCoordinators"] if c["scope"] == "GLOBAL"]
        parent = found[0]["coordinatorId"]
        ok(admin.patch(tenant.base, json={"parentCoordinatorId": parent}))
        expire = (datetime.now(UTC) + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
        grant: JSON = ok(
            admin.post(
                f"{tenant.base}/grants",
                json={
                    "parentCoordinatorId": parent,
                    "permissions": ["SUMMARY"],
                    "expireTime": expire,
                },
            )
        )
    return grant


def org_page(system: System, tenant: Tenant) -> str:
    return f"{system.gateway_url}/o/{tenant.org_slug}/work-coordinator"


# --------------------------------------------------------------------------- page checks


def same_document(page: Page, origin: float) -> None:
    """The page was not reloaded since ``origin`` (its ``performance.timeOrigin``)."""
    assert page.evaluate("performance.timeOrigin") == origin, "the page was reloaded"


def no_sideways_scroll(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    viewport = page.evaluate("window.innerWidth")
    assert width <= viewport, f"the page is {width}px wide in a {viewport}px viewport"


def tap_targets_are_big_enough(page: Page, minimum: int = 44) -> None:
    """Every visible control is at least ``minimum`` CSS pixels tall and wide."""
    small = page.evaluate(
        """([selector, minimum]) => {
            const found = [];
            for (const element of document.querySelectorAll(selector)) {
                const box = element.getBoundingClientRect();
                const style = getComputedStyle(element);
                if (!box.width || !box.height || style.visibility === "hidden") continue;
                if (element.closest("dialog:not([open])")) continue;
                if (box.width < minimum || box.height < minimum) {
                    const name = element.getAttribute("aria-label") || element.textContent;
                    found.push(`${element.tagName} "${name.trim().slice(0, 40)}" `
                        + `${Math.round(box.width)}x${Math.round(box.height)}`);
                }
            }
            return found;
        }""",
        [INTERACTIVE, minimum],
    )
    assert not small, f"tap targets under {minimum}px: {small}"


def controls_are_labelled(page: Page) -> None:
    """Every visible control has an accessible name (text, aria-label or a <label>)."""
    unnamed = page.evaluate(
        """(selector) => {
            const found = [];
            for (const element of document.querySelectorAll(selector)) {
                if (!element.getClientRects().length) continue;
                const labelled = element.getAttribute("aria-label")
                    || (element.labels && element.labels.length)
                    || element.textContent.trim()
                    || element.querySelector("img[alt]:not([alt=''])");
                if (!labelled) found.push(element.outerHTML.slice(0, 80));
            }
            return found;
        }""",
        INTERACTIVE,
    )
    assert not unnamed, f"controls without a name: {unnamed}"


def text_has_contrast(page: Page, minimum: float = 4.5) -> None:
    """Every visible piece of text is at least ``minimum``:1 against its background (WCAG AA
    for normal text), its colours as computed by the browser."""
    poor = page.evaluate(
        """(minimum) => {
            const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
            const luminance = ([r, g, b]) => {
                const channel = (v) => {
                    v /= 255;
                    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
                };
                return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
            };
            const background = (element) => {
                for (let node = element; node; node = node.parentElement) {
                    const color = rgb(getComputedStyle(node).backgroundColor);
                    if (color.length === 3 || color[3] === 1) return color.slice(0, 3);
                    if (color[3] > 0.5) return color.slice(0, 3);
                }
                return [255, 255, 255];
            };
            const found = [];
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let text = walker.nextNode(); text; text = walker.nextNode()) {
                const element = text.parentElement;
                if (!text.textContent.trim() || !element.getClientRects().length) continue;
                const skipped = "[disabled], dialog:not([open]), .visually-hidden, .skip-link";
                if (element.closest(skipped)) continue;
                const style = getComputedStyle(element);
                const size = parseFloat(style.fontSize);
                if (style.visibility === "hidden" || size < 1) continue;
                const fore = luminance(rgb(style.color).slice(0, 3));
                const back = luminance(background(element));
                const ratio = (Math.max(fore, back) + 0.05) / (Math.min(fore, back) + 0.05);
                if (ratio < minimum) {
                    found.push(`${text.textContent.trim().slice(0, 30)}: ${ratio.toFixed(2)}`);
                }
            }
            return [...new Set(found)];
        }""",
        minimum,
    )
    assert not poor, f"text under {minimum}:1 contrast: {poor}"


def screenshot(page: Page, name: str, *, full_page: bool = False) -> Path:
    """Keep a screenshot as a test artifact (``test-artifacts/web/``)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^a-z0-9-]+', '-', name.lower())}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def csrf_fetch(page: Page, method: str, path: str, body: JSON | None = None) -> JSON:
    """``fetch`` from inside the page with its session and CSRF token; status and JSON body."""
    answer: JSON = page.evaluate(
        """async ([method, path, body]) => {
            const token = (document.cookie.match(/(?:^|; )workcoord_csrf=([^;]*)/) || [])[1] || "";
            const response = await fetch(path, {
                method,
                headers: {"Content-Type": "application/json", "X-CSRF-Token": token},
                body: body === null ? undefined : JSON.stringify(body),
            });
            return {status: response.status, body: await response.json()};
        }""",
        [method, path, body],
    )
    return answer
