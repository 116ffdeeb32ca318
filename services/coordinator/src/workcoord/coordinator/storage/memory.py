"""An in-memory implementation of the storage port, for fast unit tests of the domain.

Plain dictionaries, no I/O, with the semantics of :mod:`.sql` method by method: the same
filters and orderings, the exclusive-holds table, upserts and leadership. Write transactions
are serialised by one lock (as SQLite's ``BEGIN IMMEDIATE`` does) and work on a copy-on-write
snapshot that replaces the committed state only when the transaction body returns, so an
exception anywhere inside ``write()`` rolls back everything. Readers see the state committed
when they opened, like PostgreSQL's REPEATABLE READ.

Records are copied on the way in and on the way out: the engine mutates what it reads and a
change it does not write back must be lost here exactly as it is in the database.

The two invariants the SQL schema enforces with constraints (one live attempt per item, one live
holder per exclusive key) are enforced here too, with the same error, so a domain bug fails
loudly in unit tests as well.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import enum
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

from workcoord.coordinator.domain.model import (
    LIVE_ATTEMPT_STATUSES,
    Attempt,
    Blocker,
    Coordinator,
    DigestEntry,
    Escalation,
    Event,
    Item,
    ItemState,
    Lane,
    LaneState,
    NewEvent,
    PendingAction,
    PendingActionState,
    Ticket,
    Worker,
)
from workcoord.coordinator.domain.ports import (
    Credential,
    Leadership,
    OrgRecord,
    UserRecord,
    WorkKeyRecord,
)
from workcoord.kit.clock import Clock
from workcoord.kit.errors import AlreadyExists

__all__ = ["MemoryStore", "MemoryTx", "ReadOnlyViolation"]

_T = TypeVar("_T")


class ReadOnlyViolation(RuntimeError):
    """A write was attempted through a read transaction (a bug in the caller)."""


@dataclass(slots=True)
class _Settings:
    enabled: bool
    update_time: datetime
    version: int


@dataclass(slots=True)
class _CoordinatorRow:
    coordinator: Coordinator
    request_id: str
    item_seq: int


@dataclass(slots=True)
class _TokenRow:
    token_id: str
    user_id: str
    display_name: str
    secret_hash: str
    create_time: datetime
    expire_time: datetime | None
    revoke_time: datetime | None = None


@dataclass(slots=True)
class _Tables:
    """The committed state. Stored records are never mutated in place, so a shallow copy of
    every table is a snapshot."""

    settings: _Settings | None = None
    orgs: dict[str, OrgRecord] = field(default_factory=dict)
    users: dict[str, UserRecord] = field(default_factory=dict)
    members: dict[tuple[str, str], tuple[str, datetime]] = field(default_factory=dict)
    tokens: dict[str, _TokenRow] = field(default_factory=dict)
    work_keys: dict[str, WorkKeyRecord] = field(default_factory=dict)
    coordinators: dict[str, _CoordinatorRow] = field(default_factory=dict)
    lanes: dict[str, Lane] = field(default_factory=dict)
    items: dict[str, Item] = field(default_factory=dict)
    attempts: dict[str, Attempt] = field(default_factory=dict)
    # (coordinator_id, key) -> lease_id: one live holder per exclusive key.
    holds: dict[tuple[str, str], str] = field(default_factory=dict)
    events: dict[str, list[Event]] = field(default_factory=dict)
    workers: dict[tuple[str, str], Worker] = field(default_factory=dict)
    blockers: dict[str, tuple[str, Blocker]] = field(default_factory=dict)
    tickets: dict[tuple[str, str, str], tuple[str, Ticket]] = field(default_factory=dict)
    leaderships: dict[str, Leadership] = field(default_factory=dict)
    digest_entries: dict[str, DigestEntry] = field(default_factory=dict)
    pending_actions: dict[str, PendingAction] = field(default_factory=dict)
    escalations: dict[str, Escalation] = field(default_factory=dict)

    def clone(self) -> _Tables:
        return _Tables(
            settings=self.settings,
            **{
                f.name: dict(getattr(self, f.name))
                for f in dataclasses.fields(self)
                if f.name != "settings"
            },
        )


_ATOMS = (str, int, float, bool, type(None), datetime, enum.Enum)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _c(value: _T) -> _T:
    """A deep copy of a record (dataclasses of JSON-like values), much faster than deepcopy."""
    return cast(_T, _copy(value))


def _copy(value: Any) -> Any:
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    cls = type(value)
    names = _FIELDS.get(cls)
    if names is None:
        if not dataclasses.is_dataclass(value):
            return copy.deepcopy(value)
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(value))
    new = object.__new__(cls)
    for name in names:
        # object.__setattr__: frozen dataclasses are copied too.
        object.__setattr__(new, name, _copy(getattr(value, name)))
    return new


class MemoryStore:
    """The storage port over dictionaries (see the module docstring)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._tables = _Tables()
        self._write_lock = asyncio.Lock()

    async def close(self) -> None:
        """Nothing to release (mirrors ``SqlStore.close``)."""

    @asynccontextmanager
    async def read(self) -> AsyncIterator[MemoryTx]:
        yield MemoryTx(self._tables, self.clock.now(), None, writable=False)

    @asynccontextmanager
    async def write(self, coordinator_id: str | None = None) -> AsyncIterator[MemoryTx]:
        async with self._write_lock:
            tx = MemoryTx(self._tables.clone(), self.clock.now(), None, writable=True)
            if coordinator_id is not None:
                tx.coordinator = await tx.get_coordinator(coordinator_id)
            yield tx
            # Reached only when the body returned: commit by swapping in the new state.
            tx.closed = True
            self._tables = tx.tables


class MemoryTx:
    """One transaction over a snapshot: the Reader and Tx ports of the domain."""

    def __init__(
        self, tables: _Tables, now: datetime, coordinator: Coordinator | None, *, writable: bool
    ) -> None:
        self.tables = tables
        self.now = now
        self.coordinator = coordinator
        self.writable = writable
        self.closed = False

    def _w(self) -> _Tables:
        if not self.writable:
            raise ReadOnlyViolation("write through a read transaction")
        if self.closed:
            raise ReadOnlyViolation("write after the transaction committed")
        return self.tables

    # -------------------------------------------------------------- settings and auth

    def _ensure_settings(self) -> _Settings:
        t = self._w()
        if t.settings is None:
            t.settings = _Settings(enabled=True, update_time=self.now, version=1)
        return t.settings

    async def platform_enabled(self) -> bool:
        s = self.tables.settings
        return True if s is None else s.enabled

    async def settings_row(self) -> tuple[bool, datetime, int]:
        s = self.tables.settings
        if s is None:
            return True, self.now, 0
        return s.enabled, s.update_time, s.version

    async def set_platform_enabled(self, enabled: bool, when: datetime) -> None:
        current = self._ensure_settings()
        self._w().settings = _Settings(enabled, when, current.version + 1)

    async def find_credential(self, secret_hash: str) -> Credential | None:
        for token in self.tables.tokens.values():
            if token.secret_hash == secret_hash:
                return Credential(
                    "user_token",
                    token.token_id,
                    token.user_id,
                    token.expire_time,
                    token.revoke_time,
                )
        for key in self.tables.work_keys.values():
            if key.secret_hash == secret_hash:
                return Credential(
                    "work_key", key.key_id, key.key_id, key.expire_time, key.revoke_time
                )
        return None

    async def get_user(self, user_id: str) -> UserRecord | None:
        return self.tables.users.get(user_id)

    async def find_user_by_email(self, email: str) -> UserRecord | None:
        return next((u for u in self.tables.users.values() if u.email == email), None)

    async def list_users(self, after_id: str, limit: int) -> list[UserRecord]:
        return sorted(
            (u for u in self.tables.users.values() if u.user_id > after_id),
            key=lambda u: u.user_id,
        )[:limit]

    async def insert_user(self, user: UserRecord) -> None:
        t = self._w()
        if user.user_id in t.users or any(u.email == user.email for u in t.users.values()):
            raise AlreadyExists("conflicts with an existing record")
        t.users[user.user_id] = user

    async def user_roles(self, user_id: str) -> dict[str, str]:
        return {
            slug: role for (slug, uid), (role, _) in self.tables.members.items() if uid == user_id
        }

    async def set_member(self, org_slug: str, user_id: str, role: str, when: datetime) -> None:
        t = self._w()
        existing = t.members.get((org_slug, user_id))
        t.members[(org_slug, user_id)] = (role, existing[1] if existing else when)

    async def insert_user_token(
        self,
        token_id: str,
        user_id: str,
        display_name: str,
        secret_hash: str,
        create_time: datetime,
        expire_time: datetime | None,
    ) -> None:
        t = self._w()
        if token_id in t.tokens or self._hash_taken(secret_hash):
            raise AlreadyExists("conflicts with an existing record")
        t.tokens[token_id] = _TokenRow(
            token_id, user_id, display_name, secret_hash, create_time, expire_time
        )

    def _hash_taken(self, secret_hash: str) -> bool:
        return any(r.secret_hash == secret_hash for r in self.tables.tokens.values()) or any(
            k.secret_hash == secret_hash for k in self.tables.work_keys.values()
        )

    async def get_work_key(self, key_id: str) -> WorkKeyRecord | None:
        return self.tables.work_keys.get(key_id)

    async def list_work_keys(self, org_slug: str, after_id: str, limit: int) -> list[WorkKeyRecord]:
        keys = [
            k
            for k in self.tables.work_keys.values()
            if k.key_id > after_id and (not org_slug or k.org_slug == org_slug)
        ]
        return sorted(keys, key=lambda k: k.key_id)[:limit]

    async def insert_work_key(self, key: WorkKeyRecord) -> None:
        t = self._w()
        if key.key_id in t.work_keys or any(
            k.secret_hash == key.secret_hash for k in t.work_keys.values()
        ):
            raise AlreadyExists("conflicts with an existing record")
        t.work_keys[key.key_id] = key

    async def revoke_work_key(self, key_id: str, when: datetime) -> None:
        t = self._w()
        key = t.work_keys.get(key_id)
        if key is not None:
            t.work_keys[key_id] = dataclasses.replace(key, revoke_time=when)

    async def get_org(self, slug: str) -> OrgRecord | None:
        return self.tables.orgs.get(slug)

    async def list_orgs(self, after_slug: str, limit: int) -> list[OrgRecord]:
        return sorted(
            (o for o in self.tables.orgs.values() if o.slug > after_slug), key=lambda o: o.slug
        )[:limit]

    async def insert_org(self, org: OrgRecord) -> None:
        t = self._w()
        if org.slug in t.orgs:
            raise AlreadyExists("conflicts with an existing record")
        t.orgs[org.slug] = org

    # -------------------------------------------------------------- coordinators and events

    async def get_coordinator(self, coordinator_id: str) -> Coordinator | None:
        row = self.tables.coordinators.get(coordinator_id)
        return _c(row.coordinator) if row else None

    async def list_coordinators(
        self, after_id: str, limit: int, org_slugs: Sequence[str] | None
    ) -> list[Coordinator]:
        rows = [
            r.coordinator
            for cid, r in sorted(self.tables.coordinators.items())
            if cid > after_id and (org_slugs is None or r.coordinator.org_slug in org_slugs)
        ]
        return [_c(c) for c in rows[:limit]]

    async def find_coordinator_by_request(self, request_id: str) -> Coordinator | None:
        for row in self.tables.coordinators.values():
            if row.request_id == request_id:
                return _c(row.coordinator)
        return None

    async def insert_coordinator(self, coordinator: Coordinator, request_id: str) -> None:
        self._ensure_settings()
        t = self._w()
        if coordinator.coordinator_id in t.coordinators:
            raise AlreadyExists("conflicts with an existing record")
        t.coordinators[coordinator.coordinator_id] = _CoordinatorRow(_c(coordinator), request_id, 0)

    async def update_coordinator(self, coordinator: Coordinator) -> None:
        t = self._w()
        row = t.coordinators.get(coordinator.coordinator_id)
        if row is None:
            return
        # Like the SQL UPDATE: the revision, request id and item counter are not touched here.
        stored = dataclasses.replace(
            row.coordinator,
            display_name=coordinator.display_name,
            enabled=coordinator.enabled,
            config=_c(coordinator.config),
            config_version=coordinator.config_version,
            update_time=coordinator.update_time,
        )
        t.coordinators[coordinator.coordinator_id] = dataclasses.replace(row, coordinator=stored)

    async def append(self, coordinator: Coordinator, events: Sequence[NewEvent], actor: str) -> int:
        t = self._w()
        cid = coordinator.coordinator_id
        base = coordinator.revision
        existing = t.events.get(cid, [])
        new = [
            Event(
                coordinator_id=cid,
                revision=base + offset + 1,
                type=e.type,
                time=self.now,
                lane_id=e.lane_id,
                item_id=e.item_id,
                lease_id=e.lease_id,
                actor=actor,
                data=_c(e.data),
            )
            for offset, e in enumerate(events)
        ]
        taken = {e.revision for e in existing}
        if any(e.revision in taken for e in new):
            raise AlreadyExists("conflicts with an existing record")
        t.events[cid] = sorted([*existing, *new], key=lambda e: e.revision)
        revision = base + len(new)
        row = t.coordinators.get(cid)
        if row is not None:
            t.coordinators[cid] = dataclasses.replace(
                row, coordinator=dataclasses.replace(row.coordinator, revision=revision)
            )
        return revision

    async def list_events(
        self, coordinator_id: str, since_revision: int, limit: int, lane_id: str, item_id: str
    ) -> list[Event]:
        found = [
            e
            for e in self.tables.events.get(coordinator_id, [])
            if e.revision > since_revision
            and (not lane_id or e.lane_id == lane_id)
            and (not item_id or e.item_id == item_id)
        ]
        return [_c(e) for e in found[:limit]]

    # -------------------------------------------------------------- lanes

    async def get_lane(self, lane_id: str) -> Lane | None:
        lane = self.tables.lanes.get(lane_id)
        return _c(lane) if lane else None

    async def find_lane_by_request(self, coordinator_id: str, request_id: str) -> Lane | None:
        for lane in self.tables.lanes.values():
            if lane.coordinator_id == coordinator_id and lane.request_id == request_id:
                return _c(lane)
        return None

    async def list_lanes(
        self,
        coordinator_id: str,
        state: LaneState | None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Lane]:
        lanes = [
            lane
            for lane in self.tables.lanes.values()
            if lane.coordinator_id == coordinator_id
            and (state is None or lane.state == state)
            # Newest first: continue strictly below the last (create_time, lane_id) seen.
            and (after is None or (lane.create_time, lane.lane_id) < after)
        ]
        lanes.sort(key=lambda lane: (lane.create_time, lane.lane_id), reverse=True)
        return [_c(lane) for lane in lanes[:limit]]

    async def insert_lane(self, lane: Lane) -> None:
        t = self._w()
        if lane.lane_id in t.lanes or (
            lane.request_id
            and any(
                other.coordinator_id == lane.coordinator_id and other.request_id == lane.request_id
                for other in t.lanes.values()
            )
        ):
            raise AlreadyExists("conflicts with an existing record")
        t.lanes[lane.lane_id] = _c(lane)

    async def update_lane(self, lane: Lane) -> None:
        t = self._w()
        lane.version += 1
        if lane.lane_id in t.lanes:
            t.lanes[lane.lane_id] = _c(lane)

    async def lane_blockers(self, lane_ids: Sequence[str]) -> list[Blocker]:
        wanted = set(lane_ids)
        found = [b for _, b in self.tables.blockers.values() if b.lane_id in wanted]
        found.sort(key=lambda b: (b.create_time, b.blocker_id))
        return [_c(b) for b in found]

    async def insert_blocker(self, coordinator_id: str, blocker: Blocker) -> None:
        t = self._w()
        if blocker.blocker_id in t.blockers:
            raise AlreadyExists("conflicts with an existing record")
        t.blockers[blocker.blocker_id] = (coordinator_id, _c(blocker))

    async def update_blocker(self, blocker: Blocker) -> None:
        t = self._w()
        row = t.blockers.get(blocker.blocker_id)
        if row is not None:
            stored = dataclasses.replace(
                row[1], open=blocker.open, resolve_time=blocker.resolve_time
            )
            t.blockers[blocker.blocker_id] = (row[0], stored)

    async def lane_tickets(self, lane_ids: Sequence[str]) -> list[Ticket]:
        wanted = set(lane_ids)
        found = [tk for _, tk in self.tables.tickets.values() if tk.lane_id in wanted]
        found.sort(key=lambda tk: (tk.key, tk.tracker, tk.lane_id))
        return [_c(tk) for tk in found]

    async def insert_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        t = self._w()
        pk = (ticket.lane_id, ticket.tracker, ticket.key)
        if pk in t.tickets:
            raise AlreadyExists("conflicts with an existing record")
        t.tickets[pk] = (coordinator_id, _c(ticket))

    # -------------------------------------------------------------- items

    async def next_item_seq(self, count: int) -> int:
        assert self.coordinator is not None
        t = self._w()
        cid = self.coordinator.coordinator_id
        row = t.coordinators[cid]
        start = row.item_seq + 1
        t.coordinators[cid] = dataclasses.replace(row, item_seq=start + count - 1)
        return start

    async def get_item(self, item_id: str) -> Item | None:
        item = self.tables.items.get(item_id)
        return _c(item) if item else None

    async def items_by_ids(self, item_ids: Sequence[str]) -> list[Item]:
        return [_c(self.tables.items[i]) for i in sorted(set(item_ids)) if i in self.tables.items]

    async def lane_items(self, lane_ids: Sequence[str]) -> list[Item]:
        wanted = set(lane_ids)
        found = [i for i in self.tables.items.values() if i.lane_id in wanted]
        found.sort(key=lambda i: (i.seq, i.item_id))
        return [_c(i) for i in found]

    async def lane_item_states(self, lane_id: str) -> dict[str, ItemState]:
        return {i.key: i.state for i in self.tables.items.values() if i.lane_id == lane_id}

    async def waiting_items(self, lane_id: str) -> list[Item]:
        found = [
            i
            for i in self.tables.items.values()
            if i.lane_id == lane_id and i.state == ItemState.WAITING
        ]
        found.sort(key=lambda i: (i.seq, i.item_id))
        return [_c(i) for i in found]

    async def insert_items(self, items: Sequence[Item]) -> None:
        t = self._w()
        for item in items:
            if item.item_id in t.items or any(
                other.lane_id == item.lane_id and other.key == item.key
                for other in t.items.values()
            ):
                raise AlreadyExists("conflicts with an existing record")
            if item.lane_id not in t.lanes:
                raise AlreadyExists(f"item {item.item_id} names no stored lane {item.lane_id}")
            t.items[item.item_id] = _c(item)

    async def update_items(self, items: Sequence[Item]) -> None:
        t = self._w()
        for item in items:
            if item.item_id in t.items:
                t.items[item.item_id] = _c(item)

    def _claimable(self, item: Item, coordinator_id: str, now: datetime) -> bool:
        return (
            item.coordinator_id == coordinator_id
            and item.state == ItemState.QUEUED
            and not item.held
            and (item.not_before is None or item.not_before <= now)
        )

    async def claim_candidates(
        self,
        coordinator_id: str,
        worker_class: str,
        now: datetime,
        after: tuple[int, int] | None,
        limit: int,
    ) -> list[Item]:
        found = [
            i
            for i in self.tables.items.values()
            if self._claimable(i, coordinator_id, now)
            and i.worker_class == worker_class
            and (
                after is None
                or i.priority < after[0]
                or (i.priority == after[0] and i.seq > after[1])
            )
        ]
        found.sort(key=lambda i: (-i.priority, i.seq))
        return [_c(i) for i in found[:limit]]

    async def has_ready(self, coordinator_id: str, worker_class: str, now: datetime) -> bool:
        return any(
            self._claimable(i, coordinator_id, now) and i.worker_class == worker_class
            for i in self.tables.items.values()
        )

    async def count_ready(self, coordinator_id: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.tables.items.values():
            if item.coordinator_id == coordinator_id and item.state == ItemState.QUEUED:
                counts[item.worker_class] = counts.get(item.worker_class, 0) + 1
        return counts

    async def next_not_before(
        self, coordinator_id: str, worker_class: str, now: datetime
    ) -> datetime | None:
        times = [
            i.not_before
            for i in self.tables.items.values()
            if i.coordinator_id == coordinator_id
            and i.worker_class == worker_class
            and i.state == ItemState.QUEUED
            and i.not_before is not None
            and i.not_before > now
        ]
        return min(times) if times else None

    # -------------------------------------------------------------- attempts

    async def get_attempt(self, lease_id: str) -> Attempt | None:
        attempt = self.tables.attempts.get(lease_id)
        return _c(attempt) if attempt else None

    async def get_attempt_for_update(self, lease_id: str) -> Attempt | None:
        # Write transactions are serialised; no row lock needed (as in the SQL store).
        return await self.get_attempt(lease_id)

    async def item_attempts(self, item_ids: Sequence[str]) -> list[Attempt]:
        wanted = set(item_ids)
        found = [a for a in self.tables.attempts.values() if a.item_id in wanted]
        found.sort(key=lambda a: (a.item_id, a.attempt))
        return [_c(a) for a in found]

    async def live_attempts(self, coordinator_id: str, worker_class: str | None) -> list[Attempt]:
        found = [
            a
            for a in self.tables.attempts.values()
            if a.coordinator_id == coordinator_id
            and a.status in LIVE_ATTEMPT_STATUSES
            and (worker_class is None or a.worker_class == worker_class)
        ]
        found.sort(key=lambda a: (a.create_time, a.lease_id))
        return [_c(a) for a in found]

    async def live_exclusive_holders(
        self, coordinator_id: str, keys: Sequence[str]
    ) -> dict[str, str]:
        holds = self.tables.holds
        return {k: holds[(coordinator_id, k)] for k in keys if (coordinator_id, k) in holds}

    def _check_one_live_per_item(self, attempt: Attempt) -> None:
        """The partial unique index ``uq_attempts_one_live_per_item``."""
        if attempt.status not in LIVE_ATTEMPT_STATUSES:
            return
        for other in self.tables.attempts.values():
            if (
                other.item_id == attempt.item_id
                and other.lease_id != attempt.lease_id
                and other.status in LIVE_ATTEMPT_STATUSES
            ):
                raise AlreadyExists(
                    f"item {attempt.item_id} already has the live attempt {other.lease_id} "
                    f"(invariant: at most one live attempt per item)"
                )

    async def insert_attempts(self, attempts: Sequence[Attempt]) -> None:
        t = self._w()
        for attempt in attempts:
            if attempt.lease_id in t.attempts:
                raise AlreadyExists("conflicts with an existing record")
            if attempt.item_id not in t.items:
                raise AlreadyExists(f"attempt {attempt.lease_id} names no stored item")
            self._check_one_live_per_item(attempt)
            t.attempts[attempt.lease_id] = _c(attempt)
        for attempt in attempts:
            for key in _hold_keys(attempt):
                pk = (attempt.coordinator_id, key)
                if pk in t.holds:
                    raise AlreadyExists(
                        f"exclusive key {key!r} is already held by lease {t.holds[pk]} "
                        f"(invariant: one live attempt per exclusive key)"
                    )
                t.holds[pk] = attempt.lease_id

    async def update_attempts(self, attempts: Sequence[Attempt]) -> None:
        t = self._w()
        for attempt in attempts:
            if attempt.lease_id not in t.attempts:
                continue
            self._check_one_live_per_item(attempt)
            t.attempts[attempt.lease_id] = _c(attempt)
        ended = {a.lease_id for a in attempts if a.status not in LIVE_ATTEMPT_STATUSES}
        if ended:
            t.holds = {pk: lease for pk, lease in t.holds.items() if lease not in ended}

    async def expired_attempts(
        self, coordinator_id: str, now: datetime, limit: int, skip_items: Sequence[str]
    ) -> list[Attempt]:
        skip = set(skip_items)
        found = [
            a
            for a in self.tables.attempts.values()
            if a.coordinator_id == coordinator_id
            and a.status in LIVE_ATTEMPT_STATUSES
            and a.lease_expire_time <= now
            and a.item_id not in skip
        ]
        found.sort(key=lambda a: (a.lease_expire_time, a.lease_id))
        return [_c(a) for a in found[:limit]]

    # -------------------------------------------------------------- workers

    async def get_worker(self, coordinator_id: str, worker_id: str) -> Worker | None:
        worker = self.tables.workers.get((coordinator_id, worker_id))
        return _c(worker) if worker else None

    async def list_workers(self, coordinator_id: str, after_id: str, limit: int) -> list[Worker]:
        found = [
            w
            for (cid, wid), w in self.tables.workers.items()
            if cid == coordinator_id and wid > after_id
        ]
        found.sort(key=lambda w: w.worker_id)
        return [_c(w) for w in found[:limit]]

    async def count_workers(self, coordinator_id: str) -> int:
        return sum(1 for cid, _ in self.tables.workers if cid == coordinator_id)

    async def upsert_worker(self, worker: Worker) -> bool:
        t = self._w()
        pk = (worker.coordinator_id, worker.worker_id)
        existing = t.workers.get(pk)
        stored = _c(worker)
        if existing is not None:
            stored.create_time = existing.create_time
        t.workers[pk] = stored
        return existing is None

    async def touch_worker_ask(
        self, coordinator_id: str, worker_id: str, worker_class: str, principal: str
    ) -> None:
        t = self._w()
        pk = (coordinator_id, worker_id)
        existing = t.workers.get(pk)
        if existing is None:
            t.workers[pk] = Worker(
                coordinator_id=coordinator_id,
                worker_id=worker_id,
                worker_class=worker_class,
                create_time=self.now,
                observe_time=self.now,
                principal=principal,
                last_ask_time=self.now,
            )
        else:
            t.workers[pk] = dataclasses.replace(
                existing, last_ask_time=self.now, observe_time=self.now
            )

    async def evict_workers(self, coordinator_id: str, unseen_before: datetime) -> list[str]:
        t = self._w()
        busy = {
            a.worker_id
            for a in t.attempts.values()
            if a.coordinator_id == coordinator_id and a.status in LIVE_ATTEMPT_STATUSES
        }
        ids = sorted(
            wid
            for (cid, wid), w in t.workers.items()
            if cid == coordinator_id and w.observe_time < unseen_before and wid not in busy
        )
        for wid in ids:
            del t.workers[(coordinator_id, wid)]
        return ids

    # -------------------------------------------------------------- leadership

    async def acquire_leadership(
        self, name: str, holder_id: str, now: datetime, expire_time: datetime
    ) -> Leadership:
        t = self._w()
        row = t.leaderships.get(name)
        if row is None:
            row = Leadership(name, holder_id, expire_time, 1)
            t.leaderships[name] = row
        if row.holder_id == holder_id or row.expire_time <= now:
            term = row.term if row.holder_id == holder_id else row.term + 1
            t.leaderships[name] = Leadership(name, holder_id, expire_time, term)
            return t.leaderships[name]
        return row

    async def release_leadership(self, name: str, holder_id: str) -> Leadership | None:
        t = self._w()
        row = t.leaderships.get(name)
        if row is None:
            return None
        if row.holder_id != holder_id:
            return row
        t.leaderships[name] = Leadership(name, holder_id, self.now, row.term)
        return t.leaderships[name]

    # -------------------------------------------------------------- digests, pending actions

    async def insert_digest_entries(self, entries: Sequence[DigestEntry]) -> None:
        t = self._w()
        for entry in entries:
            if entry.entry_id in t.digest_entries:
                raise AlreadyExists("conflicts with an existing record")
            t.digest_entries[entry.entry_id] = entry

    async def digest_entries(self, coordinator_id: str, day: str) -> list[DigestEntry]:
        found = [
            e
            for e in self.tables.digest_entries.values()
            if e.coordinator_id == coordinator_id and e.day == day
        ]
        return sorted(found, key=lambda e: (e.time, e.entry_id))

    async def insert_pending_actions(self, actions: Sequence[PendingAction]) -> None:
        t = self._w()
        for action in actions:
            if action.action_id in t.pending_actions:
                raise AlreadyExists("conflicts with an existing record")
            t.pending_actions[action.action_id] = _c(action)

    async def update_pending_action(self, action: PendingAction) -> None:
        t = self._w()
        if action.action_id in t.pending_actions:
            t.pending_actions[action.action_id] = _c(action)

    async def get_pending_action(self, action_id: str) -> PendingAction | None:
        action = self.tables.pending_actions.get(action_id)
        return _c(action) if action else None

    async def list_pending_actions(
        self, coordinator_id: str, state: PendingActionState | None, after_id: str, limit: int
    ) -> list[PendingAction]:
        found = [
            a
            for a in self.tables.pending_actions.values()
            if a.coordinator_id == coordinator_id
            and a.action_id > after_id
            and (state is None or a.state == state)
        ]
        found.sort(key=lambda a: a.action_id)
        return [_c(a) for a in found[:limit]]

    async def due_pending_actions(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[PendingAction]:
        found = [
            a
            for a in self.tables.pending_actions.values()
            if a.coordinator_id == coordinator_id
            and a.state == PendingActionState.OPEN
            and (a.next_attempt_time is None or a.next_attempt_time <= now)
        ]
        # SQL orders NULLs last in ascending order on PostgreSQL and first on SQLite; due
        # actions without a time are rare (new ones), so put them first like SQLite.
        found.sort(
            key=lambda a: (a.next_attempt_time is not None, a.next_attempt_time or now, a.action_id)
        )
        return [_c(a) for a in found[:limit]]

    async def update_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        t = self._w()
        pk = (ticket.lane_id, ticket.tracker, ticket.key)
        row = t.tickets.get(pk)
        if row is not None:
            stored = dataclasses.replace(
                row[1], state=ticket.state, observe_time=ticket.observe_time
            )
            t.tickets[pk] = (row[0], stored)

    async def tickets_to_sync(self, coordinator_id: str, limit: int) -> list[Ticket]:
        open_lanes = {LaneState.ACTIVE, LaneState.LIVE}
        found = [
            tk
            for cid, tk in self.tables.tickets.values()
            if cid == coordinator_id
            and tk.lane_id in self.tables.lanes
            and self.tables.lanes[tk.lane_id].state in open_lanes
        ]
        # Never-synced tickets first, then the longest unsynced.
        found.sort(
            key=lambda tk: (tk.observe_time is not None, tk.observe_time or self.now, tk.key)
        )
        return [_c(tk) for tk in found[:limit]]

    # -------------------------------------------------------------- escalations

    async def insert_escalations(self, escalations: Sequence[Escalation]) -> None:
        t = self._w()
        for escalation in escalations:
            if escalation.escalation_id in t.escalations:
                raise AlreadyExists("conflicts with an existing record")
            t.escalations[escalation.escalation_id] = _c(escalation)

    async def open_escalations(self, coordinator_id: str) -> list[Escalation]:
        found = [
            e
            for e in self.tables.escalations.values()
            if e.coordinator_id == coordinator_id and e.open
        ]
        found.sort(key=lambda e: (e.create_time, e.escalation_id))
        return [_c(e) for e in found]

    async def resolve_escalations(
        self, coordinator_id: str, item_ids: Sequence[str], when: datetime
    ) -> None:
        t = self._w()
        wanted = set(item_ids)
        for eid, e in list(t.escalations.items()):
            if e.coordinator_id == coordinator_id and e.open and e.item_id in wanted:
                t.escalations[eid] = dataclasses.replace(e, open=False, resolve_time=when)

    async def escalation_candidates(
        self, coordinator_id: str, now: datetime, ready_before: datetime, limit: int
    ) -> list[Item]:
        escalated = {
            e.item_id
            for e in self.tables.escalations.values()
            if e.coordinator_id == coordinator_id and e.open
        }
        found = [
            i
            for i in self.tables.items.values()
            if self._claimable(i, coordinator_id, now)
            and i.ready_time is not None
            and i.ready_time <= ready_before
            and i.item_id not in escalated
        ]
        found.sort(key=lambda i: (i.ready_time or now, i.item_id))
        return [_c(i) for i in found[:limit]]


def _hold_keys(attempt: Attempt) -> list[str]:
    return [k for k in attempt.exclusive_key.split(",") if k]
