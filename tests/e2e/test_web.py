"""The web pages in a real browser (Debian's Chromium, driven by Playwright) against the three
services running as processes: signing in with a one-time code, the lanes, the human decisions
made by clicking (checked through the API), live updates without a reload (also across a
restart of the gateway), what a viewer and an anonymous visitor get, and both screen sizes.

Screenshots are kept under ``test-artifacts/web/``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.support.processes import run_in_thread
from tests.support.rest import ok
from workcoord.api.v1 import lane_pb2
from workcoord.client import WorkcoordClient

from .harness import System
from .rest import (
    Tenant,
    busy_day,
    item_of,
    lane_awaiting_ship,
    ship_it,
    unique_slug,
    work,
)
from .web import (
    RECONNECT_TIMEOUT_MS,
    admin_client,
    browser_session,
    controls_are_labelled,
    csrf_fetch,
    global_parent_of,
    login_url,
    make_viewer,
    no_sideways_scroll,
    open_page,
    org_page,
    same_document,
    screenshot,
    sign_in,
    tap_targets_are_big_enough,
    text_has_contrast,
)

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.xdist_group(name="e2e-web")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from browser_session()


def decide(page: Page, verb: str, item_id: str, text: str = "") -> None:
    """Click a decision button, fill the dialog's text, confirm, wait for the dialog to close."""
    page.locator(f'[data-decision="{verb}"][data-item="{item_id}"]').first.click()
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()
    if text:
        dialog.locator("textarea").fill(text)
    dialog.locator('button[type="submit"]').click()
    expect(dialog).to_be_hidden()


def waiting_approval(page: Page, item_id: str) -> Locator:
    """The item's Approve button in "Waiting on you" (not the one in its lane)."""
    return page.locator(f'[id^="attention-"] [data-decision="approve"][data-item="{item_id}"]')


def test_anonymous_visitors_are_sent_to_sign_in(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    context, watched = open_page(browser)
    page = watched.page
    try:
        headers: dict[str, str] = {}
        for path in ("/", f"/o/{tenant.org_slug}/work-coordinator", "/admin/work-coordinator"):
            response = page.goto(f"{system.gateway_url}{path}")
            assert response is not None
            back = "" if path == "/" else f"?next={quote(path, safe='')}"
            assert page.url == f"{system.gateway_url}/sign-in{back}", path
            assert tenant.coordinator_id not in page.content()
            headers = response.headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        expect(page.get_by_label("One-time code")).to_be_visible()
        # The API itself refuses an anonymous browser.
        answer = csrf_fetch(page, "GET", f"{tenant.base}/view")
        assert answer["status"] == 401
        # A used or made-up code lands back here with a message, not on JSON.
        page.get_by_label("One-time code").fill("wcses_not-a-real-code")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("did not work")
        tap_targets_are_big_enough(page)
        watched.assert_clean()
    finally:
        context.close()


def test_admin_approves_a_ship_and_watches_the_lane_go_live(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    lane = busy_day(tenant)
    ship = item_of(lane, "SHIP")
    grant = global_parent_of(system, tenant)
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        # A platform admin lands on the admin page: every coordinator with its health, the
        # switch, recovery, and GLOBAL with the grants its children gave it.
        expect(page).to_have_url(f"{system.gateway_url}/admin/work-coordinator")
        card = page.locator(f'[data-coordinator="{tenant.coordinator_id}"]')
        expect(card).to_contain_text("3 wait on a human")
        expect(page.get_by_text("Coordination is on")).to_be_visible()
        expect(page.locator("#recovery")).to_contain_text("Leader:")
        grants = page.locator("#global")
        expect(grants).to_contain_text(tenant.coordinator["displayName"])
        expect(grants).to_contain_text("summary")
        assert grant["live"] is True
        screenshot(page, "admin-desktop", full_page=True)
        card.get_by_role("link", name="Org page").click()

        expect(page.locator(f"#lane-{lane['laneId']}")).to_be_visible()
        expect(page.locator(".live")).to_have_attribute("data-state", "live")
        origin = page.evaluate("performance.timeOrigin")
        expect(waiting_approval(page, ship["itemId"])).to_be_visible()
        no_sideways_scroll(page)
        tap_targets_are_big_enough(page)
        controls_are_labelled(page)
        text_has_contrast(page)
        screenshot(page, "org-desktop-awaiting-approval")
        screenshot(page, "org-desktop-full", full_page=True)

        # By keyboard: Enter opens the confirmation, Escape leaves it, nothing changed.
        waiting_approval(page, ship["itemId"]).focus()
        page.keyboard.press("Enter")
        dialog = page.locator("dialog.confirm")
        expect(dialog).to_be_visible()
        expect(dialog.locator('button[type="submit"]')).to_be_focused()
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        assert tenant.item(lane["laneId"], ship["itemId"])["state"] == "AWAITING_APPROVAL"

        decide(page, "approve", ship["itemId"], "ship it")
        assert tenant.item(lane["laneId"], ship["itemId"])["state"] == "QUEUED"
        expect(page.locator(f"#item-{ship['itemId']}")).to_have_attribute("data-state", "QUEUED")

        ship_it(tenant)
        lane_card = page.locator(f"#lane-{lane['laneId']}")
        expect(lane_card).to_have_attribute("data-state", "LIVE")
        same_document(page, origin)
        screenshot(page, "org-desktop-live")
        watched.assert_clean()
    finally:
        context.close()


def test_a_lane_created_over_rest_appears_without_a_reload(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))
        expect(page.get_by_text("No lanes yet")).to_be_visible()
        expect(page.locator(".live")).to_have_attribute("data-state", "live")
        origin = page.evaluate("performance.timeOrigin")
        title = f"Created over REST {unique_slug()}"
        created = tenant.create_lane({"title": title, "template": "STANDARD"})
        card = page.locator(f"#lane-{created['laneId']}")
        expect(card).to_contain_text(title)
        expect(card).to_contain_text("lease build (codex)")
        # An item moved by a worker shows up too.
        work(tenant, "codex")
        expect(card.locator(".item").first).to_have_attribute("data-state", "RUNNING")
        same_document(page, origin)
        watched.assert_clean()
    finally:
        context.close()


def test_a_lost_connection_reconnects_and_catches_up(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))
        expect(page.locator(".live")).to_have_attribute("data-state", "live")
        origin = page.evaluate("performance.timeOrigin")

        assert system.gateway.stop() == 0
        expect(page.locator(".live")).to_have_attribute("data-state", "reconnecting")
        # Written while the page cannot hear anything: straight to the coordinator over gRPC.
        title = f"Made while the gateway was down {unique_slug()}"
        lane_id = run_in_thread(lambda: asyncio.run(_create_lane_over_grpc(system, tenant, title)))
        system.gateway.start()
        system.wait_ready()

        card = page.locator(f"#lane-{lane_id}")
        expect(card).to_contain_text(title, timeout=RECONNECT_TIMEOUT_MS)
        expect(page.locator(".live")).to_have_attribute("data-state", "live")
        same_document(page, origin)
        watched.assert_clean()
    finally:
        context.close()


async def _create_lane_over_grpc(system: System, tenant: Tenant, title: str) -> str:
    async with WorkcoordClient(system.coordinator_address, tenant.key["secret"]) as client:
        answer = await client.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=tenant.coordinator_id,
                lane=lane_pb2.Lane(title=title, template=lane_pb2.Lane.STANDARD),
            )
        )
    return str(answer.lane.lane_id)


def test_a_viewer_sees_no_buttons_and_the_api_refuses_them(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    lane = lane_awaiting_ship(tenant, "Waiting for an admin")
    ship = item_of(lane, "SHIP")
    private = tenant.create_lane(
        {
            "title": "With private inputs",
            "template": "CUSTOM",
            "items": [
                {
                    "key": "secret-task",
                    "kind": "TASK",
                    "workerClass": "agent",
                    "inputs": {"prompt": "viewer-must-not-see"},
                }
            ],
        }
    )
    secret_task = private["items"][0]
    viewer = make_viewer(system, tenant.org_slug)
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system, viewer)
        # A member of one org goes straight to that org's page.
        expect(page).to_have_url(f"{org_page(system, tenant)}#c={tenant.coordinator_id}")
        expect(page.locator(f"#item-{ship['itemId']}")).to_have_attribute(
            "data-state", "AWAITING_APPROVAL"
        )
        expect(page.get_by_text("read only")).to_be_visible()
        expect(page.get_by_role("heading", name="Waiting on a human")).to_be_visible()
        assert page.locator("[data-decision]").count() == 0
        path = f"{tenant.base}/lanes/{lane['laneId']}/items/{ship['itemId']}/approve"
        refused = csrf_fetch(page, "POST", path, {})
        assert refused["status"] == 403, refused
        assert tenant.item(lane["laneId"], ship["itemId"])["state"] == "AWAITING_APPROVAL"
        # An item's details tell a viewer its inputs exist, never what they are.
        page.locator(f"#item-{secret_task['itemId']}").get_by_role("button", name="Why?").click()
        details = page.locator(f"#why-item-{secret_task['itemId']}")
        expect(details).to_contain_text("Item inputs: hidden — your role may not read them.")
        assert "viewer-must-not-see" not in page.content()
        # Nor does the admin page show a viewer anything.
        page.goto(f"{system.gateway_url}/admin/work-coordinator")
        expect(page.get_by_text("This page is for verified platform admins.")).to_be_visible()
        assert page.locator("[data-decision]").count() == 0
        watched.assert_clean()
    finally:
        context.close()
    # Those who decide read the inputs in the same details.
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))
        page.locator(f"#item-{secret_task['itemId']}").get_by_role("button", name="Why?").click()
        details = page.locator(f"#why-item-{secret_task['itemId']}")
        expect(details.locator("pre.inputs")).to_contain_text('"prompt": "viewer-must-not-see"')
        watched.assert_clean()
    finally:
        context.close()


def test_deny_retry_resume_resolve_and_the_apis_message(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    denied = lane_awaiting_ship(tenant, "Deny me")
    approved_elsewhere = lane_awaiting_ship(tenant, "Approved elsewhere first")
    custom = tenant.create_lane(
        {
            "title": "Custom work",
            "template": "CUSTOM",
            "items": [
                {
                    "key": "dump",
                    "kind": "TASK",
                    "workerClass": "machine",
                    "retryPolicy": {"maximumAttempts": 1},
                },
                {"key": "announce", "kind": "TASK", "workerClass": "agent", "needsHuman": True},
            ],
        }
    )
    dump, announce = custom["items"]
    for lease in work(tenant, "machine"):
        error = {"message": "connection refused", "type": "IOError", "retryable": False}
        ok(tenant.lease_call(lease, "fail", error=error))
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))

        # Deny needs a reason; the lane closes out.
        deny_ship = item_of(denied, "SHIP")
        page.locator(f'[data-decision="deny"][data-item="{deny_ship["itemId"]}"]').first.click()
        dialog = page.locator("dialog.confirm")
        dialog.locator('button[type="submit"]').click()
        expect(dialog.locator(".error")).to_contain_text("Reason is required")
        dialog.locator("textarea").fill("not this week")
        dialog.locator('button[type="submit"]').click()
        expect(dialog).to_be_hidden()
        assert tenant.item(denied["laneId"], deny_ship["itemId"])["state"] == "CANCELLED"
        assert tenant.lane(denied["laneId"])["state"] == "CLOSED_OUT"

        # Retry (redrive) a dead-lettered item; resume a stopped one.
        expect(page.locator(f"#item-{dump['itemId']}")).to_have_attribute("data-state", "DEAD")
        decide(page, "retry", dump["itemId"])
        assert tenant.item(custom["laneId"], dump["itemId"])["state"] == "QUEUED"
        decide(page, "resume", announce["itemId"])
        assert tenant.item(custom["laneId"], announce["itemId"])["state"] == "QUEUED"
        # Cancelling a queued item is in its "why" panel, next to what holds it.
        row = page.locator(f"#item-{announce['itemId']}")
        expect(row).to_have_attribute("data-state", "QUEUED")
        row.get_by_role("button", name="Why?").click()
        expect(row.locator(".why")).to_contain_text("Gates")
        decide(page, "cancel", announce["itemId"], "not needed after all")
        assert tenant.item(custom["laneId"], announce["itemId"])["state"] == "CANCELLED"
        # The page has drawn the cancel (a click during that redraw would land on a button
        # the redraw replaces, and open nothing).
        expect(row).to_have_attribute("data-state", "CANCELLED")

        # A refusal shows the API's own message, and the dialog stays open.
        ship = item_of(approved_elsewhere, "SHIP")
        page.locator(f'[data-decision="approve"][data-item="{ship["itemId"]}"]').first.click()
        expect(dialog).to_be_visible()
        path = f"{tenant.base}/lanes/{approved_elsewhere['laneId']}/items/{ship['itemId']}/approve"
        with admin_client(system) as admin:
            ok(admin.post(path, json={}))
            again = admin.post(path, json={})
        assert again.status_code == 400, again.text  # ILLEGAL_TRANSITION: not awaiting approval
        dialog.locator('button[type="submit"]').click()
        expect(dialog.locator(".error")).to_have_text(again.json()["message"])
        expect(dialog).to_be_visible()
        dialog.get_by_role("button", name="Go back").click()
        expect(dialog).to_be_hidden()

        # Ship the approved lane with a ticket nobody can close: a pending action to resolve.
        with_ticket = lane_awaiting_ship(
            tenant, "Ship with a ticket", tickets=[{"tracker": "github", "key": "acme/p#1"}]
        )
        decide(page, "approve", item_of(with_ticket, "SHIP")["itemId"])
        ship_it(tenant)
        resolve = page.locator('[data-decision="resolve"]').first
        expect(resolve).to_be_visible()
        action_id = resolve.get_attribute("data-action")
        resolve.click()
        page.locator("dialog.confirm textarea").fill("closed it by hand")
        page.locator('dialog.confirm button[type="submit"]').click()
        expect(dialog).to_be_hidden()
        actions = ok(tenant.admin.get(f"{tenant.base}/pending-actions"))["pendingActions"]
        resolved = next(action for action in actions if action["actionId"] == action_id)
        assert resolved["state"] == "RESOLVED"
        assert resolved["resolution"] == "closed it by hand"
        expect(page.locator(f'[data-decision="resolve"][data-action="{action_id}"]')).to_have_count(
            0
        )
        watched.assert_clean()
    finally:
        context.close()


def test_on_a_phone_sign_in_see_what_waits_approve_and_watch_it_go_live(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    lane = busy_day(tenant)
    ship = item_of(lane, "SHIP")
    context, watched = open_page(browser, phone=True)
    page = watched.page
    try:
        page.goto(login_url(system))
        page.goto(org_page(system, tenant))
        approve = waiting_approval(page, ship["itemId"])
        expect(approve).to_be_visible()
        expect(page.locator(".live")).to_have_attribute("data-state", "live")
        origin = page.evaluate("performance.timeOrigin")
        no_sideways_scroll(page)
        tap_targets_are_big_enough(page)
        controls_are_labelled(page)
        text_has_contrast(page)
        screenshot(page, "org-phone-awaiting-approval")
        screenshot(page, "org-phone-full", full_page=True)

        approve.tap()
        dialog = page.locator("dialog.confirm")
        expect(dialog).to_be_visible()
        no_sideways_scroll(page)
        tap_targets_are_big_enough(page)
        screenshot(page, "org-phone-confirm")
        dialog.locator('button[type="submit"]').tap()
        expect(dialog).to_be_hidden()
        assert tenant.item(lane["laneId"], ship["itemId"])["state"] == "QUEUED"

        ship_it(tenant)
        expect(page.locator(f"#lane-{lane['laneId']}")).to_have_attribute("data-state", "LIVE")
        same_document(page, origin)
        no_sideways_scroll(page)
        screenshot(page, "org-phone-live")

        # The why of an item: attempts with run identities, never a token.
        page.locator(f"#item-{ship['itemId']}").get_by_role("button", name="Why?").tap()
        why = page.locator(f"#why-item-{ship['itemId']}")
        expect(why).to_contain_text("agent-machine")
        assert "leaseToken" not in why.inner_text()
        no_sideways_scroll(page)
        tap_targets_are_big_enough(page)
        watched.assert_clean()
    finally:
        context.close()


def test_pages_and_assets_carry_the_security_headers(system: System) -> None:
    with httpx.Client(base_url=system.gateway_url, timeout=30.0) as client:
        for path in ("/sign-in", "/ui/org.js", "/ui/app.css"):
            answer = client.get(path)
            assert answer.status_code == 200, path
            policy = answer.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "script-src 'self'" in policy
            assert "'unsafe-inline'" not in policy
            assert answer.headers["x-content-type-options"] == "nosniff"
        assert client.get("/ui/org.js").headers["content-type"].startswith("text/javascript")
        assert client.get("/ui/nothing.js").status_code == 404


def test_the_digest_names_its_owner_when_the_address_is_a_users(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    owner = f"ops@{tenant.org_slug}.test"  # the tenant's digest owner (tests/e2e/rest.py)
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(f"{org_page(system, tenant)}#c={tenant.coordinator_id}")
        shown = page.locator(f"#digest-{tenant.coordinator_id} [data-key='digest-owner']")
        expect(shown).to_have_text(f"for {owner}")
        with admin_client(system) as admin:
            ok(admin.post("/v1/users", json={"email": owner, "displayName": "Ops Lead"}))
        page.reload()
        shown = page.locator(f"#digest-{tenant.coordinator_id} [data-key='digest-owner']")
        expect(shown).to_have_text(f"for Ops Lead <{owner}>")
        watched.assert_clean()
    finally:
        context.close()


def test_an_admin_sees_tracker_health_and_why_a_ticket_closure_is_stuck(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    credential = "glpat-e2eNeverShownOnThePage00"
    # A connection to a host that does not resolve: every closure through it fails.
    created = ok(
        tenant.admin.post(
            f"{tenant.base}/trackers",
            json={
                "tracker": "gitlab",
                "baseUrl": "https://gitlab.invalid",
                "credential": credential,
                "projects": ["acme/web"],
            },
        )
    )
    lane = lane_awaiting_ship(
        tenant, "Ship to GitLab", tickets=[{"tracker": "gitlab", "key": "acme/web#5"}]
    )
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))
        card = page.locator(f"#trackers-{tenant.coordinator_id}")
        expect(card).to_contain_text(created["credentialFingerprint"])
        expect(card).to_contain_text("Not used yet")
        decide(page, "approve", item_of(lane, "SHIP")["itemId"])
        ship_it(tenant)
        # The failed closure moves the feed; the card reads the connection's health again.
        expect(card).to_contain_text("failing")
        expect(card).to_contain_text("does not resolve")
        lane_card = page.locator(f"#lane-{lane['laneId']}")
        lane_card.get_by_role("button", name="Why this lane?").click()
        why = lane_card.locator(".why")
        expect(why).to_contain_text("Ticket closures not done")
        expect(why).to_contain_text("gitlab acme/web#5")
        expect(why).to_contain_text(f"through gitlab connection {created['trackerId']}")
        assert credential not in page.content()
        watched.assert_clean()
    finally:
        context.close()


def test_an_org_admin_raises_a_lanes_priority_and_the_next_lease_honours_it(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    with admin_client(system) as admin:
        suffix = unique_slug("adm")
        user = ok(
            admin.post(
                "/v1/users",
                json={"email": f"{suffix}@example.test", "displayName": f"Admin {suffix}"},
            )
        )
        ok(
            admin.post(
                f"/v1/orgs/{tenant.org_slug}/members",
                json={"userId": user["userId"], "role": "ORG_ADMIN"},
            )
        )
    machine = {"kind": "TASK", "workerClass": "machine"}
    old = tenant.create_lane(
        {"title": "Old work", "template": "CUSTOM", "items": [{**machine, "key": "old"}]}
    )
    urgent = tenant.create_lane(
        {"title": "Urgent fix", "template": "CUSTOM", "items": [{**machine, "key": "urgent"}]}
    )
    # One worker id serving two classes shows both on the page.
    ok(
        tenant.worker.post(
            f"{tenant.base}/workers",
            json={
                "workerId": "w-both",
                "workerClass": "machine",
                "workerClasses": ["machine", "agent"],
            },
        )
    )
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system, user["userId"])
        page.goto(org_page(system, tenant))
        both = page.locator(f"#workers-{tenant.coordinator_id} li", has_text="w-both")
        expect(both.locator(".badge")).to_have_text(["machine", "agent"])
        card = page.locator(f"#lane-{urgent['laneId']}")
        # The lane's decisions sit with its explanation.
        card.get_by_role("button", name="Why this lane?").click()
        card.locator(f'[data-decision="lane-priority"][data-lane="{urgent["laneId"]}"]').click()
        dialog = page.locator("dialog.confirm")
        expect(dialog).to_be_visible()
        expect(dialog).to_contain_text("Now 0")
        dialog.locator("textarea").fill("50")
        dialog.locator('button[type="submit"]').click()
        expect(dialog).to_be_hidden()
        expect(page.locator("body")).to_contain_text("Priority 50: Urgent fix")
        watched.assert_clean()
    finally:
        context.close()
    assert tenant.lane(urgent["laneId"])["priority"] == 50
    assert int(tenant.lane(old["laneId"]).get("priority", 0)) == 0
    updated = [e for e in tenant.events() if e["type"] == "LANE_UPDATED"]
    assert updated and updated[-1]["actor"].endswith(user["userId"]), updated
    # The lane created later goes first now.
    (leased,) = tenant.lease("machine", maxItems=1)
    assert leased["item"]["key"] == "urgent"
