from __future__ import annotations

import pytest

from workcoord.kit.secrets import (
    SystemTokenSource,
    hash_secret,
    looks_like_credential,
    new_secret,
    redact_credentials,
    secrets_equal,
)


class FixedSource:
    def token_urlsafe(self, nbytes: int) -> str:
        return "A" * nbytes


def test_new_secret_is_prefixed_and_long() -> None:
    secret = new_secret("wck_")
    assert secret.startswith("wck_")
    assert len(secret) >= len("wck_") + 43  # 32 bytes of url-safe base64
    assert new_secret("wck_") != secret
    assert new_secret("wcl_", FixedSource()) == "wcl_" + "A" * 32
    assert len(SystemTokenSource().token_urlsafe(32)) == 43
    with pytest.raises(ValueError):
        new_secret("WCK-")


def test_hash_and_compare() -> None:
    secret = new_secret("wcadm_")
    digest = hash_secret(secret)
    assert len(digest) == 64 and digest == hash_secret(secret)
    assert secrets_equal(digest, hash_secret(secret))
    assert not secrets_equal(digest, hash_secret(secret + "x"))
    assert secrets_equal(b"a", b"a")


@pytest.mark.parametrize(
    "text",
    [
        "wck_" + "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZkdISUpL",
        "wcsvc_" + "x" * 43,
        "ghp_" + "a1B2" * 9,
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        "xoxb-123456789012-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
        "Bearer abc.def",
        "token=" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "x" + "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZkdISUpL",
    ],
)
def test_looks_like_credential(text: str) -> None:
    assert looks_like_credential(text)


@pytest.mark.parametrize(
    "text",
    [
        "fleet-bot",
        "ops@acme.test",
        "build-fleet-account-for-ci-runners-2026",
        "agent-7",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "/srv/lanes/parser",
        "sk-short",
    ],
)
def test_plain_labels_are_not_credentials(text: str) -> None:
    assert not looks_like_credential(text)


def test_redact_keeps_the_rest() -> None:
    secret = new_secret("wck_")
    text = f"key {secret} used with Authorization: Bearer abc123 by fleet-bot"
    redacted = redact_credentials(text)
    assert secret not in redacted and "abc123" not in redacted
    assert redacted.startswith("key [REDACTED] used") and redacted.endswith("by fleet-bot")


def test_redaction_keeps_32_digit_hex_ids() -> None:
    ident = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    assert redact_credentials(f"coordinator {ident}") == f"coordinator {ident}"
    digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert redact_credentials(f"sha {digest}") == "sha [REDACTED]"
