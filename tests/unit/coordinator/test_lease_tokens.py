"""Lease tokens derived from a nonce (never stored), and what a Lease request id is kept under."""

from __future__ import annotations

from workcoord.coordinator.domain.engine.lease_replay import (
    derive_lease_token,
    lease_request_key,
    lease_token_key,
)
from workcoord.kit.secrets import looks_like_credential, redact_credentials


def test_a_token_is_a_256_bit_lease_secret_that_the_same_key_makes_again() -> None:
    key = lease_token_key("wcsvc_shared")
    token = derive_lease_token(key, "ls_1", "nonce-1")
    assert token.startswith("wcl_") and len(token) == len("wcl_") + 43  # 32 bytes, base64url
    assert derive_lease_token(lease_token_key("wcsvc_shared"), "ls_1", "nonce-1") == token
    # Any other lease, nonce or key: another token.
    assert derive_lease_token(key, "ls_2", "nonce-1") != token
    assert derive_lease_token(key, "ls_1", "nonce-2") != token
    assert derive_lease_token(lease_token_key("wcsvc_other"), "ls_1", "nonce-1") != token
    # Still recognised (and redacted) as one of our credentials.
    assert looks_like_credential(token)
    assert "nonce" not in redact_credentials(f"token {token}") and token not in redact_credentials(
        f"token {token}"
    )


def test_without_a_service_key_each_process_draws_its_own_key() -> None:
    assert lease_token_key(None) != lease_token_key(None)
    assert lease_token_key("") != lease_token_key("")
    assert len(lease_token_key(None)) == 32


def test_a_request_id_is_scoped_to_the_caller_and_the_worker() -> None:
    key = lease_request_key("key:k1", "w1", "call-1")
    assert len(key) == 64 and "call-1" not in key
    assert lease_request_key("key:k1", "w1", "call-1") == key
    assert lease_request_key("key:k2", "w1", "call-1") != key
    assert lease_request_key("key:k1", "w2", "call-1") != key
    assert lease_request_key("key:k1", "w1", "call-2") != key
    assert lease_request_key("key:k1", "w1", "") == ""  # no id: nothing to find again
