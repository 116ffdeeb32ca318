"""Tracker credentials sealed at rest, the fingerprint, the outbound address check and which
connection serves a ticket."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import pytest

from workcoord.coordinator.domain.outbound import (
    OutboundRefused,
    check_outbound,
    check_outbound_shape,
)
from workcoord.coordinator.domain.sealing import CredentialSealer, UnsealError
from workcoord.coordinator.domain.tickets import TrackerConnection, TrackerKind, ticket_project

SECRET = secrets.token_hex(32)
CREDENTIAL = "glpat-sealedCredential0123456789"


def test_a_sealed_credential_opens_only_on_its_own_connection_and_installation() -> None:
    sealer = CredentialSealer(SECRET)
    sealed = sealer.seal("trk_a", CREDENTIAL)
    assert CREDENTIAL not in sealed and sealed.startswith("v1:")
    assert sealer.seal("trk_a", CREDENTIAL) != sealed  # a fresh nonce each time
    assert sealer.open("trk_a", sealed) == CREDENTIAL
    with pytest.raises(UnsealError):
        sealer.open("trk_b", sealed)  # moved onto another connection's row
    with pytest.raises(UnsealError):
        CredentialSealer(secrets.token_hex(32)).open("trk_a", sealed)  # another installation
    with pytest.raises(UnsealError):
        sealer.open("trk_a", sealed[:-4] + "AAAA")  # tampered
    with pytest.raises(UnsealError):
        sealer.open("trk_a", "v0:whatever")


def test_the_fingerprint_tells_credentials_apart_and_reveals_nothing() -> None:
    sealer = CredentialSealer(SECRET)
    fingerprint = sealer.fingerprint(CREDENTIAL)
    assert fingerprint.startswith("fp:") and len(fingerprint) == 15
    assert sealer.fingerprint(CREDENTIAL) == fingerprint
    assert sealer.fingerprint(CREDENTIAL + "x") != fingerprint
    # Keyed: another installation's fingerprint of the same credential differs.
    assert CredentialSealer(secrets.token_hex(32)).fingerprint(CREDENTIAL) != fingerprint


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("https://api.github.com", ""),
        ("https://8.8.8.8/api", ""),
        ("http://api.github.com", "https"),
        ("ftp://api.github.com", "https"),
        ("https://127.0.0.1", "not a public address"),
        ("https://10.1.2.3", "not a public address"),
        ("https://192.168.0.1", "not a public address"),
        ("https://169.254.169.254/latest", "not a public address"),
        ("https://[::1]", "not a public address"),
        ("https://[::ffff:10.0.0.1]", "not a public address"),
        ("https://user:pw@api.github.com", "credentials"),
        ("https://", "host"),
        ("https://host:99999", "not a URL"),
    ],
)
def test_outbound_urls_are_https_to_public_addresses(url: str, refused: str) -> None:
    if not refused:
        check_outbound_shape(url, ())
        return
    with pytest.raises(OutboundRefused, match=refused):
        check_outbound_shape(url, ())


async def test_an_allowed_host_may_be_loopback_and_http() -> None:
    check_outbound_shape("http://127.0.0.1:8080", ["127.0.0.1"])
    await check_outbound("http://127.0.0.1:8080", ["127.0.0.1"])
    with pytest.raises(OutboundRefused, match="not a public address"):
        await check_outbound("https://localhost:8080", ["127.0.0.1"])  # resolved at the call


@pytest.mark.parametrize(
    ("tracker", "key", "project"),
    [
        (TrackerKind.GITHUB, "octo/app#12", "octo/app"),
        (TrackerKind.GITLAB, "group/sub/proj#7", "group/sub/proj"),
        (TrackerKind.JIRA, "OPS-123", "OPS"),
        (TrackerKind.JIRA, "OPS", None),
        (TrackerKind.GITHUB, "octo/app", None),
        (TrackerKind.GITHUB, "octo/app#x", None),
    ],
)
def test_the_project_of_a_ticket(tracker: TrackerKind, key: str, project: str | None) -> None:
    assert ticket_project(tracker, key) == project


def test_a_connection_serves_its_tracker_and_projects_only() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    connection = TrackerConnection(
        tracker_id="trk_a",
        coordinator_id="wc_a",
        tracker=TrackerKind.GITHUB,
        base_url="https://api.github.com",
        projects=("Octo/App",),
        credential_ciphertext="v1:x",
        credential_fingerprint="fp:000000000000",
        create_time=now,
        update_time=now,
    )
    assert connection.serves("github", "octo/app#1")  # GitHub names are case-insensitive
    assert not connection.serves("gitlab", "octo/app#1")
    assert not connection.serves("github", "octo/other#1")
    assert "fp:000000000000" in connection.label and "v1:x" not in connection.label
