"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

A secret is ``whsec_`` + base64 of 24 random bytes; the signature of a delivery is
``v1,`` + base64(HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")), the key being
the secret's base64 part decoded. A receiver verifies with :func:`verify`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 (the prefix of every secret, not one)
_SECRET_BYTES = 24
# How far a receiver accepts a timestamp from its own clock (the specification's 5 minutes).
TOLERANCE_SECONDS = 300


class SignatureError(ValueError):
    """A delivery whose signature or timestamp does not verify."""


def new_secret() -> str:
    """A fresh signing secret (shown once to whoever creates the webhook)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()


def _key(secret: str) -> bytes:
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret starts with whsec_")
    return base64.b64decode(secret[len(SECRET_PREFIX) :])


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value of ``body``."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(secret: str, webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers of a delivery (plus its content type)."""
    return {
        "content-type": "application/json",
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, webhook_id, timestamp, body),
    }


def verify(secret: str, received: dict[str, str], body: bytes, now: int) -> str:
    """Check a delivery as a receiver does; its ``webhook-id`` (the dedup key).

    ``received`` maps lower-case header names to values. Raises :class:`SignatureError`."""
    try:
        webhook_id = received["webhook-id"]
        timestamp = int(received["webhook-timestamp"])
        offered = received["webhook-signature"].split()
    except (KeyError, ValueError) as exc:
        raise SignatureError("missing or malformed webhook headers") from exc
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise SignatureError("webhook-timestamp is outside the tolerance")
    expected = sign(secret, webhook_id, timestamp, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in offered):
        raise SignatureError("no webhook-signature matches")
    return webhook_id
