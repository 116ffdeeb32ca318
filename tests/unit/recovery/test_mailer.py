"""The mail's settings and messages: the SMTP URL read (STARTTLS or implicit TLS, no
credentials in it), and what a digest and a HUMAN_NEEDED batch say, with the link through
sign-in to the page."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import parse_qsl

import pytest

from workcoord.api.v1 import event_pb2, maintenance_pb2, work_coordinator_pb2
from workcoord.gateway.return_path import return_path
from workcoord.gateway.web.pages import ADMIN_PAGE, org_page
from workcoord.kit.settings import RecoverySettings, SettingsError, load
from workcoord.recovery.mailer import (
    SmtpConfig,
    digest_message,
    human_needed_message,
    page_link,
)

LINK = "https://wc.example.test/sign-in?next=%2Fo%2Facme%2Fwork-coordinator%23c%3Dwc_1"


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Callable[..., RecoverySettings]:
    def read(**env: str) -> RecoverySettings:
        for name in ("URL", "USERNAME", "PASSWORD_FILE"):
            monkeypatch.delenv(f"WORKCOORD_SMTP_{name}", raising=False)
        for key, value in env.items():
            monkeypatch.setenv(f"WORKCOORD_{key.upper()}", value)
        return load(RecoverySettings)

    return read


def test_the_smtp_url_picks_starttls_or_implicit_tls(
    settings: Callable[..., RecoverySettings],
) -> None:
    plain = SmtpConfig.from_settings(settings(smtp_url="smtp://mail.example.test"))
    assert plain is not None
    assert (plain.host, plain.port, plain.implicit_tls, plain.loopback) == (
        "mail.example.test",
        587,
        False,
        False,
    )
    tls = SmtpConfig.from_settings(settings(smtp_url="smtps://127.0.0.1:2465"))
    assert tls is not None and (tls.port, tls.implicit_tls, tls.loopback) == (2465, True, True)
    assert SmtpConfig.from_settings(settings()) is None


@pytest.mark.parametrize(
    "url", ["http://mail.example.test", "smtp://user:pw@mail.example.test", "smtp:///x"]
)
def test_a_bad_smtp_url_is_refused_by_name(
    settings: Callable[..., RecoverySettings], url: str
) -> None:
    with pytest.raises(SettingsError, match="SMTP_URL"):
        settings(smtp_url=url)


def test_a_login_needs_its_password_file(settings: Callable[..., RecoverySettings]) -> None:
    with pytest.raises(SettingsError, match="SMTP_PASSWORD_FILE"):
        settings(
            smtp_url="smtp://mail.example.test",
            smtp_username="ops",
            smtp_password_file="/nonexistent/password",
        )
    # Without mail configured, an (optional, empty) mounted Secret is no error.
    settings(smtp_password_file="/nonexistent/password")


def _due() -> maintenance_pb2.GetMailDueResponse:
    due = maintenance_pb2.GetMailDueResponse(
        owner="ops@acme.test", org_slug="acme", display_name="Acme work"
    )
    due.lane_titles["ln_1"] = "Ship the parser"
    return due


def test_the_digest_lists_its_entries_and_links_the_page() -> None:
    due = _due()
    due.digest.day = "2026-11-30"
    entry = due.digest.entries.add(
        kind=work_coordinator_pb2.DigestEntry.DEAD_LETTERED,
        lane_id="ln_1",
        item_id="it_1",
        reason="exhausted",
    )
    entry.time.FromDatetime(datetime(2026, 11, 30, 9, 5, tzinfo=UTC))
    message = digest_message(due, "wc_1", "workcoord@example.test", LINK)
    assert message["To"] == "ops@acme.test"
    assert message["Subject"] == "[workcoord] Acme work: digest 2026-11-30 (1 entries)"
    body = message.get_content()
    assert "09:05 DEAD_LETTERED lane Ship the parser item it_1 - exhausted" in body
    assert f"Open: {LINK}" in body


def test_a_human_needed_batch_names_each_event_and_its_lane() -> None:
    due = _due()
    for revision, kind in ((7, event_pb2.Event.APPROVAL_REQUESTED), (9, event_pb2.Event.ESCALATED)):
        event = due.human_needed.add(type=kind, revision=revision, lane_id="ln_1", item_id="it_1")
        event.time.FromDatetime(datetime(2026, 12, 1, 10, 0, tzinfo=UTC))
    message = human_needed_message(due, "wc_1", "workcoord@example.test", LINK)
    assert message["Subject"] == "[workcoord] Acme work: APPROVAL_REQUESTED and 1 more"
    body = message.get_content()
    assert (
        '2026-12-01 10:00 UTC APPROVAL_REQUESTED "Ship the parser" item it_1 (revision 7)' in body
    )
    assert "ESCALATED" in body and f"Decide: {LINK}" in body


def test_the_links_open_the_page_through_sign_in() -> None:
    """Every link in a message goes through ``/sign-in?next=`` to a page the gateway serves
    (its org's page open on the work coordinator, the admin page for one with no org), and
    the gateway takes that ``next`` back."""
    assert page_link("https://wc.example.test/", "acme", "wc_1") == LINK
    assert page_link(None, "acme", "wc_1") == LINK.removeprefix("https://wc.example.test")
    for slug, page in (("acme", f"{org_page('acme')}#c=wc_1"), ("", ADMIN_PAGE)):
        link = page_link(None, slug, "wc_1")
        path, _, query = link.partition("?")
        assert path == "/sign-in"
        [(name, value)] = parse_qsl(query)
        assert name == "next" and value == page
        assert return_path(value) == page
