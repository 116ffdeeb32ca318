"""What a violated database constraint means to a caller, the same for every store.

A few unique keys are chosen by callers, so hitting one means the record already exists: an
org's slug, a user's email, a lane's request id within its work coordinator, a ticket linked
to a lane twice, the bootstrap admin's token. Every other constraint (generated ids, secret
hashes, foreign keys, the invariants of one live attempt per item and one live holder per
exclusive key, gap-free event revisions) can only fail through a bug: that is an internal
error, logged with the constraint's name (never the row's values, which may hold secret hashes).

Pure Python: the in-memory store raises through here too, so both stores answer alike.
"""

from __future__ import annotations

import logging

from workcoord.kit.errors import AlreadyExists, Internal, WorkcoordError

__all__ = ["ALREADY_EXISTS", "violation"]

_log = logging.getLogger(__name__)

# Constraint (or unique index) name -> what already exists. Names as in storage/schema.py.
ALREADY_EXISTS: dict[str, str] = {
    "pk_orgs": "an org with this slug already exists",
    "uq_users_email": "a user with this email already exists",
    "uq_lanes_request": "a lane with this request id already exists",
    # Two creates with one request id at once: the loser's retry finds the winner's.
    "pk_request_ids": "a create with this request id is already under way; retry",
    "pk_tickets": "this ticket is already linked to the lane",
    # The bootstrap admin's token is chosen by the operator (WORKCOORD_BOOTSTRAP_ADMIN_TOKEN):
    # replicas starting together on a fresh database race to insert it.
    "uq_user_tokens_secret_hash": "a user token with this secret already exists",
}


def violation(constraint: str | None) -> WorkcoordError:
    """The error for a violated ``constraint`` (``None`` when the database did not name it)."""
    message = ALREADY_EXISTS.get(constraint or "")
    if message is not None:
        return AlreadyExists(message)
    _log.error("storage integrity violation on constraint %s", constraint or "<unnamed>")
    return Internal("a storage constraint was violated")
