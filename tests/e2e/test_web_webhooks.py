"""The webhooks card in a real browser (Debian's Chromium, driven by Playwright) against the
three services running as processes, with local receivers: an org admin adds a webhook and sees
its signing secret once, a ship approval posts a signed delivery that the card shows SUCCEEDED;
a receiver answering 500 gets retries with the same ``webhook-id``, the card shows them FAILED,
and Redeliver sends the delivery again at once; disabling and deleting are confirmed; a refused
URL shows the API's message; an org viewer gets no card and the API refuses them.

Screenshots are kept under ``test-artifacts/web/``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.support.rest import JSON, ok
from tests.support.webhook_receiver import Receipt, ThreadedReceiver
from workcoord.coordinator.webhooks import signing

from .harness import System
from .rest import Tenant, item_of, lane_awaiting_ship, unique_slug
from .web import (
    admin_client,
    browser_session,
    controls_are_labelled,
    csrf_fetch,
    make_viewer,
    no_sideways_scroll,
    open_page,
    org_page,
    screenshot,
    sign_in,
    tap_targets_are_big_enough,
    text_has_contrast,
)

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.xdist_group(name="e2e-web")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from browser_session()


def make_org_admin(system: System, tenant: Tenant) -> str:
    """A new user who is an admin of the tenant's org (not a platform admin); their id."""
    with admin_client(system) as admin:
        suffix = unique_slug("hooks")
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
    user_id: str = user["userId"]
    return user_id


def services_now(system: System) -> int:
    """Now on the services' clock (deliveries are signed with it)."""
    return int(time.time() + system.clock_offset)


def verified(system: System, secret: str, receipt: Receipt) -> str:
    return signing.verify(secret, receipt.headers, receipt.body, services_now(system))


def confirm(page: Page, expected: str) -> Locator:
    """The confirmation dialog (open, saying ``expected``): confirm it."""
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(expected)
    dialog.locator('button[type="submit"]').click()
    return dialog


def add_webhook(page: Page, card: Locator, url: str, *, slack: bool = False) -> str:
    """Add a webhook for HUMAN_NEEDED through the card; the secret it shows (then dismissed)."""
    card.get_by_role("button", name="Add a webhook").click()
    card.get_by_label("Receiver URL").fill(url)
    if slack:
        card.get_by_label("Format").select_option("SLACK")
    card.get_by_role("button", name="Add…").click()
    expect(confirm(page, url)).to_be_hidden()
    shown = card.locator("[data-secret]")
    expect(shown).to_contain_text("whsec_")
    secret = shown.inner_text().strip()
    card.get_by_role("button", name="I have saved it").click()
    expect(card.locator("[data-secret]")).to_have_count(0)
    return secret


def webhooks_of(tenant: Tenant) -> list[JSON]:
    listed: list[JSON] = ok(tenant.admin.get(f"{tenant.base}/webhooks")).get("webhooks", [])
    return listed


def test_an_org_admin_manages_webhooks_and_sees_their_deliveries(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    admin_id = make_org_admin(system, tenant)
    failing = {"on": True}
    with (
        ThreadedReceiver() as receiver,
        ThreadedReceiver(lambda _n: 500 if failing["on"] else 200) as broken,
    ):
        context, watched = open_page(browser)
        page = watched.page
        try:
            sign_in(page, system, admin_id)
            page.goto(org_page(system, tenant))
            card = page.locator(f"#webhooks-{tenant.coordinator_id}")
            expect(card).to_contain_text("No webhook")

            # A refused URL: the dialog shows the API's message, naming the field.
            card.get_by_role("button", name="Add a webhook").click()
            card.get_by_label("Receiver URL").fill("http://10.1.2.3/hook")
            card.get_by_role("button", name="Add…").click()
            dialog = confirm(page, "10.1.2.3")
            expect(dialog.get_by_role("alert")).to_contain_text("url")
            dialog.get_by_role("button", name="Go back").click()
            expect(dialog).to_be_hidden()
            card.get_by_role("button", name="Cancel").click()
            assert webhooks_of(tenant) == []

            secret = add_webhook(page, card, receiver.url)
            slack_secret = add_webhook(page, card, broken.url, slack=True)
            assert secret.startswith("whsec_") and slack_secret.startswith("whsec_")
            hooks = {hook["url"]: hook for hook in webhooks_of(tenant)}
            assert set(hooks) == {receiver.url, broken.url}
            assert hooks[receiver.url]["format"] == "STANDARD"
            assert hooks[broken.url]["format"] == "SLACK"
            assert hooks[receiver.url]["eventTypes"] == ["HUMAN_NEEDED"]
            # Shown once: no list (API or page) carries it again.
            assert all("secret" not in hook for hook in hooks.values())
            page.reload()
            expect(
                card.locator(f'[data-webhook="{hooks[broken.url]["webhookId"]}"]')
            ).to_be_visible()
            assert secret not in page.content() and slack_secret not in page.content()

            # A ship approval posts a signed delivery; the card shows it SUCCEEDED.
            lane = lane_awaiting_ship(tenant, "Ship the webhook card")
            ship = item_of(lane, "SHIP")
            [receipt] = receiver.wait_for(1)
            webhook_id = verified(system, secret, receipt)
            assert webhook_id.startswith(f"evt_{tenant.coordinator_id}_")
            assert ship["laneId"].encode() in receipt.body
            good = card.locator(f'[data-webhook="{hooks[receiver.url]["webhookId"]}"]')
            good.get_by_role("button", name="Deliveries").click()
            delivered = good.locator("[data-delivery]")
            expect(delivered).to_have_attribute("data-state", "SUCCEEDED")
            expect(delivered).to_contain_text("APPROVAL_REQUESTED")
            expect(delivered).to_contain_text("HTTP 200")
            expect(good).to_contain_text("Last delivery: SUCCEEDED")

            # The 500-answering receiver is retried with the same webhook-id; the card shows the
            # delivery FAILED with the answer and the next try.
            tries = broken.wait_for(5, timeout=120)
            assert {verified(system, slack_secret, r) for r in tries} == {webhook_id}
            bad = card.locator(f'[data-webhook="{hooks[broken.url]["webhookId"]}"]')
            bad.get_by_role("button", name="Deliveries").click()
            failed = bad.locator("[data-delivery]")
            expect(failed).to_have_attribute("data-state", "FAILED")
            expect(failed).to_contain_text("HTTP 500")
            expect(failed).to_contain_text("next try")
            expect(bad).to_contain_text("failing")
            screenshot(page, "webhooks-desktop", full_page=True)

            # Redeliver: sent again at once (before the retry it was due for), same webhook-id.
            [delivery] = ok(
                tenant.admin.get(
                    f"{tenant.base}/webhooks/{hooks[broken.url]['webhookId']}/deliveries"
                )
            )["deliveries"]
            due = datetime.fromisoformat(delivery["nextAttemptTime"]).timestamp()
            failing["on"] = False
            before = len(broken.receipts)
            failed.get_by_role("button", name="Redeliver…").click()
            expect(confirm(page, "same webhook-id")).to_be_hidden()
            again = broken.wait_for(before + 1)[before]
            arrived = time.time() - (time.monotonic() - again.monotonic) + system.clock_offset
            assert arrived < due, "the delivery went out at its retry, not on Redeliver"
            assert verified(system, slack_secret, again) == webhook_id
            expect(failed).to_have_attribute("data-state", "SUCCEEDED")
            assert b'"blocks"' in again.body  # a Slack message

            # Disable (confirmed), then delete (confirmed): through the API's state.
            bad.get_by_role("button", name="Disable…").click()
            expect(confirm(page, "Disable this webhook?")).to_be_hidden()
            expect(bad).to_contain_text("disabled")
            by_url = {hook["url"]: hook for hook in webhooks_of(tenant)}
            assert by_url[broken.url]["enabled"] is False
            assert by_url[receiver.url]["enabled"] is True
            bad.get_by_role("button", name="Delete…").click()
            expect(confirm(page, "cannot be undone")).to_be_hidden()
            expect(bad).to_have_count(0)
            assert [hook["url"] for hook in webhooks_of(tenant)] == [receiver.url]
            no_sideways_scroll(page)
            tap_targets_are_big_enough(page)
            controls_are_labelled(page)
            text_has_contrast(page)
            watched.assert_clean()
        finally:
            context.close()

        # At 390 px: the card, its form and its deliveries fit, tap targets included.
        context, watched = open_page(browser, phone=True)
        page = watched.page
        try:
            sign_in(page, system, admin_id)
            page.goto(org_page(system, tenant))
            card = page.locator(f"#webhooks-{tenant.coordinator_id}")
            expect(card).to_contain_text(receiver.url)
            card.get_by_role("button", name="Deliveries").click()
            expect(card.locator("[data-delivery]")).to_have_attribute("data-state", "SUCCEEDED")
            card.get_by_role("button", name="Add a webhook").click()
            expect(card.get_by_label("Receiver URL")).to_be_focused()
            card.scroll_into_view_if_needed()
            no_sideways_scroll(page)
            tap_targets_are_big_enough(page)
            controls_are_labelled(page)
            screenshot(page, "webhooks-phone", full_page=True)
            watched.assert_clean()
        finally:
            context.close()


def test_an_org_viewer_gets_no_webhooks_card_and_cannot_create_one(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    viewer = make_viewer(system, tenant.org_slug)
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system, viewer)
        expect(page.locator(f"#lane-list-{tenant.coordinator_id}")).to_be_attached()
        expect(page.locator(f"#capacity-{tenant.coordinator_id}")).to_be_visible()
        expect(page.locator(f"#webhooks-{tenant.coordinator_id}")).to_have_count(0)
        expect(page.get_by_role("button", name="Add a webhook")).to_have_count(0)
        refused = csrf_fetch(
            page,
            "POST",
            f"{tenant.base}/webhooks",
            {"url": "https://hooks.example.com/x", "eventTypes": ["HUMAN_NEEDED"]},
        )
        assert refused["status"] == 403, refused
        listed = csrf_fetch(page, "GET", f"{tenant.base}/webhooks")
        assert listed["status"] == 403, listed
        watched.assert_clean()
    finally:
        context.close()
    assert webhooks_of(tenant) == []


def test_a_platform_admin_gets_the_webhooks_card_on_the_admin_page(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    made = ok(
        tenant.admin.post(
            f"{tenant.base}/webhooks",
            json={"url": "https://hooks.example.com/ops", "eventTypes": ["LANE_OUTCOMES"]},
        )
    )["webhook"]
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        expect(page).to_have_url(f"{system.gateway_url}/admin/work-coordinator")
        tile = page.locator(f'[data-coordinator="{tenant.coordinator_id}"]')
        tile.get_by_role("button", name="Open here").click()
        card = page.locator(f"#webhooks-{tenant.coordinator_id}")
        row = card.locator(f'[data-webhook="{made["webhookId"]}"]')
        expect(row).to_contain_text("https://hooks.example.com/ops")
        expect(row).to_contain_text("LANE_OUTCOMES")
        expect(row).to_contain_text("Nothing delivered yet.")
        # Keyboard: the form opens on Enter with the focus in its first field, and closes.
        card.get_by_role("button", name="Add a webhook").focus()
        page.keyboard.press("Enter")
        expect(card.get_by_label("Receiver URL")).to_be_focused()
        card.get_by_role("button", name="Cancel").click()
        expect(card.get_by_role("button", name="Add a webhook")).to_be_focused()
        # Delete, confirmed from the admin page too.
        row.get_by_role("button", name="Delete…").click()
        expect(confirm(page, "cannot be undone")).to_be_hidden()
        expect(row).to_have_count(0)
        expect(card).to_contain_text("No webhook")
        watched.assert_clean()
    finally:
        context.close()
    assert webhooks_of(tenant) == []
