"""The wire names and the one reader of a call's credentials (``workcoord.kit.wire``)."""

from __future__ import annotations

import pytest

from workcoord.api.v1 import admin_pb2, field_rules_pb2, session_pb2
from workcoord.kit.errors import Unauthenticated
from workcoord.kit.wire import (
    AUTHORIZATION_KEY,
    CSRF_KEY,
    MAX_SECRET_CHARS,
    SESSION_KEY,
    CallCredentials,
    api_modules,
    bearer_metadata,
    bearer_secret,
    call_credentials,
)


def test_no_metadata_is_no_credential() -> None:
    assert call_credentials(None) == CallCredentials()
    assert call_credentials([("x-request-id", "r1")]) == CallCredentials()


def test_a_bearer_secret_round_trips() -> None:
    assert call_credentials(bearer_metadata("wck_s3cret")).bearer == "wck_s3cret"
    # The scheme is case-insensitive; surrounding blanks are not part of the secret.
    assert call_credentials([(AUTHORIZATION_KEY, "bearer  wck_x ")]).bearer == "wck_x"


@pytest.mark.parametrize(
    "value", ["Bearer wck_x", "bearer wck_x", "BEARER wck_x", "Bearer  wck_x", "\tBearer\twck_x "]
)
def test_every_spelling_of_one_bearer_is_one_secret(value: str) -> None:
    # The gateway counts feeds by this secret: spellings of one key must not count apart.
    assert bearer_secret(value) == "wck_x"


@pytest.mark.parametrize(
    "value",
    [
        "Basic abc",
        "Bearer",
        "Bearer   ",
        "",
        "wck_x",
        "Bearerwck_x",
        "Bearer wck_x extra",
        "Bearer wck_\u00e9",  # non-ASCII (an HTTP header's bytes read as latin-1)
        "Bearer wck_\x00x",
        "Bearer " + "a" * (MAX_SECRET_CHARS + 1),
        "Bearer " + "a" * (100 * 1024),
        "Bearer\u00a0wck_x",
    ],
)
def test_a_malformed_authorization_is_refused(value: str) -> None:
    with pytest.raises(Unauthenticated, match="must be 'Bearer <secret>'"):
        bearer_secret(value)
    with pytest.raises(Unauthenticated, match="must be 'Bearer <secret>'"):
        call_credentials([(AUTHORIZATION_KEY, value), (SESSION_KEY, "wcses_s")])


def test_the_longest_secret_is_accepted() -> None:
    longest = "a" * MAX_SECRET_CHARS
    assert bearer_secret(f"Bearer {longest}") == longest


def test_session_and_csrf_are_read_and_bytes_decoded() -> None:
    found = call_credentials([(SESSION_KEY, b"wcses_s"), (CSRF_KEY, "wcses_c")])
    assert found == CallCredentials(bearer=None, session="wcses_s", csrf="wcses_c")
    # Empty values count as absent; the first value of a key counts.
    assert call_credentials([(SESSION_KEY, ""), (CSRF_KEY, "")]) == CallCredentials()
    first = call_credentials([(SESSION_KEY, "a"), (SESSION_KEY, "b")])
    assert first.session == "a"


def test_api_modules_are_every_generated_module() -> None:
    modules = api_modules()
    assert admin_pb2 in modules and session_pb2 in modules and field_rules_pb2 in modules
    assert all(m.__name__.endswith("_pb2") for m in modules)
    assert [m.__name__ for m in modules] == sorted(m.__name__ for m in modules)
