"""Lease tokens that can be handed out twice, and the retry of a Lease call.

A lease token is never stored, only its hash. To let a retried Lease call (same request id,
credential and worker) answer the very tokens of the first call, a token is not drawn at random
but derived: ``wcl_`` + base64url(HMAC-SHA256(lease-token key, lease id + nonce)). Each attempt
stores its random nonce. The key is derived from the service key every replica shares: it lives
only in the coordinators' memory, so someone holding a copy of the database holds neither the
tokens nor what is needed to make them. A coordinator run without a service key derives it from
a random secret of the installation kept in its database instead (``installation_secrets``), so
a retry is still answered after a restart; a copy of that database can then make the tokens of
its live leases. Either way a token carries 256 bits no caller can guess, and verification is
unchanged: the hash of the presented token must equal the stored one.

A retry is answered from the attempts the first call granted, found by a digest of
(principal, worker id, request id) stored on them, while every one of them is still live by the
server's clock; otherwise (one ended, or the key changed since) the id is spent: the call
leases afresh, and its grant takes the digest over from the spent one's attempts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from workcoord.kit.secrets import LEASE_TOKEN_PREFIX, TokenSource, hash_secret, secrets_equal

from ..model import Attempt, Item
from ..ports import Reader
from ..results import GrantedLease
from ..specs import Checkpoint

__all__ = [
    "LEASE_TOKEN_SECRET",
    "derive_lease_token",
    "lease_request_key",
    "lease_token_key",
    "replay_lease_request",
]

_KEY_LABEL = b"workcoord lease tokens v1"


LEASE_TOKEN_SECRET = "lease-token"  # noqa: S105  # the installation secret's name
"""The name of the installation secret lease tokens are derived from without a service key."""


def lease_token_key(service_key: str | None, installation_secret: str = "") -> bytes:
    """The key lease tokens are derived with: from the service key all replicas share, else
    from the installation's secret (:data:`LEASE_TOKEN_SECRET`, kept in the database), else
    random until that is loaded (see ``Engine.load_lease_token_key``)."""
    if service_key:
        return hmac.new(service_key.encode("utf-8"), _KEY_LABEL, hashlib.sha256).digest()
    if installation_secret:
        return hmac.new(bytes.fromhex(installation_secret), _KEY_LABEL, hashlib.sha256).digest()
    return os.urandom(32)


class LeaseSecret(NamedTuple):
    """A new attempt's lease id and the token only its worker is told; stored: the nonce and
    the token's hash."""

    lease_id: str
    nonce: str
    token: str
    token_hash: str


def new_lease_secret(key: bytes, tokens: TokenSource, lease_id: str) -> LeaseSecret:
    """For a new attempt's ``lease_id``: a random nonce, and the token derived from them (with
    its hash)."""
    nonce = tokens.token_urlsafe(16)
    token = derive_lease_token(key, lease_id, nonce)
    return LeaseSecret(lease_id, nonce, token, hash_secret(token))


def derive_lease_token(key: bytes, lease_id: str, nonce: str) -> str:
    """The lease token of attempt ``lease_id`` with its stored ``nonce`` (256 bits)."""
    mac = hmac.new(key, f"{lease_id}\n{nonce}".encode(), hashlib.sha256).digest()
    return LEASE_TOKEN_PREFIX + base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def lease_request_key(principal_name: str, worker_id: str, request_id: str) -> str:
    """What a Lease call's request id is stored under: scoped to the caller and the worker
    (another credential or worker reusing the id never sees these leases)."""
    if not request_id:
        return ""
    scoped = f"{principal_name}\n{worker_id}\n{request_id}".encode()
    return hashlib.sha256(scoped).hexdigest()


async def replay_lease_request(
    reader: Reader,
    attempts: Sequence[Attempt],
    worker_id: str,
    key: bytes,
    now: datetime,
) -> list[GrantedLease] | None:
    """The leases of ``attempts`` (what one call granted) with their tokens, if every one is
    still live at ``now`` (the server's time); ``None`` when there is nothing to answer again."""
    if not attempts or not all(_held(a, worker_id, now) for a in attempts):
        return None
    tokens: dict[str, str] = {}
    for attempt in attempts:
        token = derive_lease_token(key, attempt.lease_id, attempt.token_nonce)
        if not attempt.token_nonce or not secrets_equal(hash_secret(token), attempt.token_hash):
            return None  # granted under another key: cannot be handed out again
        tokens[attempt.lease_id] = token
    granted: list[GrantedLease] = []
    for attempt in attempts:
        item = await reader.get_item(attempt.item_id)
        lane = await reader.get_lane(attempt.lane_id)
        if item is None or lane is None:
            return None
        granted.append(
            GrantedLease(
                attempt=attempt,
                lease_token=tokens[attempt.lease_id],
                item=item,
                lane=lane,
                checkpoint=await _checkpoint_of(reader, attempt),
            )
        )
    # In the order the first call chose them: priority first, then FIFO.
    granted.sort(key=lambda g: _claim_order(g.item))
    return granted


def _held(attempt: Attempt, worker_id: str, now: datetime) -> bool:
    return attempt.live and attempt.lease_expire_time > now and attempt.worker_id == worker_id


def _claim_order(item: Item) -> tuple[int, int]:
    return (-item.priority, item.seq)


async def _checkpoint_of(reader: Reader, attempt: Attempt) -> Checkpoint | None:
    if not attempt.continues_lease_id:
        return None
    previous = await reader.get_attempt(attempt.continues_lease_id)
    stored = previous.checkpoint if previous else None
    return Checkpoint.from_json(stored) if stored is not None else None
