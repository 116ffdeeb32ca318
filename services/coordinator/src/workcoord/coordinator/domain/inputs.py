"""What the engine's commands take when they take more than two values: one frozen dataclass
per command, named after it (the caller's principal is passed beside it), grouped by concern.
Transport builds them from the request; tests and in-process callers build them by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .auth import Capability, OrgRole
from .grants import GrantPermission

# --- tenancy: orgs, users, members, keys, grants, sessions ---


@dataclass(frozen=True, slots=True)
class CreateUserInput:
    """A user to provision (platform admins only); ``email`` is kept lower-cased."""

    email: str
    display_name: str = ""
    platform_admin: bool = False
    verified: bool = False


@dataclass(frozen=True, slots=True)
class AddOrgMemberInput:
    """Make ``user_id`` a member of ``org_slug`` with ``role`` (or change its role)."""

    org_slug: str
    user_id: str
    role: OrgRole


@dataclass(frozen=True, slots=True)
class ListOrgMembersInput:
    org_slug: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True)
class CreateUserTokenInput:
    """A new admin API token of ``user_id``; ``expire_time`` None never expires."""

    user_id: str
    display_name: str = ""
    expire_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class CreateWorkKeyInput:
    """A new work key over ``coordinator_ids`` with ``capabilities``. ``org_slug`` may be left
    empty: the key belongs to the one org of its work coordinators."""

    display_name: str
    coordinator_ids: tuple[str, ...]
    capabilities: tuple[Capability, ...]
    org_slug: str = ""
    expire_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class ListWorkKeysInput:
    """Work keys of ``org_slug`` (empty: every org's, for a platform admin)."""

    org_slug: str = ""
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True)
class CreateGrantInput:
    """The child ``coordinator_id`` grants its configured parent ``permissions`` until
    ``expire_time`` (required). ``request_id`` makes a retry answer the same grant;
    ``fingerprint`` is the request's, to refuse a reused id with other contents."""

    coordinator_id: str
    parent_coordinator_id: str
    permissions: tuple[GrantPermission, ...]
    expire_time: datetime | None
    request_id: str = ""
    fingerprint: str = ""


@dataclass(frozen=True, slots=True)
class ListGrantsInput:
    coordinator_id: str
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True, slots=True)
class AssignChildWorkInput:
    """The parent ``parent_id`` places item ``item_id`` of its child on ``worker_id``."""

    parent_id: str
    child_id: str
    lane_id: str
    item_id: str
    worker_id: str


@dataclass(frozen=True, slots=True)
class SteerChildWorkInput:
    """The parent ``parent_id`` sets the priority of a child's lane and its queued items."""

    parent_id: str
    child_id: str
    lane_id: str
    priority: int


@dataclass(frozen=True, slots=True)
class EscalateChildWorkInput:
    """The parent ``parent_id`` escalates a child's lane (or one of its items: ``item_id``)
    to the child's digest owner."""

    parent_id: str
    child_id: str
    lane_id: str
    reason: str
    item_id: str = ""
