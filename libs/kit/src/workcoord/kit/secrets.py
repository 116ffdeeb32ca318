"""Secrets: generation, hashing, constant-time comparison, and spotting credentials in text.

Every workcoord secret (work key, admin token, lease token, service key, session) is 256 bits
from the OS CSPRNG, shown once, stored as a hash and compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
from collections import Counter
from typing import Protocol

__all__ = [
    "ADMIN_TOKEN_PREFIX",
    "LEASE_TOKEN_PREFIX",
    "SECRET_PREFIXES",
    "SERVICE_KEY_PREFIX",
    "SESSION_PREFIX",
    "WORK_KEY_PREFIX",
    "SystemTokenSource",
    "TokenSource",
    "hash_secret",
    "looks_like_credential",
    "new_secret",
    "redact_credentials",
    "secrets_equal",
]

# Prefixes, not secrets (ruff's S105 cannot tell).
WORK_KEY_PREFIX = "wck_"
ADMIN_TOKEN_PREFIX = "wcadm_"  # noqa: S105
LEASE_TOKEN_PREFIX = "wcl_"  # noqa: S105
SERVICE_KEY_PREFIX = "wcsvc_"
SESSION_PREFIX = "wcses_"
SECRET_PREFIXES = (
    WORK_KEY_PREFIX,
    ADMIN_TOKEN_PREFIX,
    LEASE_TOKEN_PREFIX,
    SERVICE_KEY_PREFIX,
    SESSION_PREFIX,
)

_SECRET_BYTES = 32  # 256 bits
_REDACTED = "[REDACTED]"


class TokenSource(Protocol):
    """Where random tokens come from; injected so tests can make them deterministic."""

    def token_urlsafe(self, nbytes: int) -> str:
        """``nbytes`` random bytes, URL-safe base64 encoded without padding."""
        ...


class SystemTokenSource:
    """Tokens from the operating system's CSPRNG (:mod:`secrets`)."""

    def token_urlsafe(self, nbytes: int) -> str:
        """``nbytes`` random bytes from the OS CSPRNG, URL-safe base64 encoded."""
        return secrets.token_urlsafe(nbytes)


_SYSTEM = SystemTokenSource()


def new_secret(prefix: str, source: TokenSource | None = None) -> str:
    """A new 256-bit secret with a readable prefix, e.g. ``wck_…`` for a work key.

    The prefix lets people and secret scanners tell what a leaked string is.
    """
    if prefix and not re.fullmatch(r"[a-z]+_", prefix):
        raise ValueError(f"secret prefix must be lowercase letters and an underscore: {prefix!r}")
    return prefix + (source or _SYSTEM).token_urlsafe(_SECRET_BYTES)


def hash_secret(secret: str) -> str:
    """The SHA-256 hex digest under which ``secret`` is stored.

    A fast hash is right here, unlike for passwords: these secrets carry 256 bits of entropy,
    so brute force is hopeless whatever the hash costs, and a slow KDF would only slow every
    authenticated request. Being deterministic, the digest also serves as the lookup key.
    """
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secrets_equal(a: str | bytes, b: str | bytes) -> bool:
    """Compare two secrets (or digests) in constant time."""
    left = a.encode("utf-8") if isinstance(a, str) else a
    right = b.encode("utf-8") if isinstance(b, str) else b
    return hmac.compare_digest(left, right)


# Well-known credential shapes. Each alternative matches the whole credential, so redaction
# replaces the secret part and not just its prefix.
_KNOWN_CREDENTIALS = re.compile(
    r"""
    (?:\b(?:wck|wcadm|wcl|wcsvc|wcses)_[A-Za-z0-9_\-]{8,})      # ours
    | (?:\bgh[pousr]_[A-Za-z0-9]{16,})                          # GitHub tokens
    | (?:\bgithub_pat_[A-Za-z0-9_]{16,})                        # GitHub fine-grained PAT
    | (?:\bglpat-[A-Za-z0-9_\-]{16,})                           # GitLab PAT
    | (?:\bsk-[A-Za-z0-9_\-]{16,})                              # OpenAI / Anthropic / Stripe keys
    | (?:\bxox[abposr]-[A-Za-z0-9\-]{8,})                       # Slack tokens
    | (?:\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)                         # AWS access key ids
    | (?:\bAIza[0-9A-Za-z_\-]{30,})                             # Google API keys
    | (?:-----BEGIN[A-Z ]*-----[\s\S]*?(?:-----END[A-Z ]*-----|$))  # PEM blocks
    | (?:\b[Bb]earer\s+\S+)                                     # Authorization values
    | (?:\b[Bb]asic\s+[A-Za-z0-9+/=]{8,})
    """,
    re.VERBOSE,
)
# Candidates for "a long random-looking run": base64/base64url/hex alphabets, 32+ characters.
# Padding only at the end, so "token=<hex>" splits at the "=".
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{32,}")
# Redaction in logs starts at 40 hex digits so 32-digit ids (uuid4().hex, trace ids) stay readable.
_HEX_RUN_TO_REDACT = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{40,}")


def _looks_random(run: str, min_hex: int = 32) -> bool:
    if _HEX_RUN.fullmatch(run):
        return len(run) >= min_hex and _looks_hex(run)
    has_digit = any(c.isdigit() for c in run)
    has_upper = any(c.isupper() for c in run)
    has_lower = any(c.islower() for c in run)
    if not (has_digit and has_upper and has_lower):
        # Human labels ("build-fleet-account-for-ci-runners-2026") rarely mix all three.
        return False
    counts = Counter(run)
    entropy = -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values())
    # Random base64 of this length scores ~4.5-5.5 bits/char; words and labels score lower.
    return entropy >= 3.5


def _looks_hex(run: str) -> bool:
    # Hex digests and hex tokens; require both digits and letters so "aaaa…" is not one.
    return any(c.isdigit() for c in run) and any(c.isalpha() for c in run)


def looks_like_credential(text: str) -> bool:
    """Whether ``text`` contains something that looks like a credential.

    Used to refuse run-identity labels (``account`` …) that would leak a secret into events.
    Leans towards saying yes: a false positive costs a renamed label, a false negative a leak.
    """
    if _KNOWN_CREDENTIALS.search(text):
        return True
    if any(_looks_random(m.group(0)) for m in _LONG_RUN.finditer(text)):
        return True
    # A hex token glued to a label ("sha-9f86d0…") hides inside a longer, non-random run.
    return any(_looks_hex(m.group(0)) for m in _HEX_RUN.finditer(text))


def redact_credentials(text: str) -> str:
    """``text`` with every credential-looking part replaced by ``[REDACTED]``."""
    text = _KNOWN_CREDENTIALS.sub(_REDACTED, text)
    text = _LONG_RUN.sub(
        lambda m: _REDACTED if _looks_random(m.group(0), min_hex=40) else m.group(0), text
    )
    return _HEX_RUN_TO_REDACT.sub(
        lambda m: _REDACTED if _looks_hex(m.group(0)) else m.group(0), text
    )
