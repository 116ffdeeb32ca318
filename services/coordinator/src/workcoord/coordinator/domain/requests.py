"""Request ids of creates: a retry gets the first result back, a reused id is refused.

Each id is unique within a scope the caller is authorized for: an org's work coordinators, a
work coordinator's lanes or grants, a lane's items. So one tenant's request id never answers
another tenant's request, and no lookup crosses orgs.
"""

from __future__ import annotations

from datetime import datetime

from workcoord.kit.errors import AlreadyExists, FieldViolation

from .ports import RequestRecord, Tx

__all__ = [
    "coordinators_scope",
    "grants_scope",
    "items_scope",
    "lanes_scope",
    "remember",
    "replayed",
]


def coordinators_scope(org_slug: str) -> str:
    """Work coordinators of an org ('' for the installation's GLOBAL one)."""
    return f"org/{org_slug}/work-coordinators"


def lanes_scope(coordinator_id: str) -> str:
    return f"{coordinator_id}/lanes"


def grants_scope(coordinator_id: str) -> str:
    return f"{coordinator_id}/grants"


def items_scope(coordinator_id: str, lane_id: str) -> str:
    return f"{coordinator_id}/{lane_id}/items"


async def replayed(tx: Tx, scope: str, request_id: str, fingerprint: str) -> str | None:
    """The id of what an earlier create with ``request_id`` in ``scope`` made, or None.

    Raises ALREADY_EXISTS naming ``request_id`` when that create had a different body."""
    if not request_id:
        return None
    found = await tx.find_request(scope, request_id)
    if found is None:
        return None
    if found.fingerprint and fingerprint and found.fingerprint != fingerprint:
        raise AlreadyExists(
            "request_id was already used for a different request",
            field_violations=[
                FieldViolation(
                    "request_id", "was already used for a different request; use a new one"
                )
            ],
        )
    return found.resource_id


async def remember(
    tx: Tx, scope: str, request_id: str, fingerprint: str, resource_id: str, now: datetime
) -> None:
    """Record that the create with ``request_id`` made ``resource_id`` (nothing without id)."""
    if request_id:
        await tx.insert_request(RequestRecord(scope, request_id, fingerprint, resource_id, now))
