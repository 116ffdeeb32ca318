"""Sealing tracker credentials at rest with the installation key.

The key is derived (HKDF-SHA256) from an installation secret kept in the database
(``installation_secrets``, name :data:`TRACKER_KEY_SECRET`, made on first use, shared by every
replica). A credential is sealed with AES-256-GCM under a fresh 96-bit nonce, with the
connection's id as associated data, so a sealed value copied onto another connection's row
does not open. The fingerprint is a keyed hash (HMAC-SHA256 under a second derived key): it
tells two credentials apart, and without the installation's key says nothing about either.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["TRACKER_KEY_SECRET", "CredentialSealer", "UnsealError"]

TRACKER_KEY_SECRET = "tracker-credentials"  # noqa: S105  # the installation secret's name
"""The name of the installation secret tracker credentials are sealed with."""

_VERSION = "v1"


class UnsealError(Exception):
    """A sealed credential does not open with this installation's key."""


def _derive(secret: bytes, label: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label).derive(secret)


class CredentialSealer:
    """Seals, opens and fingerprints credentials under one installation secret (hex)."""

    def __init__(self, installation_secret_hex: str) -> None:
        secret = bytes.fromhex(installation_secret_hex)
        self._aead = AESGCM(_derive(secret, b"workcoord tracker credential seal v1"))
        self._fingerprint_key = _derive(secret, b"workcoord tracker credential fingerprint v1")

    def seal(self, connection_id: str, credential: str) -> str:
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, credential.encode(), connection_id.encode())
        return f"{_VERSION}:{base64.urlsafe_b64encode(nonce + sealed).decode()}"

    def open(self, connection_id: str, sealed: str) -> str:
        version, _, payload = sealed.partition(":")
        if version != _VERSION:
            raise UnsealError("not a sealed credential of this release")
        try:
            raw = base64.urlsafe_b64decode(payload.encode())
            return self._aead.decrypt(raw[:12], raw[12:], connection_id.encode()).decode()
        except (InvalidTag, ValueError) as exc:
            raise UnsealError("the credential does not open with this installation's key") from exc

    def fingerprint(self, credential: str) -> str:
        """A short keyed hash of the credential: ``fp:`` and 12 hex digits."""
        digest = hmac.new(self._fingerprint_key, credential.encode(), hashlib.sha256).hexdigest()
        return f"fp:{digest[:12]}"
