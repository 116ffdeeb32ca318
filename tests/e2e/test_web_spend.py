"""What agents spend, on the page (Debian's Chromium, driven by Playwright, against the three
services running as processes): a lane whose agent reported a cost shows it on its card, the
side column shows the coordinator's spend today and a chart of the last 14 UTC days whose
today's bar carries it (with a table as the screen reader's text), on the org page and on the
admin page's coordinator view, at 1280 px and at 390 px. A cost reported while the page is
open shows without a reload.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.rest import JSON, ok

from .harness import System
from .rest import Tenant, work
from .web import (
    browser_session,
    controls_are_labelled,
    no_sideways_scroll,
    open_page,
    org_page,
    same_document,
    screenshot,
    sign_in,
    text_has_contrast,
)

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.xdist_group(name="e2e-web")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from browser_session()


def _spent_lane(tenant: Tenant, title: str, cost_micros: int) -> JSON:
    """A CUSTOM lane whose one machine task an agent finished, reporting ``cost_micros``."""
    lane = tenant.create_lane(
        {
            "title": title,
            "template": "CUSTOM",
            "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}],
        }
    )
    [lease] = work(tenant, "machine")
    usage = {"inputTokens": "1000", "outputTokens": "200", "costMicros": str(cost_micros)}
    ok(tenant.lease_call(lease, "heartbeat", usage={**usage, "model": "opus"}))
    ok(tenant.lease_call(lease, "complete", evidence={"summary": "done"}, usage=usage))
    return lane


def _server_day(tenant: Tenant) -> str:
    """The coordinator's UTC day (its clock is the test clock, not this machine's)."""
    view = ok(tenant.admin.get(f"{tenant.base}/view"))
    day: str = view["dayUsage"]["key"]
    return day


def _check_spend(
    page: Page, tenant: Tenant, lane: JSON, day: str, text: str, today: str = ""
) -> None:
    """``lane``'s card shows ``text``; the coordinator spent ``today`` (else ``text``) today,
    and today's bar and the table's row of ``day`` say it."""
    today = today or text
    card = page.locator(f"#lane-{lane['laneId']}")
    expect(card.locator(".cost")).to_have_text(f"spent {text}")
    spend = page.locator(f"#spend-{tenant.coordinator_id}")
    expect(spend.locator(".spend-today")).to_contain_text(f"{today} spent today ({day}, UTC)")
    bar = spend.locator(f'.spend-day.today[data-day="{day}"]')
    expect(bar).to_have_count(1)
    expect(spend.locator(".spend-day")).to_have_count(14)
    # The bar is drawn (a height above nothing) and the table says the same in words.
    assert bar.locator("span").evaluate("e => e.getBoundingClientRect().height") > 0
    row = spend.locator("table tbody tr").filter(has_text=day)
    expect(row).to_contain_text(today)


def test_a_lanes_cost_and_the_days_spend_show_and_stay_live(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    lane = _spent_lane(tenant, "Costly lane", 1_234_567)
    day = _server_day(tenant)
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))
        expect(page.locator(".live")).to_have_attribute("data-state", "live")
        origin = page.evaluate("performance.timeOrigin")
        _check_spend(page, tenant, lane, day, "$1.23")
        no_sideways_scroll(page)
        controls_are_labelled(page)
        text_has_contrast(page)
        screenshot(page, "spend-desktop")

        # Another lane's agent reports a cost: the feed's events bring it without a reload.
        other = _spent_lane(tenant, "Second lane", 2_000_000)
        expect(page.locator(f"#lane-{other['laneId']} .cost")).to_have_text("spent $2.00")
        spend = page.locator(f"#spend-{tenant.coordinator_id}")
        expect(spend.locator(".spend-today")).to_contain_text("$3.23 spent today")
        expect(spend.locator(f'.spend-day[data-day="{day}"]')).to_have_attribute(
            "data-cost-micros", "3234567"
        )
        same_document(page, origin)

        # The admin page's view of the same coordinator shows the same.
        page.goto(f"{system.gateway_url}/admin/work-coordinator#c={tenant.coordinator_id}")
        _check_spend(page, tenant, lane, day, "$1.23", "$3.23")
        expect(page.locator(f"#lane-{other['laneId']} .cost")).to_have_text("spent $2.00")
        watched.assert_clean()
    finally:
        context.close()


def test_on_a_phone_the_spend_fits_and_reads(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    lane = _spent_lane(tenant, "Phone lane", 420_000)
    day = _server_day(tenant)
    context, watched = open_page(browser, phone=True)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))
        _check_spend(page, tenant, lane, day, "$0.42")
        page.locator(f"#spend-{tenant.coordinator_id}").scroll_into_view_if_needed()
        no_sideways_scroll(page)
        text_has_contrast(page)
        screenshot(page, "spend-phone")
        watched.assert_clean()
    finally:
        context.close()


def test_a_lane_budget_and_the_day_budget_show_and_are_marked_once_spent(
    system: System, tenant: Tenant, browser: Browser
) -> None:
    """A lane's card shows what it spent of its budget and the Spend card the day budget;
    once the lane's budget is spent (while the page is open) the card marks it and its item
    waits behind the budget gate."""
    ok(
        tenant.admin.patch(
            tenant.base,
            params={"updateMask": "budget.dailyCostMicros"},
            json={"budget": {"dailyCostMicros": "5000000"}},
        )
    )
    lane = tenant.create_lane(
        {
            "title": "Budgeted lane",
            "template": "CUSTOM",
            "budget": {"costMicros": "1000000"},
            "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}],
        }
    )
    [lease] = work(tenant, "machine")
    ok(tenant.lease_call(lease, "heartbeat", usage={"costMicros": "400000", "model": "opus"}))
    context, watched = open_page(browser)
    page = watched.page
    try:
        sign_in(page, system)
        page.goto(org_page(system, tenant))
        expect(page.locator(".live")).to_have_attribute("data-state", "live")
        origin = page.evaluate("performance.timeOrigin")
        cost = page.locator(f"#lane-{lane['laneId']} .cost")
        expect(cost).to_have_text("spent $0.40 of $1.00 budget")
        expect(cost).to_have_attribute("data-budget-spent", "false")
        day = page.locator(f"#spend-{tenant.coordinator_id} .spend-budget")
        expect(day).to_have_text("Day budget: $0.40 of $5.00 used")
        expect(day).to_have_attribute("data-budget-spent", "false")

        # The agent reports past the lane's budget: told to stop, it releases the item.
        beat = ok(
            tenant.lease_call(lease, "heartbeat", usage={"costMicros": "1200000", "model": "opus"})
        )
        assert beat["stop"]["reason"] == "BUDGET_EXHAUSTED"
        ok(tenant.lease_call(lease, "release", reason="budget spent"))
        expect(cost).to_have_text("spent $1.20 of $1.00 budget · budget spent")
        expect(cost).to_have_attribute("data-budget-spent", "true")
        expect(cost).to_have_class("cost budget spent")
        card = page.locator(f"#lane-{lane['laneId']}")
        expect(card.locator(".gate.next")).to_have_text("wait: budget")
        expect(day).to_have_text("Day budget: $1.20 of $5.00 used")
        same_document(page, origin)
        text_has_contrast(page)
        screenshot(page, "spend-budget")
        watched.assert_clean()
    finally:
        context.close()
