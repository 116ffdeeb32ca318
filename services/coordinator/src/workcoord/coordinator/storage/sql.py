"""The SQL implementation of the storage port, on PostgreSQL (asyncpg) and SQLite (aiosqlite).

One class serves both dialects; the few differences (row locks, upserts, how a write
transaction starts) are handled here and nowhere else. Driver errors are translated into
workcoord errors at this edge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, bindparam, delete, event, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.sql import ColumnElement

from workcoord.coordinator.domain.model import (
    Attempt,
    AttemptStatus,
    Blocker,
    Coordinator,
    CoordinatorConfig,
    DeadLetterReason,
    DigestEntry,
    DigestKind,
    Escalation,
    Event,
    EventType,
    Item,
    ItemKind,
    ItemState,
    Lane,
    LaneState,
    NewEvent,
    OnPass,
    PendingAction,
    PendingActionState,
    RetryPolicy,
    ReviewPolicy,
    Scope,
    Template,
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
from workcoord.kit.errors import AlreadyExists, Code, Internal, WorkcoordError

from . import schema as t
from .tenancy_sql import TenancySql

LIVE = ("LEASED", "RUNNING")


class StorageUnavailable(WorkcoordError):
    """The database cannot be reached or refused the transaction; retry later."""

    code = Code.UNAVAILABLE
    reason = "STORAGE_UNAVAILABLE"
    default_message = "the database is unavailable; retry later"


def normalize_url(url: str) -> str:
    """Pick the async driver for a plain ``postgresql://`` or ``sqlite://`` URL."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    if url.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + url.split("://", 1)[1]
    return url


def make_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    """An async engine for ``url``; SQLite gets WAL, foreign keys and immediate write locks."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_async_engine(url, poolclass=NullPool if ":memory:" not in url else None)
        _configure_sqlite(engine)
        return engine
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        connect_args={"server_settings": {"application_name": "workcoord-coordinator"}},
    )


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's begin event (below) emit BEGIN, so writes can take the lock up front.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A write transaction takes SQLite's write lock at BEGIN: the whole database is then
        # serialised, which is what the per-coordinator row lock gives on PostgreSQL.
        immediate = conn.get_execution_options().get("workcoord_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class SqlStore:
    """Opens read and write transactions over one engine."""

    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock
        self.dialect = engine.dialect.name

    async def close(self) -> None:
        await self.engine.dispose()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[SqlTx]:
        try:
            async with self.engine.connect() as conn:
                if self.dialect == "postgresql":
                    conn = await conn.execution_options(
                        isolation_level="REPEATABLE READ", postgresql_readonly=True
                    )
                async with conn.begin():
                    yield SqlTx(conn, self.dialect, self.clock.now(), None)
        except WorkcoordError:
            raise
        except DBAPIError as exc:
            raise _translate(exc) from exc

    @asynccontextmanager
    async def write(self, coordinator_id: str | None = None) -> AsyncIterator[SqlTx]:
        try:
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(workcoord_write=True)
                async with conn.begin():
                    tx = SqlTx(conn, self.dialect, self.clock.now(), None)
                    if coordinator_id is not None:
                        tx.coordinator = await tx.lock_coordinator(coordinator_id)
                    yield tx
                    await tx.flush()
        except WorkcoordError:
            raise
        except DBAPIError as exc:
            raise _translate(exc) from exc


def _translate(exc: DBAPIError) -> WorkcoordError:
    if isinstance(exc, IntegrityError):
        return AlreadyExists("conflicts with an existing record")
    if isinstance(exc, OperationalError) or exc.connection_invalidated:
        return StorageUnavailable()
    return Internal()


class SqlTx(TenancySql):
    """One transaction: the Reader and Tx ports of the domain (and the tenancy port of
    :mod:`workcoord.coordinator.domain.grants`, from :class:`TenancySql`)."""

    def __init__(
        self, conn: AsyncConnection, dialect: str, now: datetime, coordinator: Coordinator | None
    ) -> None:
        self.conn = conn
        self.dialect = dialect
        self.now = now
        self.coordinator = coordinator
        self._events: list[dict[str, Any]] = []
        self._revisions: dict[str, int] = {}

    # -------------------------------------------------------------- helpers

    async def _rows(self, stmt: Any) -> Sequence[Row[Any]]:
        result = await self.conn.execute(stmt)
        return result.fetchall()

    async def _one(self, stmt: Any) -> Row[Any] | None:
        result = await self.conn.execute(stmt)
        return result.first()

    def _insert(self, table: Any) -> Any:
        return (pg_dialect.insert if self.dialect == "postgresql" else sqlite_dialect.insert)(table)

    # -------------------------------------------------------------- settings and auth

    async def _ensure_settings(self) -> Row[Any]:
        row = await self._one(select(t.platform_settings).where(t.platform_settings.c.id == 1))
        if row is None:
            await self.conn.execute(
                self._insert(t.platform_settings)
                .values(id=1, work_coordinator_enabled=True, version=1, update_time=self.now)
                .on_conflict_do_nothing()
            )
            row = await self._one(select(t.platform_settings).where(t.platform_settings.c.id == 1))
        assert row is not None
        return row

    async def platform_enabled(self) -> bool:
        row = await self._one(
            select(t.platform_settings.c.work_coordinator_enabled).where(
                t.platform_settings.c.id == 1
            )
        )
        return True if row is None else bool(row[0])

    async def settings_row(self) -> tuple[bool, datetime, int]:
        row = await self._one(select(t.platform_settings).where(t.platform_settings.c.id == 1))
        if row is None:
            return True, self.now, 0
        return bool(row.work_coordinator_enabled), row.update_time, int(row.version)

    async def set_platform_enabled(self, enabled: bool, when: datetime) -> None:
        await self._ensure_settings()
        await self.conn.execute(
            update(t.platform_settings)
            .where(t.platform_settings.c.id == 1)
            .values(
                work_coordinator_enabled=enabled,
                version=t.platform_settings.c.version + 1,
                update_time=when,
            )
        )

    async def find_credential(self, secret_hash: str) -> Credential | None:
        row = await self._one(
            select(t.user_tokens).where(t.user_tokens.c.secret_hash == secret_hash)
        )
        if row is not None:
            return Credential(
                "user_token", row.token_id, row.user_id, row.expire_time, row.revoke_time
            )
        row = await self._one(select(t.work_keys).where(t.work_keys.c.secret_hash == secret_hash))
        if row is not None:
            return Credential("work_key", row.key_id, row.key_id, row.expire_time, row.revoke_time)
        return None

    async def get_user(self, user_id: str) -> UserRecord | None:
        row = await self._one(select(t.users).where(t.users.c.user_id == user_id))
        return _user(row) if row else None

    async def find_user_by_email(self, email: str) -> UserRecord | None:
        row = await self._one(select(t.users).where(t.users.c.email == email))
        return _user(row) if row else None

    async def list_users(self, after_id: str, limit: int) -> list[UserRecord]:
        rows = await self._rows(
            select(t.users)
            .where(t.users.c.user_id > after_id)
            .order_by(t.users.c.user_id)
            .limit(limit)
        )
        return [_user(r) for r in rows]

    async def insert_user(self, user: UserRecord) -> None:
        await self.conn.execute(insert(t.users).values(**dataclasses.asdict(user)))

    async def user_roles(self, user_id: str) -> dict[str, str]:
        rows = await self._rows(
            select(t.org_members.c.org_slug, t.org_members.c.role).where(
                t.org_members.c.user_id == user_id
            )
        )
        return {r.org_slug: r.role for r in rows}

    async def set_member(self, org_slug: str, user_id: str, role: str, when: datetime) -> None:
        stmt = self._insert(t.org_members).values(
            org_slug=org_slug, user_id=user_id, role=role, create_time=when
        )
        await self.conn.execute(
            stmt.on_conflict_do_update(index_elements=["org_slug", "user_id"], set_={"role": role})
        )

    async def insert_user_token(
        self,
        token_id: str,
        user_id: str,
        display_name: str,
        secret_hash: str,
        create_time: datetime,
        expire_time: datetime | None,
    ) -> None:
        await self.conn.execute(
            insert(t.user_tokens).values(
                token_id=token_id,
                user_id=user_id,
                display_name=display_name,
                secret_hash=secret_hash,
                create_time=create_time,
                expire_time=expire_time,
            )
        )

    async def get_work_key(self, key_id: str) -> WorkKeyRecord | None:
        row = await self._one(select(t.work_keys).where(t.work_keys.c.key_id == key_id))
        return _work_key(row) if row else None

    async def list_work_keys(self, org_slug: str, after_id: str, limit: int) -> list[WorkKeyRecord]:
        stmt = select(t.work_keys).where(t.work_keys.c.key_id > after_id)
        if org_slug:
            stmt = stmt.where(t.work_keys.c.org_slug == org_slug)
        rows = await self._rows(stmt.order_by(t.work_keys.c.key_id).limit(limit))
        return [_work_key(r) for r in rows]

    async def insert_work_key(self, key: WorkKeyRecord) -> None:
        values = dataclasses.asdict(key)
        values["coordinator_ids"] = list(key.coordinator_ids)
        values["capabilities"] = list(key.capabilities)
        await self.conn.execute(insert(t.work_keys).values(**values))

    async def revoke_work_key(self, key_id: str, when: datetime) -> None:
        await self.conn.execute(
            update(t.work_keys).where(t.work_keys.c.key_id == key_id).values(revoke_time=when)
        )

    async def get_org(self, slug: str) -> OrgRecord | None:
        row = await self._one(select(t.orgs).where(t.orgs.c.slug == slug))
        return OrgRecord(row.slug, row.display_name, row.create_time) if row else None

    async def list_orgs(self, after_slug: str, limit: int) -> list[OrgRecord]:
        rows = await self._rows(
            select(t.orgs).where(t.orgs.c.slug > after_slug).order_by(t.orgs.c.slug).limit(limit)
        )
        return [OrgRecord(r.slug, r.display_name, r.create_time) for r in rows]

    async def insert_org(self, org: OrgRecord) -> None:
        await self.conn.execute(insert(t.orgs).values(**dataclasses.asdict(org)))

    # -------------------------------------------------------------- coordinators and events

    async def lock_coordinator(self, coordinator_id: str) -> Coordinator | None:
        stmt = select(t.work_coordinators).where(
            t.work_coordinators.c.coordinator_id == coordinator_id
        )
        if self.dialect == "postgresql":
            # Every change to a work coordinator holds its row: writers are serialised, so
            # capacity counts see every committed claim and revisions stay gap-free.
            stmt = stmt.with_for_update()
        row = await self._one(stmt)
        return _coordinator(row) if row else None

    async def get_coordinator(self, coordinator_id: str) -> Coordinator | None:
        row = await self._one(
            select(t.work_coordinators).where(
                t.work_coordinators.c.coordinator_id == coordinator_id
            )
        )
        return _coordinator(row) if row else None

    async def list_coordinators(
        self, after_id: str, limit: int, org_slugs: Sequence[str] | None
    ) -> list[Coordinator]:
        stmt = select(t.work_coordinators).where(t.work_coordinators.c.coordinator_id > after_id)
        if org_slugs is not None:
            stmt = stmt.where(t.work_coordinators.c.org_slug.in_(list(org_slugs)))
        rows = await self._rows(stmt.order_by(t.work_coordinators.c.coordinator_id).limit(limit))
        return [_coordinator(r) for r in rows]

    async def find_coordinator_by_request(self, request_id: str) -> Coordinator | None:
        row = await self._one(
            select(t.work_coordinators).where(t.work_coordinators.c.request_id == request_id)
        )
        return _coordinator(row) if row else None

    async def insert_coordinator(self, coordinator: Coordinator, request_id: str) -> None:
        await self._ensure_settings()
        await self.conn.execute(
            insert(t.work_coordinators).values(
                coordinator_id=coordinator.coordinator_id,
                scope=coordinator.scope.value,
                org_slug=coordinator.org_slug,
                display_name=coordinator.display_name,
                enabled=coordinator.enabled,
                revision=coordinator.revision,
                config=_config_to_json(coordinator.config),
                config_version=coordinator.config_version,
                request_id=request_id,
                create_time=coordinator.create_time,
                update_time=coordinator.update_time,
                item_seq=0,
            )
        )

    async def update_coordinator(self, coordinator: Coordinator) -> None:
        await self.conn.execute(
            update(t.work_coordinators)
            .where(t.work_coordinators.c.coordinator_id == coordinator.coordinator_id)
            .values(
                display_name=coordinator.display_name,
                enabled=coordinator.enabled,
                config=_config_to_json(coordinator.config),
                config_version=coordinator.config_version,
                update_time=coordinator.update_time,
            )
        )

    async def append(self, coordinator: Coordinator, events: Sequence[NewEvent], actor: str) -> int:
        """Give the events the coordinator's next revisions. The rows are written together at
        the end of the transaction (:meth:`flush`), still before its commit: a group of
        worker writes then inserts its events and moves the counter once, not per write."""
        base = coordinator.revision
        self._events.extend(
            {
                "coordinator_id": coordinator.coordinator_id,
                "revision": base + offset + 1,
                "type": e.type.value,
                "time": self.now,
                "lane_id": e.lane_id,
                "item_id": e.item_id,
                "lease_id": e.lease_id,
                "actor": actor,
                "data": e.data,
            }
            for offset, e in enumerate(events)
        )
        revision = base + len(events)
        self._revisions[coordinator.coordinator_id] = revision
        return revision

    async def flush(self) -> None:
        """Write the events appended so far and each coordinator's new revision."""
        if self._events:
            await self.conn.execute(insert(t.events), self._events)
            self._events = []
        for coordinator_id, revision in self._revisions.items():
            await self.conn.execute(
                update(t.work_coordinators)
                .where(t.work_coordinators.c.coordinator_id == coordinator_id)
                .values(revision=revision)
            )
        self._revisions = {}

    async def list_events(
        self, coordinator_id: str, since_revision: int, limit: int, lane_id: str, item_id: str
    ) -> list[Event]:
        c = t.events.c
        stmt = select(t.events).where(
            c.coordinator_id == coordinator_id, c.revision > since_revision
        )
        if lane_id:
            stmt = stmt.where(c.lane_id == lane_id)
        if item_id:
            stmt = stmt.where(c.item_id == item_id)
        rows = await self._rows(stmt.order_by(c.revision).limit(limit))
        return [
            Event(
                coordinator_id=r.coordinator_id,
                revision=int(r.revision),
                type=EventType(r.type),
                time=r.time,
                lane_id=r.lane_id,
                item_id=r.item_id,
                lease_id=r.lease_id,
                actor=r.actor,
                data=dict(r.data or {}),
            )
            for r in rows
        ]

    # -------------------------------------------------------------- lanes

    async def get_lane(self, lane_id: str) -> Lane | None:
        row = await self._one(select(t.lanes).where(t.lanes.c.lane_id == lane_id))
        return _lane(row) if row else None

    async def find_lane_by_request(self, coordinator_id: str, request_id: str) -> Lane | None:
        row = await self._one(
            select(t.lanes).where(
                t.lanes.c.coordinator_id == coordinator_id, t.lanes.c.request_id == request_id
            )
        )
        return _lane(row) if row else None

    async def list_lanes(
        self,
        coordinator_id: str,
        state: LaneState | None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Lane]:
        c = t.lanes.c
        stmt = select(t.lanes).where(c.coordinator_id == coordinator_id)
        if state is not None:
            stmt = stmt.where(c.state == state.value)
        if after is not None:
            # Newest first: continue strictly below the last (create_time, lane_id) seen.
            stmt = stmt.where(
                or_(c.create_time < after[0], and_(c.create_time == after[0], c.lane_id < after[1]))
            )
        rows = await self._rows(stmt.order_by(c.create_time.desc(), c.lane_id.desc()).limit(limit))
        return [_lane(r) for r in rows]

    async def insert_lane(self, lane: Lane) -> None:
        await self.conn.execute(insert(t.lanes).values(**_lane_values(lane)))

    async def update_lane(self, lane: Lane) -> None:
        lane.version += 1
        values = _lane_values(lane)
        del values["lane_id"]
        await self.conn.execute(
            update(t.lanes).where(t.lanes.c.lane_id == lane.lane_id).values(**values)
        )

    async def lane_blockers(self, lane_ids: Sequence[str]) -> list[Blocker]:
        rows = await self._rows(
            select(t.blockers)
            .where(t.blockers.c.lane_id.in_(list(lane_ids)))
            .order_by(t.blockers.c.create_time, t.blockers.c.blocker_id)
        )
        return [
            Blocker(r.blocker_id, r.lane_id, r.reason, bool(r.open), r.create_time, r.resolve_time)
            for r in rows
        ]

    async def insert_blocker(self, coordinator_id: str, blocker: Blocker) -> None:
        await self.conn.execute(
            insert(t.blockers).values(coordinator_id=coordinator_id, **dataclasses.asdict(blocker))
        )

    async def update_blocker(self, blocker: Blocker) -> None:
        await self.conn.execute(
            update(t.blockers)
            .where(t.blockers.c.blocker_id == blocker.blocker_id)
            .values(open=blocker.open, resolve_time=blocker.resolve_time)
        )

    async def lane_tickets(self, lane_ids: Sequence[str]) -> list[Ticket]:
        rows = await self._rows(
            select(t.tickets)
            .where(t.tickets.c.lane_id.in_(list(lane_ids)))
            .order_by(t.tickets.c.key)
        )
        return [Ticket(r.lane_id, r.tracker, r.key, r.url, r.state, r.observe_time) for r in rows]

    async def insert_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        await self.conn.execute(
            insert(t.tickets).values(coordinator_id=coordinator_id, **dataclasses.asdict(ticket))
        )

    # -------------------------------------------------------------- items

    async def next_item_seq(self, count: int) -> int:
        assert self.coordinator is not None
        cid = self.coordinator.coordinator_id
        row = await self._one(
            select(t.work_coordinators.c.item_seq).where(
                t.work_coordinators.c.coordinator_id == cid
            )
        )
        start = int(row[0] if row else 0) + 1
        await self.conn.execute(
            update(t.work_coordinators)
            .where(t.work_coordinators.c.coordinator_id == cid)
            .values(item_seq=start + count - 1)
        )
        return start

    async def get_item(self, item_id: str) -> Item | None:
        row = await self._one(select(t.items).where(t.items.c.item_id == item_id))
        return _item(row) if row else None

    async def items_by_ids(self, item_ids: Sequence[str]) -> list[Item]:
        if not item_ids:
            return []
        rows = await self._rows(select(t.items).where(t.items.c.item_id.in_(list(item_ids))))
        return [_item(r) for r in rows]

    async def lane_items(self, lane_ids: Sequence[str]) -> list[Item]:
        if not lane_ids:
            return []
        rows = await self._rows(
            select(t.items).where(t.items.c.lane_id.in_(list(lane_ids))).order_by(t.items.c.seq)
        )
        return [_item(r) for r in rows]

    async def lane_item_states(self, lane_id: str) -> dict[str, ItemState]:
        c = t.items.c
        rows = await self._rows(select(c.key, c.state).where(c.lane_id == lane_id))
        return {r.key: ItemState(r.state) for r in rows}

    async def waiting_items(self, lane_id: str) -> list[Item]:
        c = t.items.c
        rows = await self._rows(
            select(t.items)
            .where(c.lane_id == lane_id, c.state == ItemState.WAITING.value)
            .order_by(c.seq)
        )
        return [_item(r) for r in rows]

    async def insert_items(self, items: Sequence[Item]) -> None:
        if items:
            await self.conn.execute(insert(t.items), [_item_values(i) for i in items])

    async def update_items(self, items: Sequence[Item]) -> None:
        if not items:
            return
        rows = [_item_values(i) for i in items]
        for row in rows:
            row["b_item_id"] = row.pop("item_id")
        columns = {name: _bind(name) for name in rows[0] if name != "b_item_id"}
        stmt = update(t.items).where(t.items.c.item_id == _bind("b_item_id")).values(**columns)
        await self.conn.execute(stmt, rows)

    async def claim_candidates(
        self,
        coordinator_id: str,
        worker_class: str,
        now: datetime,
        after: tuple[int, int] | None,
        limit: int,
    ) -> list[Item]:
        c = t.items.c
        stmt = select(t.items).where(
            c.coordinator_id == coordinator_id,
            c.worker_class == worker_class,
            c.state == ItemState.QUEUED.value,
            c.held.is_(False),
            or_(c.not_before.is_(None), c.not_before <= now),
        )
        if after is not None:
            stmt = stmt.where(
                or_(c.priority < after[0], and_(c.priority == after[0], c.seq > after[1]))
            )
        stmt = stmt.order_by(c.priority.desc(), c.seq).limit(limit)
        if self.dialect == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        return [_item(r) for r in await self._rows(stmt)]

    def _ready_filter(self, coordinator_id: str, now: datetime) -> list[ColumnElement[bool]]:
        c = t.items.c
        return [
            c.coordinator_id == coordinator_id,
            c.state == ItemState.QUEUED.value,
            c.held.is_(False),
            or_(c.not_before.is_(None), c.not_before <= now),
        ]

    async def has_ready(self, coordinator_id: str, worker_class: str, now: datetime) -> bool:
        stmt = (
            select(t.items.c.item_id)
            .where(*self._ready_filter(coordinator_id, now), t.items.c.worker_class == worker_class)
            .limit(1)
        )
        return (await self._one(stmt)) is not None

    async def count_ready(self, coordinator_id: str) -> dict[str, int]:
        c = t.items.c
        rows = await self._rows(
            select(c.worker_class, func.count().label("n"))
            .where(c.coordinator_id == coordinator_id, c.state == ItemState.QUEUED.value)
            .group_by(c.worker_class)
        )
        return {str(r.worker_class): int(r.n) for r in rows}

    async def next_not_before(
        self, coordinator_id: str, worker_class: str, now: datetime
    ) -> datetime | None:
        c = t.items.c
        row = await self._one(
            select(func.min(c.not_before)).where(
                c.coordinator_id == coordinator_id,
                c.worker_class == worker_class,
                c.state == ItemState.QUEUED.value,
                c.not_before > now,
            )
        )
        value = row[0] if row else None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if isinstance(value, datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    # -------------------------------------------------------------- attempts

    async def get_attempt(self, lease_id: str) -> Attempt | None:
        row = await self._one(select(t.attempts).where(t.attempts.c.lease_id == lease_id))
        return _attempt(row) if row else None

    async def get_attempt_for_update(self, lease_id: str) -> Attempt | None:
        # The coordinator lock already serialises writers; no row lock needed.
        return await self.get_attempt(lease_id)

    async def item_attempts(self, item_ids: Sequence[str]) -> list[Attempt]:
        if not item_ids:
            return []
        rows = await self._rows(
            select(t.attempts)
            .where(t.attempts.c.item_id.in_(list(item_ids)))
            .order_by(t.attempts.c.item_id, t.attempts.c.attempt)
        )
        return [_attempt(r) for r in rows]

    async def live_attempts(self, coordinator_id: str, worker_class: str | None) -> list[Attempt]:
        c = t.attempts.c
        stmt = select(t.attempts).where(c.coordinator_id == coordinator_id, c.status.in_(LIVE))
        if worker_class is not None:
            stmt = stmt.where(c.worker_class == worker_class)
        rows = await self._rows(stmt.order_by(c.create_time, c.lease_id))
        return [_attempt(r) for r in rows]

    async def live_exclusive_holders(
        self, coordinator_id: str, keys: Sequence[str]
    ) -> dict[str, str]:
        rows = await self._rows(
            select(t.exclusive_holds.c.key, t.exclusive_holds.c.lease_id).where(
                t.exclusive_holds.c.coordinator_id == coordinator_id,
                t.exclusive_holds.c.key.in_(list(keys)),
            )
        )
        return {r.key: r.lease_id for r in rows}

    async def insert_attempts(self, attempts: Sequence[Attempt]) -> None:
        if not attempts:
            return
        await self.conn.execute(insert(t.attempts), [_attempt_values(a) for a in attempts])
        holds = [
            {"coordinator_id": a.coordinator_id, "key": key, "lease_id": a.lease_id}
            for a in attempts
            for key in _hold_keys(a)
        ]
        if holds:
            await self.conn.execute(insert(t.exclusive_holds), holds)

    async def update_attempts(self, attempts: Sequence[Attempt]) -> None:
        if not attempts:
            return
        rows = [_attempt_values(a) for a in attempts]
        for row in rows:
            row["b_lease_id"] = row.pop("lease_id")
        columns = {name: _bind(name) for name in rows[0] if name != "b_lease_id"}
        stmt = (
            update(t.attempts).where(t.attempts.c.lease_id == _bind("b_lease_id")).values(**columns)
        )
        await self.conn.execute(stmt, rows)
        ended = [a.lease_id for a in attempts if a.status.value not in LIVE and a.exclusive_key]
        if ended:
            await self.conn.execute(
                delete(t.exclusive_holds).where(t.exclusive_holds.c.lease_id.in_(ended))
            )

    async def expired_attempts(
        self, coordinator_id: str, now: datetime, limit: int, skip_items: Sequence[str]
    ) -> list[Attempt]:
        c = t.attempts.c
        stmt = select(t.attempts).where(
            c.coordinator_id == coordinator_id, c.status.in_(LIVE), c.lease_expire_time <= now
        )
        if skip_items:
            stmt = stmt.where(c.item_id.not_in(list(skip_items)))
        rows = await self._rows(stmt.order_by(c.lease_expire_time, c.lease_id).limit(limit))
        return [_attempt(r) for r in rows]

    # -------------------------------------------------------------- workers

    async def get_worker(self, coordinator_id: str, worker_id: str) -> Worker | None:
        row = await self._one(
            select(t.workers).where(
                t.workers.c.coordinator_id == coordinator_id, t.workers.c.worker_id == worker_id
            )
        )
        return _worker(row) if row else None

    async def list_workers(self, coordinator_id: str, after_id: str, limit: int) -> list[Worker]:
        c = t.workers.c
        rows = await self._rows(
            select(t.workers)
            .where(c.coordinator_id == coordinator_id, c.worker_id > after_id)
            .order_by(c.worker_id)
            .limit(limit)
        )
        return [_worker(r) for r in rows]

    async def count_workers(self, coordinator_id: str) -> int:
        row = await self._one(
            select(func.count())
            .select_from(t.workers)
            .where(t.workers.c.coordinator_id == coordinator_id)
        )
        return int(row[0]) if row else 0

    async def upsert_worker(self, worker: Worker) -> bool:
        values = dataclasses.asdict(worker)
        existed = await self.get_worker(worker.coordinator_id, worker.worker_id) is not None
        stmt = self._insert(t.workers).values(**values)
        updates = {
            k: v
            for k, v in values.items()
            if k not in ("coordinator_id", "worker_id", "create_time")
        }
        await self.conn.execute(
            stmt.on_conflict_do_update(index_elements=["coordinator_id", "worker_id"], set_=updates)
        )
        return not existed

    async def touch_worker_ask(
        self, coordinator_id: str, worker_id: str, worker_class: str, principal: str
    ) -> None:
        stmt = self._insert(t.workers).values(
            coordinator_id=coordinator_id,
            worker_id=worker_id,
            worker_class=worker_class,
            principal=principal,
            capabilities=[],
            toolchains={},
            labels={},
            cpu_count=0,
            memory_bytes=0,
            disk_bytes=0,
            create_time=self.now,
            observe_time=self.now,
            last_ask_time=self.now,
        )
        await self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["coordinator_id", "worker_id"],
                set_={"last_ask_time": self.now, "observe_time": self.now},
            )
        )

    async def evict_workers(self, coordinator_id: str, unseen_before: datetime) -> list[str]:
        w = t.workers.c
        live_workers = select(t.attempts.c.worker_id).where(
            t.attempts.c.coordinator_id == coordinator_id, t.attempts.c.status.in_(LIVE)
        )
        rows = await self._rows(
            select(w.worker_id).where(
                w.coordinator_id == coordinator_id,
                w.observe_time < unseen_before,
                w.worker_id.not_in(live_workers),
            )
        )
        ids = [r.worker_id for r in rows]
        if ids:
            await self.conn.execute(
                delete(t.workers).where(w.coordinator_id == coordinator_id, w.worker_id.in_(ids))
            )
        return ids

    # -------------------------------------------------------------- digests, pending actions

    async def insert_digest_entries(self, entries: Sequence[DigestEntry]) -> None:
        if entries:
            rows = []
            for entry in entries:
                row = dataclasses.asdict(entry)
                row["kind"] = entry.kind.value
                rows.append(row)
            await self.conn.execute(insert(t.digest_entries), rows)

    async def digest_entries(self, coordinator_id: str, day: str) -> list[DigestEntry]:
        c = t.digest_entries.c
        rows = await self._rows(
            select(t.digest_entries)
            .where(c.coordinator_id == coordinator_id, c.day == day)
            .order_by(c.time, c.entry_id)
        )
        return [
            DigestEntry(
                entry_id=r.entry_id,
                coordinator_id=r.coordinator_id,
                day=r.day,
                owner=r.owner,
                kind=DigestKind(r.kind),
                time=r.time,
                lane_id=r.lane_id,
                item_id=r.item_id,
                action_id=r.action_id,
                reason=r.reason,
            )
            for r in rows
        ]

    async def insert_pending_actions(self, actions: Sequence[PendingAction]) -> None:
        if actions:
            await self.conn.execute(insert(t.pending_actions), [_action_values(a) for a in actions])

    async def update_pending_action(self, action: PendingAction) -> None:
        values = _action_values(action)
        del values["action_id"]
        await self.conn.execute(
            update(t.pending_actions)
            .where(t.pending_actions.c.action_id == action.action_id)
            .values(**values)
        )

    async def get_pending_action(self, action_id: str) -> PendingAction | None:
        row = await self._one(
            select(t.pending_actions).where(t.pending_actions.c.action_id == action_id)
        )
        return _action(row) if row else None

    async def list_pending_actions(
        self, coordinator_id: str, state: PendingActionState | None, after_id: str, limit: int
    ) -> list[PendingAction]:
        c = t.pending_actions.c
        stmt = select(t.pending_actions).where(
            c.coordinator_id == coordinator_id, c.action_id > after_id
        )
        if state is not None:
            stmt = stmt.where(c.state == state.value)
        rows = await self._rows(stmt.order_by(c.action_id).limit(limit))
        return [_action(r) for r in rows]

    async def due_pending_actions(
        self, coordinator_id: str, now: datetime, limit: int
    ) -> list[PendingAction]:
        c = t.pending_actions.c
        rows = await self._rows(
            select(t.pending_actions)
            .where(
                c.coordinator_id == coordinator_id,
                c.state == PendingActionState.OPEN.value,
                or_(c.next_attempt_time.is_(None), c.next_attempt_time <= now),
            )
            .order_by(c.next_attempt_time, c.action_id)
            .limit(limit)
        )
        return [_action(r) for r in rows]

    async def update_ticket(self, coordinator_id: str, ticket: Ticket) -> None:
        c = t.tickets.c
        await self.conn.execute(
            update(t.tickets)
            .where(c.lane_id == ticket.lane_id, c.tracker == ticket.tracker, c.key == ticket.key)
            .values(state=ticket.state, observe_time=ticket.observe_time)
        )

    async def tickets_to_sync(self, coordinator_id: str, limit: int) -> list[Ticket]:
        tk = t.tickets.c
        lanes_c = t.lanes.c
        rows = await self._rows(
            select(t.tickets)
            .join(t.lanes, lanes_c.lane_id == tk.lane_id)
            .where(
                tk.coordinator_id == coordinator_id,
                lanes_c.state.in_((LaneState.ACTIVE.value, LaneState.LIVE.value)),
            )
            .order_by(tk.observe_time.is_not(None), tk.observe_time, tk.key)
            .limit(limit)
        )
        return [Ticket(r.lane_id, r.tracker, r.key, r.url, r.state, r.observe_time) for r in rows]

    # -------------------------------------------------------------- escalations

    async def insert_escalations(self, escalations: Sequence[Escalation]) -> None:
        if escalations:
            await self.conn.execute(
                insert(t.escalations), [dataclasses.asdict(e) for e in escalations]
            )

    async def open_escalations(self, coordinator_id: str) -> list[Escalation]:
        c = t.escalations.c
        rows = await self._rows(
            select(t.escalations)
            .where(c.coordinator_id == coordinator_id, c.open.is_(True))
            .order_by(c.create_time, c.escalation_id)
        )
        return [
            Escalation(
                escalation_id=r.escalation_id,
                coordinator_id=r.coordinator_id,
                lane_id=r.lane_id,
                item_id=r.item_id,
                reason=r.reason,
                escalated_to=list(r.escalated_to or []),
                open=bool(r.open),
                create_time=r.create_time,
                resolve_time=r.resolve_time,
            )
            for r in rows
        ]

    async def resolve_escalations(
        self, coordinator_id: str, item_ids: Sequence[str], when: datetime
    ) -> None:
        if not item_ids:
            return
        c = t.escalations.c
        await self.conn.execute(
            update(t.escalations)
            .where(
                c.coordinator_id == coordinator_id,
                c.open.is_(True),
                c.item_id.in_(list(item_ids)),
            )
            .values(open=False, resolve_time=when)
        )

    async def escalation_candidates(
        self, coordinator_id: str, now: datetime, ready_before: datetime, limit: int
    ) -> list[Item]:
        c = t.items.c
        escalated = select(t.escalations.c.item_id).where(
            t.escalations.c.coordinator_id == coordinator_id, t.escalations.c.open.is_(True)
        )
        rows = await self._rows(
            select(t.items)
            .where(
                *self._ready_filter(coordinator_id, now),
                c.ready_time <= ready_before,
                c.item_id.not_in(escalated),
            )
            .order_by(c.ready_time, c.item_id)
            .limit(limit)
        )
        return [_item(r) for r in rows]

    # -------------------------------------------------------------- leadership

    async def acquire_leadership(
        self, name: str, holder_id: str, now: datetime, expire_time: datetime
    ) -> Leadership:
        await self.conn.execute(
            self._insert(t.leaderships)
            .values(name=name, holder_id=holder_id, expire_time=expire_time, term=1)
            .on_conflict_do_nothing()
        )
        stmt = select(t.leaderships).where(t.leaderships.c.name == name)
        if self.dialect == "postgresql":
            stmt = stmt.with_for_update()
        row = await self._one(stmt)
        assert row is not None
        if row.holder_id == holder_id or row.expire_time <= now:
            term = int(row.term) if row.holder_id == holder_id else int(row.term) + 1
            await self.conn.execute(
                update(t.leaderships)
                .where(t.leaderships.c.name == name)
                .values(holder_id=holder_id, expire_time=expire_time, term=term)
            )
            return Leadership(name, holder_id, expire_time, term)
        return Leadership(name, row.holder_id, row.expire_time, int(row.term))

    async def release_leadership(self, name: str, holder_id: str) -> Leadership | None:
        row = await self._one(select(t.leaderships).where(t.leaderships.c.name == name))
        if row is None:
            return None
        if row.holder_id != holder_id:
            return Leadership(name, row.holder_id, row.expire_time, int(row.term))
        await self.conn.execute(
            update(t.leaderships).where(t.leaderships.c.name == name).values(expire_time=self.now)
        )
        return Leadership(name, holder_id, self.now, int(row.term))


# ------------------------------------------------------------------ row mapping


def _bind(name: str) -> Any:
    return bindparam(name)


def _user(row: Row[Any]) -> UserRecord:
    return UserRecord(
        row.user_id,
        row.email,
        row.display_name,
        bool(row.platform_admin),
        bool(row.verified),
        row.create_time,
    )


def _work_key(row: Row[Any]) -> WorkKeyRecord:
    return WorkKeyRecord(
        key_id=row.key_id,
        display_name=row.display_name,
        org_slug=row.org_slug,
        coordinator_ids=tuple(row.coordinator_ids or ()),
        capabilities=tuple(row.capabilities or ()),
        secret_hash=row.secret_hash,
        create_time=row.create_time,
        created_by=row.created_by,
        expire_time=row.expire_time,
        revoke_time=row.revoke_time,
    )


def _retry_to_json(policy: RetryPolicy) -> dict[str, Any]:
    # Flat scalar fields: no need for dataclasses.asdict's recursive deep copy (hot in bulk
    # item updates).
    values = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)}
    return {k: v for k, v in values.items() if v is not None}


def _retry_from_json(data: dict[str, Any] | None) -> RetryPolicy:
    return RetryPolicy(**(data or {}))


def _review_to_json(policy: ReviewPolicy) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if policy.max_fail_rounds is not None:
        out["max_fail_rounds"] = policy.max_fail_rounds
    if policy.on_pass is not None:
        out["on_pass"] = policy.on_pass.value
    if policy.ship_requires_approval is not None:
        out["ship_requires_approval"] = policy.ship_requires_approval
    return out


def _review_from_json(data: dict[str, Any] | None) -> ReviewPolicy:
    data = data or {}
    return ReviewPolicy(
        max_fail_rounds=data.get("max_fail_rounds"),
        on_pass=OnPass(data["on_pass"]) if data.get("on_pass") else None,
        ship_requires_approval=data.get("ship_requires_approval"),
    )


def _config_to_json(config: CoordinatorConfig) -> dict[str, Any]:
    return {
        "class_capacity": dict(config.class_capacity),
        "retry_policy": _retry_to_json(config.retry_policy),
        "review_policy": _review_to_json(config.review_policy),
        "allowed_action_classes": list(config.allowed_action_classes),
        "digest_owner": config.digest_owner,
        "escalate_after_seconds": config.escalate_after_seconds,
        "parent_coordinator_id": config.parent_coordinator_id,
    }


def _config_from_json(data: dict[str, Any]) -> CoordinatorConfig:
    return CoordinatorConfig(
        class_capacity={str(k): int(v) for k, v in data["class_capacity"].items()},
        retry_policy=_retry_from_json(data.get("retry_policy")),
        review_policy=_review_from_json(data.get("review_policy")),
        allowed_action_classes=tuple(data.get("allowed_action_classes", ())),
        digest_owner=data.get("digest_owner", ""),
        escalate_after_seconds=float(data.get("escalate_after_seconds", 3600.0)),
        parent_coordinator_id=data.get("parent_coordinator_id", ""),
    )


def _coordinator(row: Row[Any]) -> Coordinator:
    return Coordinator(
        coordinator_id=row.coordinator_id,
        scope=Scope(row.scope),
        org_slug=row.org_slug,
        display_name=row.display_name,
        enabled=bool(row.enabled),
        revision=int(row.revision),
        config=_config_from_json(row.config),
        config_version=int(row.config_version),
        create_time=row.create_time,
        update_time=row.update_time,
    )


def _lane_values(lane: Lane) -> dict[str, Any]:
    return {
        "lane_id": lane.lane_id,
        "coordinator_id": lane.coordinator_id,
        "title": lane.title,
        "template": lane.template.value,
        "priority": lane.priority,
        "inputs": lane.inputs,
        "state": lane.state.value,
        "paused": lane.paused,
        "paused_time": lane.paused_time,
        "spec": {
            "worker_classes": lane.worker_classes,
            "retry_policy": _retry_to_json(lane.retry_policy),
            "review_policy": _review_to_json(lane.review_policy),
            "placement": lane.placement,
            "brief": lane.brief,
        },
        "fail_rounds": lane.fail_rounds,
        "close_reason": lane.close_reason,
        "receipt": lane.receipt,
        "request_id": lane.request_id,
        "version": lane.version,
        "create_time": lane.create_time,
        "update_time": lane.update_time,
    }


def _lane(row: Row[Any]) -> Lane:
    spec = row.spec or {}
    return Lane(
        lane_id=row.lane_id,
        coordinator_id=row.coordinator_id,
        title=row.title,
        template=Template(row.template),
        priority=int(row.priority),
        inputs=dict(row.inputs or {}),
        state=LaneState(row.state),
        paused=bool(row.paused),
        create_time=row.create_time,
        update_time=row.update_time,
        worker_classes=dict(spec.get("worker_classes") or {}),
        retry_policy=_retry_from_json(spec.get("retry_policy")),
        review_policy=_review_from_json(spec.get("review_policy")),
        placement=spec.get("placement"),
        brief=spec.get("brief", ""),
        fail_rounds=int(row.fail_rounds),
        close_reason=row.close_reason,
        receipt=row.receipt,
        paused_time=row.paused_time,
        request_id=row.request_id,
        version=int(row.version),
    )


def _item_values(item: Item) -> dict[str, Any]:
    return {
        "item_id": item.item_id,
        "coordinator_id": item.coordinator_id,
        "lane_id": item.lane_id,
        "key": item.key,
        "kind": item.kind.value,
        "worker_class": item.worker_class,
        "state": item.state.value,
        "priority": item.priority,
        "seq": item.seq,
        "held": item.held,
        "not_before": item.not_before,
        "title": item.title,
        "brief": item.brief,
        "depends_on": list(item.depends_on),
        "inputs": item.inputs,
        "placement": item.placement,
        "exclusive_key": item.exclusive_key,
        "retry_policy": _retry_to_json(item.retry_policy),
        "action_classes": list(item.action_classes),
        "needs_human": item.needs_human,
        "requires_approval": item.requires_approval,
        "attempt_count": item.attempt_count,
        "attempt_seq": item.attempt_seq,
        "dead_letter_reason": item.dead_letter_reason.value if item.dead_letter_reason else None,
        "stop_reason": item.stop_reason,
        "sensitive": item.sensitive,
        "evidence": item.evidence,
        "last_error": item.last_error,
        "current_lease_id": item.current_lease_id,
        "continues_lease_id": item.continues_lease_id,
        "ready_time": item.ready_time,
        "create_time": item.create_time,
        "update_time": item.update_time,
    }


def _item(row: Row[Any]) -> Item:
    return Item(
        item_id=row.item_id,
        coordinator_id=row.coordinator_id,
        lane_id=row.lane_id,
        key=row.key,
        kind=ItemKind(row.kind),
        worker_class=row.worker_class,
        state=ItemState(row.state),
        create_time=row.create_time,
        update_time=row.update_time,
        title=row.title,
        brief=row.brief,
        depends_on=list(row.depends_on or []),
        inputs=dict(row.inputs or {}),
        placement=row.placement,
        exclusive_key=row.exclusive_key,
        priority=int(row.priority),
        retry_policy=_retry_from_json(row.retry_policy),
        action_classes=list(row.action_classes or []),
        needs_human=bool(row.needs_human),
        requires_approval=bool(row.requires_approval),
        attempt_count=int(row.attempt_count),
        attempt_seq=int(row.attempt_seq),
        not_before=row.not_before,
        dead_letter_reason=DeadLetterReason(row.dead_letter_reason)
        if row.dead_letter_reason
        else None,
        stop_reason=row.stop_reason,
        sensitive=bool(row.sensitive),
        evidence=row.evidence,
        last_error=row.last_error,
        current_lease_id=row.current_lease_id,
        continues_lease_id=row.continues_lease_id,
        ready_time=row.ready_time,
        held=bool(row.held),
        seq=int(row.seq),
    )


def _attempt_values(attempt: Attempt) -> dict[str, Any]:
    # A shallow copy: dataclasses.asdict deep-copies every JSON value, which dominated bulk
    # attempt updates (B3); the values are only serialised, never mutated.
    values = {f.name: getattr(attempt, f.name) for f in dataclasses.fields(attempt)}
    values["status"] = attempt.status.value
    return values


def _attempt(row: Row[Any]) -> Attempt:
    return Attempt(
        lease_id=row.lease_id,
        coordinator_id=row.coordinator_id,
        item_id=row.item_id,
        lane_id=row.lane_id,
        attempt=int(row.attempt),
        status=AttemptStatus(row.status),
        token_hash=row.token_hash,
        worker_id=row.worker_id,
        worker_class=row.worker_class,
        principal=row.principal,
        lease_seconds=int(row.lease_seconds),
        lease_expire_time=row.lease_expire_time,
        create_time=row.create_time,
        start_time=row.start_time,
        end_time=row.end_time,
        run_identity=row.run_identity,
        progress=row.progress,
        error=row.error,
        continues_lease_id=row.continues_lease_id,
        counted=bool(row.counted),
        exclusive_key=row.exclusive_key,
        checkpoint=row.checkpoint,
    )


def _action_values(action: PendingAction) -> dict[str, Any]:
    values = dataclasses.asdict(action)
    values["state"] = action.state.value
    return values


def _action(row: Row[Any]) -> PendingAction:
    return PendingAction(
        action_id=row.action_id,
        coordinator_id=row.coordinator_id,
        lane_id=row.lane_id,
        kind=row.kind,
        state=PendingActionState(row.state),
        owner=row.owner,
        create_time=row.create_time,
        update_time=row.update_time,
        ticket_tracker=row.ticket_tracker,
        ticket_key=row.ticket_key,
        attempts=int(row.attempts),
        next_attempt_time=row.next_attempt_time,
        last_error=row.last_error,
        resolution=row.resolution,
    )


def _hold_keys(attempt: Attempt) -> list[str]:
    return [k for k in attempt.exclusive_key.split(",") if k]


def _worker(row: Row[Any]) -> Worker:
    return Worker(
        coordinator_id=row.coordinator_id,
        worker_id=row.worker_id,
        worker_class=row.worker_class,
        create_time=row.create_time,
        observe_time=row.observe_time,
        principal=row.principal,
        capabilities=list(row.capabilities or []),
        toolchains=dict(row.toolchains or {}),
        labels=dict(row.labels or {}),
        cpu_count=int(row.cpu_count),
        memory_bytes=int(row.memory_bytes),
        disk_bytes=int(row.disk_bytes),
        last_ask_time=row.last_ask_time,
    )
