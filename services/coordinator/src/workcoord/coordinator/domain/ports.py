"""The storage port: what the domain needs from a database, as a Protocol.

The implementations live in ``workcoord.coordinator.storage`` (SQL on PostgreSQL and SQLite,
and an in-memory one for unit tests); the domain never imports them. One contract suite
(``tests/contract``) runs the same cases on all three, method by method.

A write transaction locks its work coordinator first, as its :class:`WriteLock` says: claims
wait for each other and every change but a group of worker writes waits for a claim, so
capacity counts see every committed claim; and every writer numbers its events and commits
holding the coordinator's row, so revisions stay gap-free.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from .grants import GrantRecord, LoginCode, MemberRecord, SessionRecord, TokenRecord
from .model import (
    Attempt,
    Blocker,
    Coordinator,
    DigestEntry,
    Escalation,
    Event,
    Item,
    ItemState,
    JsonObject,
    Lane,
    LaneState,
    NewEvent,
    PendingAction,
    PendingActionState,
    RetryPolicy,
    Ticket,
    UsageScope,
    UsageTotal,
    Worker,
)
from .tickets import TrackerConnection
from .webhooks import Delivery, Webhook


@dataclass(frozen=True, slots=True)
class Credential:
    """A stored credential found by its secret's hash."""

    kind: str  # "user_token" | "work_key"
    credential_id: str
    owner_id: str  # user id for tokens, key id for work keys
    expire_time: datetime | None
    revoke_time: datetime | None


@dataclass(frozen=True, slots=True)
class ResolvedCredential:
    """A credential with what authentication needs of its owner, read in one go: the work key,
    or the user and their org roles (org slug -> role); and the credentials epoch it was read
    at (see :meth:`Reader.credentials_epoch`)."""

    credential: Credential
    work_key: WorkKeyRecord | None = None
    user: UserRecord | None = None
    roles: dict[str, str] | None = None
    epoch: int | None = None


@dataclass(frozen=True, slots=True)
class UserRecord:
    user_id: str
    email: str
    display_name: str
    platform_admin: bool
    verified: bool
    create_time: datetime


@dataclass(frozen=True, slots=True)
class WorkKeyRecord:
    key_id: str
    display_name: str
    org_slug: str
    coordinator_ids: tuple[str, ...]
    capabilities: tuple[str, ...]
    secret_hash: str
    create_time: datetime
    created_by: str
    expire_time: datetime | None = None
    revoke_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class OrgRecord:
    slug: str
    display_name: str
    create_time: datetime


@dataclass(frozen=True, slots=True)
class Leadership:
    name: str
    holder_id: str
    expire_time: datetime
    term: int


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """A create that carried a request id: what it made and a fingerprint of its body.

    ``scope`` says where the id is unique (an org's work coordinators, a work coordinator's
    lanes or grants, a lane's items), so one tenant's ids never answer another's requests.
    ``fingerprint`` is a hash of the request without its id ("" when unknown: recorded before
    fingerprints were kept)."""

    scope: str
    request_id: str
    fingerprint: str
    resource_id: str
    create_time: datetime


# A place in the lane list (newest first): the (create_time, lane_id) of the last lane seen.
LaneCursor = tuple[datetime, str]


@dataclass(frozen=True, slots=True)
class LaneStamp:
    """A lane's place in the view's order and its version (moved by every write of the lane)."""

    lane_id: str
    create_time: datetime
    version: int


# A place in the claim order: (priority, the lane's turn, seq) of the last item seen.
ClaimCursor = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class ClassLoads:
    """What a claim reads of the asked classes under the lock, besides the worker
    (``Tx.worker_and_loads``): the asking worker's own live attempts (for its fence) and each
    class's number of live attempts (for its capacity; a class with none is absent)."""

    own: list[Attempt]
    """The asking worker's live attempts of the asked classes, in lease order."""
    live: dict[str, int]
    """Live attempts of each asked class (of every worker)."""


@dataclass(frozen=True, slots=True)
class ClaimScan:
    """One page of :meth:`Tx.claim_candidates`: the items of any of ``worker_classes`` ready at
    ``now`` in a work coordinator in claim order (highest priority first; within one priority,
    the lane served longest ago first, its items first in, first out), after ``after``, at most
    ``limit``. The classes of one worker are ranked together: the best item of any goes first."""

    coordinator_id: str
    worker_classes: tuple[str, ...]
    now: datetime
    after: ClaimCursor | None
    limit: int


@dataclass(frozen=True, slots=True)
class ClaimPage:
    """What :meth:`Tx.claim_candidates` found: the items, and the cursor after the last one
    (None when there is none)."""

    items: list[Item]
    after: ClaimCursor | None


# The fields of an item that :meth:`Tx.end_expired_leases` loads: what a retry or a
# dead-letter reads and writes, and what an Item cannot be built without.
EXPIRED_ITEM_FIELDS = (
    "item_id",
    "coordinator_id",
    "lane_id",
    "key",
    "kind",
    "worker_class",
    "state",
    "create_time",
    "update_time",
    "retry_policy",
    "attempt_count",
    "sensitive",
    "current_lease_id",
    "not_before",
    "ready_time",
    "dead_letter_reason",
)

# What a retry or a dead-letter changes of an item: all :meth:`Tx.write_retries` writes.
RETRY_FIELDS = (
    "state",
    "not_before",
    "ready_time",
    "dead_letter_reason",
    "current_lease_id",
    "update_time",
)


@dataclass(frozen=True, slots=True)
class ExpiredLease:
    """A lease :meth:`Tx.end_expired_leases` has just ended: its attempt as now stored (DEAD,
    ended at ``now``), the retry policy of the item's lane (empty if the lane is gone) and its
    item (None if it is gone) with only :data:`EXPIRED_ITEM_FIELDS` loaded — the others are
    left at their defaults, so the item is written back with :meth:`Tx.write_retries` only,
    which writes nothing else."""

    attempt: Attempt
    item: Item | None
    lane_retry_policy: RetryPolicy


class Reader(Protocol):
    """Reads, in one consistent snapshot."""

    async def platform_enabled(self) -> bool: ...
    async def get_coordinator(self, coordinator_id: str) -> Coordinator | None: ...
    async def list_coordinators(
        self, after_id: str, limit: int, org_slugs: Sequence[str] | None
    ) -> list[Coordinator]: ...
    async def get_lane(self, lane_id: str) -> Lane | None: ...
    async def list_lanes(
        self, coordinator_id: str, state: LaneState | None, after: LaneCursor | None, limit: int
    ) -> list[Lane]: ...
    async def lane_items(self, lane_ids: Sequence[str]) -> list[Item]: ...
    async def lane_item_states(self, lane_id: str) -> dict[str, ItemState]: ...
    async def lane_with_state_counts(
        self, lane_id: str
    ) -> tuple[Lane | None, dict[ItemState, int]]:
        """``get_lane`` and how many of its items are in each state (states with none left
        out), in one read; a write transaction counts its own item updates."""
        ...

    async def waiting_items(self, lane_id: str) -> list[Item]: ...
    async def queued_items(self, coordinator_id: str) -> list[Item]: ...
    async def lane_blockers(self, lane_ids: Sequence[str]) -> list[Blocker]: ...
    async def lane_tickets(self, lane_ids: Sequence[str]) -> list[Ticket]: ...
    async def get_item(self, item_id: str) -> Item | None: ...
    async def get_attempt(self, lease_id: str) -> Attempt | None: ...
    async def item_attempts(self, item_ids: Sequence[str]) -> list[Attempt]: ...
    async def live_attempts(
        self, coordinator_id: str, worker_class: str | None
    ) -> list[Attempt]: ...
    async def worker_and_loads(
        self, coordinator_id: str, worker_id: str, worker_classes: Sequence[str]
    ) -> tuple[Worker | None, ClassLoads]:
        """``get_worker`` and the :class:`ClassLoads` of ``worker_classes`` (what a claim reads
        after the lock), read together: the counts without reading every live attempt."""
        ...

    async def count_live_attempts(self, coordinator_id: str, worker_class: str) -> int:
        """How many ``live_attempts`` the class has (without reading them)."""
        ...

    async def live_exclusive_holders(
        self, coordinator_id: str, keys: Sequence[str]
    ) -> dict[str, str]: ...
    async def lease_request_attempts(
        self, coordinator_id: str, lease_request: str
    ) -> list[Attempt]: ...
    async def count_ready(self, coordinator_id: str) -> dict[str, int]: ...
    async def count_awaiting_human(
        self, coordinator_id: str
    ) -> dict[str, tuple[int, datetime | None]]:
        """Items waiting on a person (AWAITING_APPROVAL, STOPPED) by state: how many, and the
        earliest time one of them entered its state (its ``update_time``)."""
        ...

    async def has_ready(
        self, coordinator_id: str, worker_classes: tuple[str, ...], now: datetime
    ) -> bool: ...
    async def next_not_before(
        self, coordinator_id: str, worker_classes: tuple[str, ...], now: datetime
    ) -> datetime | None: ...
    async def list_events(
        self, coordinator_id: str, since_revision: int, limit: int, lane_id: str, item_id: str
    ) -> list[Event]: ...
    async def lane_stamps(
        self, coordinator_id: str, after: LaneCursor | None, limit: int
    ) -> list[LaneStamp]:
        """The lanes ``list_lanes`` (of every state) would give, as stamps."""
        ...

    async def get_lanes(self, lane_ids: Sequence[str]) -> list[Lane]:
        """The lanes of ``lane_ids`` that exist, in lane id order."""
        ...

    async def coordinator_tickets(self, coordinator_id: str) -> list[Ticket]:
        """Every ticket of the work coordinator, in ``lane_tickets``'s order."""
        ...

    async def event_lane_ids(
        self, coordinator_id: str, after_revision: int, limit: int
    ) -> list[str]:
        """The lane id of each event after ``after_revision`` ("" for an event of no lane), in
        revision order, at most ``limit`` (what the view cache reloads)."""
        ...

    async def get_worker(self, coordinator_id: str, worker_id: str) -> Worker | None: ...
    async def list_workers(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[Worker]: ...
    async def find_credential(self, secret_hash: str) -> Credential | None: ...
    async def resolve_credential(self, secret_hash: str) -> ResolvedCredential | None: ...
    async def credentials_epoch(self) -> int | None:
        """A counter that moves with every change to credentials, users or org roles (work
        keys, user tokens, users, memberships), whoever makes it; None while the platform
        settings do not exist yet. A principal resolved at epoch E is still current while the
        epoch reads E (revocation and expiry apply on the very next request)."""
        ...

    async def get_user(self, user_id: str) -> UserRecord | None: ...
    async def user_roles(self, user_id: str) -> dict[str, str]: ...
    async def find_user_by_email(self, email: str) -> UserRecord | None: ...
    async def get_work_key(self, key_id: str) -> WorkKeyRecord | None: ...
    async def list_work_keys(
        self, org_slug: str, after_id: str, limit: int
    ) -> list[WorkKeyRecord]: ...
    async def get_org(self, slug: str) -> OrgRecord | None: ...
    async def list_orgs(self, after_slug: str, limit: int) -> list[OrgRecord]: ...
    async def list_users(self, after_id: str, limit: int) -> list[UserRecord]: ...
    async def settings_row(self) -> tuple[bool, datetime, int]: ...
    async def digest_entries(self, coordinator_id: str, day: str) -> list[DigestEntry]: ...
    async def usage_totals(
        self,
        coordinator_id: str,
        scope: UsageScope,
        day: str,
        keys: Sequence[str] | None = None,
    ) -> list[UsageTotal]:
        """The roll-ups of ``scope`` on ``day`` ("" for all time): of ``keys`` (by key), or all
        of them, the costliest first."""
        ...

    async def usage_days(
        self, coordinator_id: str, scope: UsageScope, key: str, since: str
    ) -> list[UsageTotal]:
        """The day roll-ups of ``scope`` and ``key`` from the UTC day ``since`` on, by day."""
        ...

    async def get_pending_action(self, action_id: str) -> PendingAction | None: ...
    async def list_pending_actions(
        self, coordinator_id: str, state: PendingActionState | None, after_id: str, limit: int
    ) -> list[PendingAction]: ...
    async def due_pending_actions(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[PendingAction]: ...
    async def tickets_to_sync(self, coordinator_id: str, limit: int) -> list[Ticket]: ...
    async def get_tracker_connection(self, tracker_id: str) -> TrackerConnection | None: ...
    async def list_tracker_connections(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[TrackerConnection]:
        """Up to ``limit`` of the work coordinator's tracker connections after ``after_id``,
        by id."""
        ...

    async def open_escalations(self, coordinator_id: str) -> list[Escalation]: ...
    async def escalation_candidates(
        self, coordinator_id: str, now: datetime, ready_before: datetime, limit: int
    ) -> list[Item]: ...

    # Tenancy: parent grants, org members, user tokens, browser sessions, login codes.
    async def get_grant(self, grant_id: str) -> GrantRecord | None: ...
    async def list_grants(
        self, coordinator_id: str, after_id: str, limit: int
    ) -> list[GrantRecord]: ...
    async def grants_between(
        self, coordinator_id: str, parent_coordinator_id: str
    ) -> list[GrantRecord]: ...
    async def list_members(
        self, org_slug: str, after_user: str, limit: int
    ) -> list[MemberRecord]: ...
    async def get_member(self, org_slug: str, user_id: str) -> MemberRecord | None: ...
    async def get_user_token(self, token_id: str) -> TokenRecord | None: ...
    async def find_session(self, secret_hash: str) -> SessionRecord | None: ...
    async def get_session(self, session_id: str) -> SessionRecord | None: ...
    async def find_login_code(self, code_hash: str) -> LoginCode | None: ...
    async def get_webhook(self, webhook_id: str) -> Webhook | None: ...
    async def list_webhooks(self, coordinator_id: str) -> list[Webhook]: ...
    async def get_delivery(self, delivery_id: str) -> Delivery | None: ...
    async def list_deliveries(
        self, webhook_id: str, before_revision: int, limit: int
    ) -> list[Delivery]:
        """Up to ``limit`` deliveries of the webhook before ``before_revision``, newest first."""
        ...

    async def undone_deliveries(self, limit: int) -> list[Delivery]:
        """Up to ``limit`` deliveries not done (PENDING, FAILED), by webhook then revision."""
        ...


class Tx(Reader, Protocol):
    """A write transaction. When opened for a work coordinator it holds that coordinator's lock;
    :meth:`append` gives each event the coordinator's next revision and moves its counter, in
    the same transaction as the change."""

    now: datetime
    coordinator: Coordinator | None
    # The credentials epoch as read together with the coordinator's lock (None: no lock taken
    # yet, or no platform settings): a caller cached at this epoch is still current.
    locked_credentials_epoch: int | None
    # The credentials epoch as the last ``get_coordinator`` of this transaction read it with the
    # coordinator (None: not read that way; ``credentials_epoch`` reads it).
    seen_credentials_epoch: int | None

    async def append(
        self, coordinator: Coordinator, events: Sequence[NewEvent], actor: str
    ) -> int: ...
    async def insert_coordinator(self, coordinator: Coordinator, request_id: str) -> None: ...
    async def insert_webhook(self, webhook: Webhook) -> None: ...
    async def update_webhook(self, webhook: Webhook) -> None: ...
    async def delete_webhook(self, webhook_id: str) -> None:
        """Remove the webhook and its deliveries."""
        ...

    async def update_deliveries(self, deliveries: Sequence[Delivery]) -> None: ...
    async def update_coordinator(self, coordinator: Coordinator) -> None: ...
    async def insert_lane(self, lane: Lane) -> None: ...
    async def update_lane(self, lane: Lane) -> None: ...
    async def find_request(self, scope: str, request_id: str) -> RequestRecord | None: ...
    async def insert_request(self, record: RequestRecord) -> None: ...
    async def installation_secret(self, name: str, candidate: str) -> str: ...
    async def insert_items(self, items: Sequence[Item]) -> None: ...
    async def update_items(self, items: Sequence[Item]) -> None: ...
    async def next_item_seq(self, count: int) -> int: ...
    async def insert_blocker(self, coordinator_id: str, blocker: Blocker) -> None: ...
    async def update_blocker(self, blocker: Blocker) -> None: ...
    async def insert_ticket(self, coordinator_id: str, ticket: Ticket) -> None: ...
    async def claim_candidates(self, scan: ClaimScan) -> ClaimPage: ...
    async def mark_lanes_served(self, lane_ids: Sequence[str], turn: int) -> None:
        """Record that the lanes were served at ``turn`` (a number that only grows within a
        work coordinator): the claim order's turn of a lane. Not a change of the lane: its
        version (etag) stays."""

    async def insert_attempts(self, attempts: Sequence[Attempt]) -> None: ...
    async def update_attempts(self, attempts: Sequence[Attempt]) -> None: ...
    async def attempt_with_item(self, lease_id: str) -> tuple[Attempt | None, Item | None]:
        """The attempt (as get_attempt) and its item, in one read."""
        ...

    async def attempts_with_items(
        self, lease_ids: Sequence[str], *, skip_locked: bool = False
    ) -> dict[str, tuple[Attempt | None, Item | None]]:
        """``attempt_with_item`` of every lease in ``lease_ids`` (distinct), in one read: the
        fence of a batched worker write. Every id is a key; (None, None) for an unknown one.

        ``skip_locked``: never wait for a row another transaction holds (on PostgreSQL the
        rows are locked ``SKIP LOCKED``); only the leases read are keys, and a missing id is
        held by another transaction, or unknown. The stores that serialize their writers
        (memory, SQLite) leave out the unknown ones only."""
        ...

    async def coordinators_and_attempts(
        self, coordinator_ids: Sequence[str], lease_ids: Sequence[str]
    ) -> tuple[dict[str, Coordinator | None], dict[str, tuple[Attempt | None, Item | None]]]:
        """A heartbeat round's reads: ``get_coordinator`` of each of ``coordinator_ids`` (None:
        unknown), then ``attempts_with_items(lease_ids, skip_locked=True)``. In
        :meth:`Store.extend`'s statements on PostgreSQL, ONE statement without a lock, which
        returns only the attempts of those work coordinators (a lease of another is left out,
        as an unknown one is) and keeps each attempt row's version for
        :meth:`extend_attempts`."""
        ...

    async def extend_attempts(
        self, extended: Sequence[tuple[Attempt, Sequence[UsageTotal]]]
    ) -> set[str]:
        """The heartbeats' write: each attempt (extended in memory) with the roll-up totals its
        usage adds; the lease ids written. In a transaction that read them locked, all of them
        (``update_attempts``, then ``add_usage``). In :meth:`Store.extend`'s statements on
        PostgreSQL, ONE statement writes the attempts whose rows are still the version read
        and free (it never waits for one), and adds the totals of those only."""
        ...

    async def items_by_ids(self, item_ids: Sequence[str]) -> list[Item]: ...
    async def end_expired_leases(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[ExpiredLease]:
        """Recovery, as a set: end (DEAD, ``end_time`` = ``now``) up to ``limit`` live attempts
        of the coordinator whose lease expired by ``now``, earliest expiry first (then lease
        id), release their exclusive holds, and return them in that order with their items."""
        ...

    async def write_retries(self, items: Sequence[Item]) -> None:
        """Write, for each item, what a retry or a dead-letter changes (:data:`RETRY_FIELDS`)
        and nothing else, as a set (items that do not exist are skipped)."""
        ...

    async def upsert_worker(self, worker: Worker) -> bool: ...
    async def count_workers(self, coordinator_id: str) -> int: ...
    async def touch_worker_ask(
        self,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        principal: str,
        worker_classes: Sequence[str] = (),
    ) -> None: ...
    async def set_worker_fence(
        self, coordinator_id: str, worker_id: str, fence: JsonObject | None
    ) -> None: ...
    async def delete_worker(self, coordinator_id: str, worker_id: str) -> bool: ...
    async def evict_workers(self, coordinator_id: str, unseen_before: datetime) -> list[str]: ...
    async def acquire_leadership(
        self, name: str, holder_id: str, now: datetime, expire_time: datetime
    ) -> Leadership: ...
    async def release_leadership(self, name: str, holder_id: str) -> Leadership | None: ...
    async def insert_org(self, org: OrgRecord) -> None: ...
    async def insert_user(self, user: UserRecord) -> None: ...
    async def insert_user_token(self, token: TokenRecord, secret_hash: str) -> None: ...
    async def insert_work_key(self, key: WorkKeyRecord) -> None: ...
    async def revoke_work_key(self, key_id: str, when: datetime) -> None: ...
    async def set_member(self, org_slug: str, user_id: str, role: str, when: datetime) -> None: ...
    async def set_platform_enabled(self, enabled: bool, when: datetime) -> None: ...
    async def insert_digest_entries(self, entries: Sequence[DigestEntry]) -> None: ...
    async def add_usage(self, totals: Sequence[UsageTotal]) -> None:
        """Add each total to its roll-up (created at zero when new)."""
        ...

    async def insert_pending_actions(self, actions: Sequence[PendingAction]) -> None: ...
    async def update_pending_action(self, action: PendingAction) -> None: ...
    async def update_ticket(self, coordinator_id: str, ticket: Ticket) -> None: ...
    async def insert_tracker_connection(self, connection: TrackerConnection) -> None: ...
    async def update_tracker_connection(self, connection: TrackerConnection) -> None: ...
    async def delete_tracker_connection(self, tracker_id: str) -> bool: ...
    async def insert_escalations(self, escalations: Sequence[Escalation]) -> None: ...
    async def resolve_escalations(
        self, coordinator_id: str, item_ids: Sequence[str], when: datetime
    ) -> None: ...

    # Tenancy.
    async def insert_grant(self, grant: GrantRecord) -> None: ...
    async def revoke_grant(self, grant_id: str, when: datetime) -> None: ...
    async def remove_member(self, org_slug: str, user_id: str) -> bool: ...
    async def revoke_user_token(self, token_id: str, when: datetime) -> None: ...
    async def insert_session(self, session: SessionRecord) -> None: ...
    async def revoke_session(self, session_id: str, when: datetime) -> None: ...
    async def insert_login_code(self, code: LoginCode) -> None: ...
    async def use_login_code(self, code_hash: str, when: datetime) -> bool: ...


class WriteLock(enum.Enum):
    """Who a write transaction of one work coordinator waits for (``Store.write``; the
    rules: docs/architecture.md, "Who waits for whom"). Writers that take the same lock wait
    for each other, and everyone waits for ``ALL``; claims (``CLAIM``, ``LARGE_CLAIM``) wait
    for each other; a claim and a group of ``WORKER_WRITES`` run side by side, each taking
    the row only at its flush (a ``CLAIM`` takes it at once)."""

    ALL = "all"  # the default: every other writer of the coordinator waits
    CLAIM = "claim"  # a Lease's claim of a few items: the row at once
    LARGE_CLAIM = "large_claim"  # a Lease's claim of many: the row at its flush
    WORKER_WRITES = "worker_writes"  # a group of worker writes (group_commit)


class Store(Protocol):
    """Opens transactions."""

    def read(self, *, snapshot: bool = True) -> AbstractAsyncContextManager[Reader]:
        """A read transaction; ``snapshot=False`` is for a caller that runs one statement
        (no snapshot to keep across statements: no BEGIN/COMMIT round trips)."""
        ...

    def write(
        self, coordinator_id: str | None = None, lock: WriteLock = WriteLock.ALL
    ) -> AbstractAsyncContextManager[Tx]: ...

    def extend(self) -> AbstractAsyncContextManager[Tx]:
        """Where a heartbeat round reads and extends leases (no coordinator's lock): on
        PostgreSQL, statements that each commit on their own (no ``BEGIN``/``COMMIT``, no
        attempt locked: ``Tx.extend_attempts`` compares and sets); elsewhere a write
        transaction. Nothing but reads and ``extend_attempts`` may run in it."""
        ...


async def extend_in_transaction(
    tx: Tx, extended: Sequence[tuple[Attempt, Sequence[UsageTotal]]]
) -> set[str]:
    """``Tx.extend_attempts`` in a transaction that read the attempts locked: all written."""
    await tx.update_attempts([attempt for attempt, _ in extended])
    await tx.add_usage([total for _, totals in extended for total in totals])  # last: Lock order
    return {attempt.lease_id for attempt, _ in extended}


async def read_in_turn(
    tx: Tx, coordinator_ids: Sequence[str], lease_ids: Sequence[str]
) -> tuple[dict[str, Coordinator | None], dict[str, tuple[Attempt | None, Item | None]]]:
    """``Tx.coordinators_and_attempts`` as the two reads it stands for, one after the other."""
    coordinators = {cid: await tx.get_coordinator(cid) for cid in coordinator_ids}
    found = await tx.attempts_with_items(lease_ids, skip_locked=True) if lease_ids else {}
    return coordinators, found
