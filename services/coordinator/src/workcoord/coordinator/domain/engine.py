"""The lease engine: every command of the coordinator, one transaction each.

Each command opens a write transaction on its work coordinator (which locks the coordinator's
row, serialising changes to it), authorizes the caller against current state, applies the
rules, appends its events with the next revisions, and commits. Notifications are published
only after the commit, as wake-up hints.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import random
import secrets as _secrets
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from workcoord.kit.bus import Notification, NotificationBus, Subscription
from workcoord.kit.clock import Clock
from workcoord.kit.errors import (
    AlreadyExists,
    CoordinationDisabled,
    EtagMismatch,
    FieldViolation,
    IllegalTransition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    PoolFull,
    Unauthenticated,
    WorkcoordError,
)
from workcoord.kit.secrets import (
    SystemTokenSource,
    TokenSource,
    hash_secret,
    looks_like_credential,
    new_secret,
)

from . import rules, workflow
from .auth import (
    RECOVERY,
    Access,
    Capability,
    OrgRole,
    Principal,
    PrincipalKind,
    authorize,
    require_org_admin,
    require_platform_admin,
)
from .grants import GrantPermission, parents_holding
from .group_commit import GroupCommitter
from .model import (
    TERMINAL_ITEM_STATES,
    WORKER_EVICT_AFTER_SECONDS,
    WORKER_POOL_CAP,
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
    JsonObject,
    Lane,
    LaneState,
    NewEvent,
    PendingAction,
    PendingActionState,
    RetryPolicy,
    Scope,
    Template,
    Ticket,
    Worker,
)
from .ports import Leadership, OrgRecord, Reader, Store, Tx, UserRecord, WorkKeyRecord
from .specs import (
    ClassUsage,
    CoordinatorSpec,
    CoordinatorView,
    Explanation,
    GateInfo,
    GrantedLease,
    ItemDetail,
    ItemSpec,
    LaneDetail,
    LaneSpec,
    MaintenanceReport,
    Page,
)
from .tickets import TicketTracker, TrackerError

_T = TypeVar("_T")

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
# Long-polls re-check the database at least this often, so a lost notification (Redis down,
# a backoff that ran out) costs at most this much latency.
BACKSTOP_POLL_SECONDS = 1.0
CLAIM_SCAN_FACTOR = 4
ASK_REFRESH_SECONDS = 5.0
BOOTSTRAP_USER_EMAIL = "admin@workcoord.local"
CLOSE_TICKET = "CLOSE_TICKET"
TICKET_CLOSED = "CLOSED"
TICKET_SYNC_BATCH = 50
ESCALATION_BATCH = 200
# Ticket closures are retried patiently: trackers have outages measured in minutes to hours.
PENDING_ACTION_RETRY = RetryPolicy(
    initial_interval=30.0, backoff_coefficient=2.0, maximum_interval=3600.0, maximum_attempts=None
)

_log = logging.getLogger("workcoord.coordinator.engine")


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.warning("follow-up work failed: %s", task.exception())


def new_id(prefix: str) -> str:
    """A server-assigned id: a short readable prefix and 80 random bits."""
    return f"{prefix}_{_secrets.token_hex(10)}"


def encode_page_token(key: Sequence[Any]) -> str:
    raw = json.dumps(list(key), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str) -> list[Any]:
    if not token:
        return []
    try:
        padded = token + "=" * (-len(token) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument.single("page_token", "is not a token this server issued") from exc
    if not isinstance(value, list):
        raise InvalidArgument.single("page_token", "is not a token this server issued")
    return value


def page_size(requested: int) -> int:
    if requested < 0:
        raise InvalidArgument.single("page_size", "must not be negative")
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


@dataclass(slots=True)
class _Effects:
    """What a committed command should announce."""

    ready_classes: set[str] = field(default_factory=set)
    changed: bool = False
    # Digest lines (kind, lane id, item id, action id, reason), written before commit.
    digest: list[tuple[DigestKind, str, str, str, str]] = field(default_factory=list)
    # Tickets of lanes that just went LIVE: their closure is tried right after commit.
    close_tickets: bool = False

    def note(
        self,
        kind: DigestKind,
        lane_id: str,
        item_id: str = "",
        reason: str = "",
        action_id: str = "",
    ) -> None:
        self.digest.append((kind, lane_id, item_id, action_id, reason))


class Engine:
    """The coordinator's commands and reads."""

    def __init__(
        self,
        store: Store,
        bus: NotificationBus,
        clock: Clock,
        *,
        tokens: TokenSource | None = None,
        uniform: Callable[[], float] | None = None,
        service_key: str | None = None,
        trackers: Mapping[str, TicketTracker] | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.clock = clock
        self.tokens = tokens or SystemTokenSource()
        self.uniform = uniform or random.random
        self.trackers: dict[str, TicketTracker] = dict(trackers or {})
        self._service_key_hash = hash_secret(service_key) if service_key else ""
        self._claim_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._worker_writes: GroupCommitter[_Effects] = GroupCommitter(
            _Effects, self._write_digest, self._announce
        )

    # ------------------------------------------------------------------ plumbing

    @asynccontextmanager
    async def _command(
        self, principal: Principal, coordinator_id: str, access: Access, *, work: bool = True
    ) -> AsyncIterator[tuple[Tx, Coordinator, _Effects]]:
        """One transaction on one work coordinator, with notifications after commit."""
        effects = _Effects()
        async with self.store.write(coordinator_id) as tx:
            coordinator = tx.coordinator
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            authorize(principal, coordinator, access)
            if work:
                await self._require_enabled(tx, coordinator)
            yield tx, coordinator, effects
            await self._write_digest(tx, coordinator, effects)
        await self._announce(coordinator, effects)

    async def _write_digest(self, tx: Tx, coordinator: Coordinator, effects: _Effects) -> None:
        if effects.digest:
            await tx.insert_digest_entries(self._digest_entries(tx, coordinator, effects))

    async def _announce(self, coordinator: Coordinator, effects: _Effects) -> None:
        """After commit: wake waiting workers and feeds, start ticket closures."""
        if effects.changed or effects.ready_classes:
            await self.bus.publish(
                Notification(
                    coordinator.coordinator_id,
                    coordinator.revision,
                    frozenset(effects.ready_classes),
                )
            )
        if effects.close_tickets:
            self._spawn(self._close_tickets_now(coordinator.coordinator_id))

    @asynccontextmanager
    async def _open_for_workers(self, coordinator_id: str) -> AsyncIterator[tuple[Tx, Coordinator]]:
        """The shared transaction of a group of worker writes (see group_commit)."""
        async with self.store.write(coordinator_id) as tx:
            coordinator = tx.coordinator
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            await self._require_enabled(tx, coordinator)
            yield tx, coordinator

    def _digest_entries(
        self, tx: Tx, coordinator: Coordinator, effects: _Effects
    ) -> list[DigestEntry]:
        day = tx.now.date().isoformat()
        return [
            DigestEntry(
                entry_id=new_id("dg"),
                coordinator_id=coordinator.coordinator_id,
                day=day,
                owner=coordinator.config.digest_owner,
                kind=kind,
                time=tx.now,
                lane_id=lane_id,
                item_id=item_id,
                action_id=action_id,
                reason=reason,
            )
            for kind, lane_id, item_id, action_id, reason in effects.digest
        ]

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        """Run follow-up work after a commit without holding the caller; keep a reference so
        the task is not collected, and log (never raise) its failure."""
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_log_failure)

    async def drain(self) -> None:
        """Wait for follow-up work started by earlier commands (tests, clean shutdown)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def _require_enabled(self, reader: Reader, coordinator: Coordinator) -> None:
        if not await reader.platform_enabled():
            raise CoordinationDisabled("coordination is switched off for the platform")
        if not coordinator.enabled:
            raise CoordinationDisabled(
                f"coordination is switched off for work coordinator {coordinator.coordinator_id}"
            )

    async def _readable(
        self, reader: Reader, principal: Principal, coordinator_id: str, *, work: bool = True
    ) -> Coordinator:
        coordinator = await reader.get_coordinator(coordinator_id)
        if coordinator is None:
            raise NotFound(f"work coordinator {coordinator_id} not found")
        authorize(principal, coordinator, Access.READ)
        if work:
            await self._require_enabled(reader, coordinator)
        return coordinator

    async def _append(
        self, tx: Tx, coordinator: Coordinator, events: Sequence[NewEvent], actor: str
    ) -> None:
        if events:
            coordinator.revision = await tx.append(coordinator, events, actor)

    # ------------------------------------------------------------------ credentials

    async def authenticate(self, secret: str | None) -> Principal:
        """Resolve a bearer secret into a principal, from current state."""
        if not secret:
            raise Unauthenticated("a credential is required: Authorization: Bearer <secret>")
        digest = hash_secret(secret)
        if self._service_key_hash and _secrets.compare_digest(digest, self._service_key_hash):
            return RECOVERY
        now = self.clock.now()
        async with self.store.read() as reader:
            credential = await reader.find_credential(digest)
            if credential is None:
                raise Unauthenticated("unknown credential")
            if credential.revoke_time is not None:
                raise Unauthenticated("the credential was revoked")
            if credential.expire_time is not None and credential.expire_time <= now:
                raise Unauthenticated("the credential expired")
            if credential.kind == "work_key":
                key = await reader.get_work_key(credential.owner_id)
                if key is None:
                    raise Unauthenticated("unknown credential")
                return Principal(
                    kind=PrincipalKind.WORK_KEY,
                    id=key.key_id,
                    display_name=key.display_name,
                    org_slug=key.org_slug,
                    capabilities=frozenset(Capability(c) for c in key.capabilities),
                    coordinator_ids=frozenset(key.coordinator_ids),
                )
            user = await reader.get_user(credential.owner_id)
            if user is None:
                raise Unauthenticated("unknown credential")
            roles = await reader.user_roles(user.user_id)
            return Principal(
                kind=PrincipalKind.USER,
                id=user.user_id,
                display_name=user.display_name,
                platform_admin=user.platform_admin and user.verified,
                org_roles={slug: OrgRole(role) for slug, role in roles.items()},
            )

    async def bootstrap_admin(self, token: str) -> str:
        """Ensure a verified platform admin whose API token is ``token`` (idempotent)."""
        digest = hash_secret(token)
        async with self.store.write() as tx:
            existing = await tx.find_credential(digest)
            if existing is not None:
                return existing.owner_id
            user = await tx.find_user_by_email(BOOTSTRAP_USER_EMAIL)
            if user is None:
                user = UserRecord(
                    user_id=new_id("usr"),
                    email=BOOTSTRAP_USER_EMAIL,
                    display_name="Bootstrap admin",
                    platform_admin=True,
                    verified=True,
                    create_time=tx.now,
                )
                await tx.insert_user(user)
            await tx.insert_user_token(
                new_id("tok"), user.user_id, "bootstrap", digest, tx.now, None
            )
            return user.user_id

    # ------------------------------------------------------------------ administration

    async def create_org(self, principal: Principal, slug: str, display_name: str) -> OrgRecord:
        require_platform_admin(principal)
        async with self.store.write() as tx:
            if await tx.get_org(slug) is not None:
                raise AlreadyExists(f"org {slug!r} already exists")
            org = OrgRecord(slug=slug, display_name=display_name or slug, create_time=tx.now)
            await tx.insert_org(org)
            return org

    async def get_org(self, principal: Principal, slug: str) -> OrgRecord:
        async with self.store.read() as reader:
            org = await reader.get_org(slug)
        if org is None or not (principal.platform_admin or slug in principal.org_roles):
            raise NotFound(f"org {slug!r} not found")
        return org

    async def list_orgs(self, principal: Principal, size: int, token: str) -> Page[OrgRecord]:
        limit = page_size(size)
        after = decode_page_token(token)
        async with self.store.read() as reader:
            orgs = await reader.list_orgs(str(after[0]) if after else "", limit + 1)
        visible = [o for o in orgs if principal.platform_admin or o.slug in principal.org_roles]
        return _page(visible, limit, lambda o: [o.slug])

    async def create_user(
        self,
        principal: Principal,
        email: str,
        display_name: str,
        platform_admin: bool,
        verified: bool,
    ) -> UserRecord:
        require_platform_admin(principal)
        async with self.store.write() as tx:
            if await tx.find_user_by_email(email.lower()) is not None:
                raise AlreadyExists(f"a user with email {email!r} already exists")
            user = UserRecord(
                user_id=new_id("usr"),
                email=email.lower(),
                display_name=display_name,
                platform_admin=platform_admin,
                verified=verified,
                create_time=tx.now,
            )
            await tx.insert_user(user)
            return user

    async def get_user(self, principal: Principal, user_id: str) -> UserRecord:
        if not (principal.platform_admin or (principal.is_human and principal.id == user_id)):
            raise NotFound(f"user {user_id} not found")
        async with self.store.read() as reader:
            user = await reader.get_user(user_id)
        if user is None:
            raise NotFound(f"user {user_id} not found")
        return user

    async def list_users(self, principal: Principal, size: int, token: str) -> Page[UserRecord]:
        require_platform_admin(principal)
        limit = page_size(size)
        after = decode_page_token(token)
        async with self.store.read() as reader:
            users = await reader.list_users(str(after[0]) if after else "", limit + 1)
        return _page(users, limit, lambda u: [u.user_id])

    async def add_org_member(
        self, principal: Principal, org_slug: str, user_id: str, role: OrgRole
    ) -> datetime:
        require_org_admin(principal, org_slug)
        async with self.store.write() as tx:
            if await tx.get_org(org_slug) is None:
                raise NotFound(f"org {org_slug!r} not found")
            if await tx.get_user(user_id) is None:
                raise NotFound(f"user {user_id} not found")
            await tx.set_member(org_slug, user_id, role.value, tx.now)
            return tx.now

    async def create_user_token(
        self, principal: Principal, user_id: str, display_name: str, expire_time: datetime | None
    ) -> tuple[str, str, datetime]:
        if not (principal.platform_admin or (principal.is_human and principal.id == user_id)):
            raise NotFound(f"user {user_id} not found")
        secret = new_secret("wcadm_", self.tokens)
        token_id = new_id("tok")
        async with self.store.write() as tx:
            if expire_time is not None and expire_time <= tx.now:
                raise InvalidArgument.single("token.expire_time", "must be in the future")
            if await tx.get_user(user_id) is None:
                raise NotFound(f"user {user_id} not found")
            await tx.insert_user_token(
                token_id, user_id, display_name, hash_secret(secret), tx.now, expire_time
            )
            return token_id, secret, tx.now

    async def create_work_key(
        self,
        principal: Principal,
        display_name: str,
        org_slug: str,
        coordinator_ids: Sequence[str],
        capabilities: Sequence[Capability],
        expire_time: datetime | None,
    ) -> tuple[WorkKeyRecord, str]:
        """Create a work key; its secret is returned once and stored only as a hash."""
        if not principal.is_human:
            raise PermissionDenied("only a human administrator may create work keys")
        violations: list[FieldViolation] = []
        if not coordinator_ids:
            violations.append(FieldViolation("work_key.coordinator_ids", "is required"))
        if not capabilities:
            violations.append(FieldViolation("work_key.capabilities", "is required"))
        if violations:
            raise InvalidArgument(violations)
        secret = new_secret("wck_", self.tokens)
        async with self.store.write() as tx:
            if expire_time is not None and expire_time <= tx.now:
                raise InvalidArgument.single("work_key.expire_time", "must be in the future")
            # Authorize every coordinator before saying anything about it (no existence
            # oracle): an unknown id and one the caller may not see are both NOT_FOUND.
            key_orgs: set[str] = set()
            for cid in coordinator_ids:
                coordinator = await tx.get_coordinator(cid)
                if coordinator is None:
                    raise NotFound(f"work coordinator {cid} not found")
                authorize(principal, coordinator, Access.CONFIGURE)
                if coordinator.scope == Scope.GLOBAL:
                    require_platform_admin(principal)
                key_orgs.add(coordinator.org_slug)
            # A key belongs to the one org of its work coordinators (GLOBAL: no org).
            if len(key_orgs) > 1:
                raise InvalidArgument.single(
                    "work_key.coordinator_ids", "must all belong to one org (or all be GLOBAL)"
                )
            (key_org,) = key_orgs
            if org_slug and org_slug != key_org:
                raise InvalidArgument.single(
                    "work_key.org_slug", "must be the org of the key's work coordinators"
                )
            org_slug = key_org
            if org_slug:
                require_org_admin(principal, org_slug)
            key = WorkKeyRecord(
                key_id=new_id("key"),
                display_name=display_name,
                org_slug=org_slug,
                coordinator_ids=tuple(dict.fromkeys(coordinator_ids)),
                capabilities=tuple(sorted({c.value for c in capabilities})),
                secret_hash=hash_secret(secret),
                create_time=tx.now,
                created_by=principal.name,
                expire_time=expire_time,
            )
            await tx.insert_work_key(key)
            return key, secret

    async def _key_visible(self, principal: Principal, key: WorkKeyRecord | None) -> WorkKeyRecord:
        if key is None or not principal.is_human:
            raise NotFound("work key not found")
        if principal.platform_admin:
            return key
        if key.org_slug and principal.org_roles.get(key.org_slug) == OrgRole.ORG_ADMIN:
            return key
        raise NotFound("work key not found")

    async def get_work_key(self, principal: Principal, key_id: str) -> WorkKeyRecord:
        async with self.store.read() as reader:
            key = await reader.get_work_key(key_id)
        return await self._key_visible(principal, key)

    async def list_work_keys(
        self, principal: Principal, org_slug: str, size: int, token: str
    ) -> Page[WorkKeyRecord]:
        if not principal.is_human:
            raise PermissionDenied("only a human administrator may list work keys")
        if not principal.platform_admin:
            if not org_slug:
                raise InvalidArgument.single(
                    "org_slug", "is required unless you are a platform admin"
                )
            require_org_admin(principal, org_slug)
        limit = page_size(size)
        after = decode_page_token(token)
        async with self.store.read() as reader:
            keys = await reader.list_work_keys(org_slug, str(after[0]) if after else "", limit + 1)
        return _page(keys, limit, lambda k: [k.key_id])

    async def revoke_work_key(self, principal: Principal, key_id: str) -> WorkKeyRecord:
        async with self.store.write() as tx:
            key = await self._key_visible(principal, await tx.get_work_key(key_id))
            if key.revoke_time is None:
                await tx.revoke_work_key(key_id, tx.now)
                key = replace(key, revoke_time=tx.now)
            return key

    async def get_settings(self, principal: Principal) -> tuple[bool, datetime, int]:
        if not principal.is_human:
            raise PermissionDenied("only humans read platform settings")
        async with self.store.read() as reader:
            return await reader.settings_row()

    async def update_settings(
        self, principal: Principal, enabled: bool | None, etag: str
    ) -> tuple[bool, datetime, int]:
        require_platform_admin(principal)
        async with self.store.write() as tx:
            current, _, version = await tx.settings_row()
            if etag and etag != str(version):
                raise EtagMismatch()
            if enabled is not None and enabled != current:
                await tx.set_platform_enabled(enabled, tx.now)
            settings = await tx.settings_row()
        if enabled:
            # Wake every long-poll: work may be leasable again.
            async with self.store.read() as reader:
                coordinators = await reader.list_coordinators("", 10_000, None)
            for c in coordinators:
                await self.bus.publish(Notification(c.coordinator_id, c.revision, frozenset()))
        return settings

    # ------------------------------------------------------------------ work coordinators

    async def create_coordinator(
        self, principal: Principal, spec: CoordinatorSpec, request_id: str
    ) -> Coordinator:
        if spec.scope is None:
            raise InvalidArgument.single("work_coordinator.scope", "is required")
        if spec.scope == Scope.GLOBAL:
            require_platform_admin(principal)
            if spec.org_slug:
                raise InvalidArgument.single(
                    "work_coordinator.org_slug", "must be empty for a GLOBAL work coordinator"
                )
        else:
            if not spec.org_slug:
                raise InvalidArgument.single(
                    "work_coordinator.org_slug", "is required for an ORG work coordinator"
                )
            require_org_admin(principal, spec.org_slug)
        config = _apply_config_changes(CoordinatorConfig(), spec.changes)
        async with self.store.write() as tx:
            if request_id:
                existing = await tx.find_coordinator_by_request(request_id)
                if existing is not None:
                    return existing
            if spec.scope == Scope.ORG and await tx.get_org(spec.org_slug) is None:
                raise InvalidArgument.single(
                    "work_coordinator.org_slug", f"no such org: {spec.org_slug!r}"
                )
            if spec.scope == Scope.GLOBAL:
                existing_global = await tx.list_coordinators("", 10_000, None)
                if any(c.scope == Scope.GLOBAL for c in existing_global):
                    raise AlreadyExists("the installation already has its GLOBAL work coordinator")
            await self._check_parent(tx, spec.scope, config.parent_coordinator_id)
            coordinator = Coordinator(
                coordinator_id=new_id("wc"),
                scope=spec.scope,
                org_slug=spec.org_slug,
                display_name=spec.display_name,
                enabled=True if spec.enabled is None else spec.enabled,
                revision=0,
                config=config,
                config_version=1,
                create_time=tx.now,
                update_time=tx.now,
            )
            await tx.insert_coordinator(coordinator, request_id)
            await self._append(
                tx,
                coordinator,
                [NewEvent(EventType.COORDINATOR_CREATED, data={"scope": spec.scope.value})],
                principal.name,
            )
            return coordinator

    async def _check_parent(self, reader: Reader, scope: Scope, parent_id: str) -> None:
        if not parent_id:
            return
        field_name = "work_coordinator.parent_coordinator_id"
        if scope == Scope.GLOBAL:
            raise InvalidArgument.single(field_name, "a GLOBAL work coordinator has no parent")
        parent = await reader.get_coordinator(parent_id)
        if parent is None or parent.scope != Scope.GLOBAL:
            raise InvalidArgument.single(field_name, "must name the GLOBAL work coordinator")

    async def get_coordinator(self, principal: Principal, coordinator_id: str) -> Coordinator:
        async with self.store.read() as reader:
            return await self._readable(reader, principal, coordinator_id, work=False)

    async def list_coordinators(
        self, principal: Principal, org_slug: str, size: int, token: str
    ) -> Page[Coordinator]:
        limit = page_size(size)
        after = decode_page_token(token)
        slugs: list[str] | None = None
        if org_slug:
            slugs = [org_slug]
        async with self.store.read() as reader:
            found = await reader.list_coordinators(str(after[0]) if after else "", 10_000, slugs)
        visible = [c for c in found if _may(principal, c, Access.READ)]
        return _page(visible[: limit + 1], limit, lambda c: [c.coordinator_id])

    async def update_coordinator(
        self, principal: Principal, coordinator_id: str, spec: CoordinatorSpec, etag: str
    ) -> Coordinator:
        async with self._command(principal, coordinator_id, Access.CONFIGURE, work=False) as (
            tx,
            coordinator,
            effects,
        ):
            if etag and etag != str(coordinator.config_version):
                raise EtagMismatch()
            config = _apply_config_changes(coordinator.config, spec.changes)
            await self._check_parent(tx, coordinator.scope, config.parent_coordinator_id)
            changed = sorted(spec.changes)
            if spec.enabled is not None and spec.enabled != coordinator.enabled:
                coordinator.enabled = spec.enabled
                changed.append("enabled")
            if spec.display_name:
                coordinator.display_name = spec.display_name
                changed.append("display_name")
            coordinator.config = config
            coordinator.config_version += 1
            coordinator.update_time = tx.now
            await tx.update_coordinator(coordinator)
            await self._append(
                tx,
                coordinator,
                [NewEvent(EventType.COORDINATOR_UPDATED, data={"fields": changed})],
                principal.name,
            )
            effects.changed = True
            # Capacity or the switch may have changed: wake every waiting worker.
            effects.ready_classes.update(coordinator.config.class_capacity)
            return coordinator

    # ------------------------------------------------------------------ lanes

    async def create_lane(
        self, principal: Principal, coordinator_id: str, spec: LaneSpec, request_id: str
    ) -> LaneDetail:
        if spec.template is None:
            raise InvalidArgument.single("lane.template", "is required")
        if spec.template == Template.STANDARD and spec.items:
            raise InvalidArgument.single(
                "lane.items", "must be empty for a STANDARD lane: the workflow creates its items"
            )
        async with self._command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            if request_id:
                existing = await tx.find_lane_by_request(coordinator_id, request_id)
                if existing is not None:
                    return await self._lane_detail(tx, existing)
            worker_classes = spec.worker_classes
            if spec.template == Template.STANDARD:
                worker_classes = workflow.stage_classes(
                    spec.worker_classes, coordinator.config.class_capacity
                )
            else:
                _check_item_specs(coordinator, spec.items, "lane.items")
                violations = rules.dag_violations(
                    [s.key for s in spec.items], [s.depends_on for s in spec.items]
                )
                if violations:
                    raise InvalidArgument(violations)
            for problem in rules.placement_problems(spec.placement):
                raise InvalidArgument.single("lane.placement", problem)
            lane = Lane(
                lane_id=new_id("ln"),
                coordinator_id=coordinator_id,
                title=spec.title,
                template=spec.template,
                priority=spec.priority,
                inputs=spec.inputs,
                state=LaneState.ACTIVE,
                paused=False,
                create_time=tx.now,
                update_time=tx.now,
                worker_classes=worker_classes,
                retry_policy=spec.retry_policy,
                review_policy=spec.review_policy,
                placement=spec.placement,
                brief=spec.brief,
                request_id=request_id,
            )
            await tx.insert_lane(lane)
            tickets = [
                Ticket(lane_id=lane.lane_id, tracker=t.tracker, key=t.key, url=t.url)
                for t in spec.tickets
            ]
            for ticket in tickets:
                await tx.insert_ticket(coordinator_id, ticket)
            events = [
                NewEvent(
                    EventType.LANE_CREATED,
                    lane_id=lane.lane_id,
                    data={"template": lane.template.value, "items": len(spec.items)},
                )
            ]
            specs = spec.items
            if lane.template == Template.STANDARD:
                specs = workflow.first_items(lane, worker_classes)
            items = await self._new_items(tx, coordinator, lane, specs, events, effects)
            await self._append(tx, coordinator, events, principal.name)
            return LaneDetail(lane=lane, items=items, tickets=tickets)

    async def _new_items(
        self,
        tx: Tx,
        coordinator: Coordinator,
        lane: Lane,
        specs: Sequence[ItemSpec],
        events: list[NewEvent],
        effects: _Effects,
        existing: Sequence[Item] = (),
    ) -> list[Item]:
        seq = await tx.next_item_seq(len(specs))
        succeeded = {i.key for i in existing if i.state == ItemState.SUCCEEDED}
        items: list[Item] = []
        for offset, spec in enumerate(specs):
            item = Item(
                item_id=new_id("it"),
                coordinator_id=coordinator.coordinator_id,
                lane_id=lane.lane_id,
                key=spec.key,
                kind=spec.kind or ItemKind.TASK,
                worker_class=spec.worker_class,
                state=ItemState.WAITING,
                create_time=tx.now,
                update_time=tx.now,
                title=spec.title,
                brief=spec.brief,
                depends_on=list(spec.depends_on),
                inputs=spec.inputs,
                placement=spec.placement,
                exclusive_key=spec.exclusive_key,
                priority=lane.priority if spec.priority is None else spec.priority,
                retry_policy=spec.retry_policy,
                action_classes=list(spec.action_classes),
                needs_human=spec.needs_human,
                requires_approval=spec.requires_approval,
                held=lane.paused,
                seq=seq + offset,
            )
            events.append(
                NewEvent(
                    EventType.ITEM_CREATED,
                    lane_id=lane.lane_id,
                    item_id=item.item_id,
                    data={
                        "kind": item.kind.value,
                        "key": item.key,
                        "workerClass": item.worker_class,
                    },
                )
            )
            if all(dep in succeeded for dep in item.depends_on):
                self._make_ready(tx, coordinator, item, events, effects)
            items.append(item)
        await tx.insert_items(items)
        return items

    def _make_ready(
        self,
        tx: Tx,
        coordinator: Coordinator,
        item: Item,
        events: list[NewEvent],
        effects: _Effects,
    ) -> None:
        """Move an item whose dependencies are met to QUEUED, or stop it for a human."""
        reason, sensitive = rules.policy_stop_reason(
            item, coordinator.config.allowed_action_classes
        )
        item.update_time = tx.now
        if reason:
            self._stop(item, reason, events, effects)
            item.sensitive = item.sensitive or sensitive
            return
        if item.requires_approval:
            item.state = ItemState.AWAITING_APPROVAL
            events.append(
                NewEvent(EventType.APPROVAL_REQUESTED, lane_id=item.lane_id, item_id=item.item_id)
            )
            return
        self._queue(tx, item, events, effects, not_before=None)

    def _stop(self, item: Item, reason: str, events: list[NewEvent], effects: _Effects) -> None:
        """Stop an item for a human, with its reason, an event and a digest line."""
        item.state = ItemState.STOPPED
        item.stop_reason = reason
        item.current_lease_id = ""
        events.append(
            NewEvent(
                EventType.ITEM_STOPPED,
                lane_id=item.lane_id,
                item_id=item.item_id,
                data={"reason": reason},
            )
        )
        effects.note(DigestKind.STOPPED, item.lane_id, item.item_id, reason)

    def _queue(
        self,
        tx: Tx,
        item: Item,
        events: list[NewEvent],
        effects: _Effects,
        not_before: datetime | None,
        event: EventType = EventType.ITEM_QUEUED,
        data: JsonObject | None = None,
    ) -> None:
        item.state = ItemState.QUEUED
        item.not_before = not_before
        item.current_lease_id = ""
        item.ready_time = not_before or tx.now
        item.update_time = tx.now
        payload = dict(data or {})
        if not_before is not None:
            payload["notBefore"] = _iso(not_before)
        events.append(NewEvent(event, lane_id=item.lane_id, item_id=item.item_id, data=payload))
        effects.ready_classes.add(item.worker_class)

    async def create_item(
        self,
        principal: Principal,
        coordinator_id: str,
        lane_id: str,
        spec: ItemSpec,
        request_id: str,
    ) -> ItemDetail:
        async with self._command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            lane = await self._lane_for_update(tx, coordinator_id, lane_id)
            if lane.template != Template.CUSTOM:
                raise IllegalTransition("items can be added only to CUSTOM lanes")
            if lane.state != LaneState.ACTIVE:
                raise IllegalTransition(f"the lane is {lane.state.value}")
            existing = await tx.lane_items([lane_id])
            if request_id:
                for item in existing:
                    if item.key == spec.key:
                        return ItemDetail(item=item, attempts=[])
            _check_item_specs(coordinator, [spec], "item")
            keys = [i.key for i in existing] + [spec.key]
            deps = [i.depends_on for i in existing] + [spec.depends_on]
            violations = rules.dag_violations(keys, deps, path="items")
            if violations:
                # Report against the new item, whose index is the last one.
                last = f"items[{len(keys) - 1}]"
                raise InvalidArgument(
                    [
                        FieldViolation(v.field.replace(last, "item"), v.description)
                        for v in violations
                    ]
                )
            events: list[NewEvent] = []
            items = await self._new_items(tx, coordinator, lane, [spec], events, effects, existing)
            lane.update_time = tx.now
            await tx.update_lane(lane)
            await self._append(tx, coordinator, events, principal.name)
            return ItemDetail(item=items[0], attempts=[])

    async def _lane_for_update(self, tx: Tx, coordinator_id: str, lane_id: str) -> Lane:
        lane = await tx.get_lane(lane_id)
        if lane is None or lane.coordinator_id != coordinator_id:
            raise NotFound(f"lane {lane_id} not found")
        return lane

    async def _lane_detail(
        self, reader: Reader, lane: Lane, with_attempts: bool = False
    ) -> LaneDetail:
        details = await self._lane_details(reader, [lane], with_attempts)
        return details[0]

    async def _lane_details(
        self, reader: Reader, lanes: Sequence[Lane], with_attempts: bool = False
    ) -> list[LaneDetail]:
        ids = [lane.lane_id for lane in lanes]
        items = await reader.lane_items(ids) if ids else []
        blockers = await reader.lane_blockers(ids) if ids else []
        tickets = await reader.lane_tickets(ids) if ids else []
        attempts: dict[str, list[Attempt]] = {}
        if with_attempts and items:
            for attempt in await reader.item_attempts([i.item_id for i in items]):
                attempts.setdefault(attempt.item_id, []).append(attempt)
        by_lane: dict[str, LaneDetail] = {
            lane.lane_id: LaneDetail(lane=lane, items=[], attempts=attempts) for lane in lanes
        }
        for item in items:
            by_lane[item.lane_id].items.append(item)
        for blocker in blockers:
            by_lane[blocker.lane_id].blockers.append(blocker)
        for ticket in tickets:
            by_lane[ticket.lane_id].tickets.append(ticket)
        return [by_lane[i] for i in ids]

    async def _capacity(
        self, reader: Reader, coordinator: Coordinator
    ) -> dict[str, tuple[int, int]]:
        live = await reader.live_attempts(coordinator.coordinator_id, None)
        capacity, _holding = rules.class_usage(live, coordinator.config.class_capacity)
        return capacity

    async def get_lane(self, principal: Principal, coordinator_id: str, lane_id: str) -> LaneDetail:
        async with self.store.read() as reader:
            coordinator = await self._readable(reader, principal, coordinator_id)
            lane = await reader.get_lane(lane_id)
            if lane is None or lane.coordinator_id != coordinator_id:
                raise NotFound(f"lane {lane_id} not found")
            detail = await self._lane_detail(reader, lane, with_attempts=True)
            detail.capacity = await self._capacity(reader, coordinator)
            return detail

    async def list_lanes(
        self,
        principal: Principal,
        coordinator_id: str,
        state: LaneState | None,
        size: int,
        token: str,
    ) -> Page[LaneDetail]:
        limit = page_size(size)
        after_key = decode_page_token(token)
        after: tuple[datetime, str] | None = None
        if after_key:
            try:
                after = (datetime.fromisoformat(str(after_key[0])), str(after_key[1]))
            except (ValueError, IndexError) as exc:
                raise InvalidArgument.single(
                    "page_token", "is not a token this server issued"
                ) from exc
        async with self.store.read() as reader:
            coordinator = await self._readable(reader, principal, coordinator_id)
            lanes = await reader.list_lanes(coordinator_id, state, after, limit + 1)
            page = _page(lanes, limit, lambda lane: [_iso(lane.create_time), lane.lane_id])
            details = await self._lane_details(reader, page.items)
            capacity = await self._capacity(reader, coordinator)
        for detail in details:
            detail.capacity = capacity
        return Page(details, page.next_page_token)

    async def get_item(
        self, principal: Principal, coordinator_id: str, lane_id: str, item_id: str
    ) -> ItemDetail:
        async with self.store.read() as reader:
            coordinator = await self._readable(reader, principal, coordinator_id)
            item = await reader.get_item(item_id)
            if item is None or item.coordinator_id != coordinator_id or item.lane_id != lane_id:
                raise NotFound(f"item {item_id} not found")
            attempts = await reader.item_attempts([item_id])
            return ItemDetail(
                item=item, attempts=attempts, capacity=await self._capacity(reader, coordinator)
            )

    async def _set_lane_hold(self, tx: Tx, lane: Lane, effects: _Effects) -> None:
        """Mirror the lane's pause and open blockers onto its items (the claim path reads it)."""
        blockers = await tx.lane_blockers([lane.lane_id])
        held = lane.paused or any(b.open for b in blockers)
        items = await tx.lane_items([lane.lane_id])
        changed = [i for i in items if i.held != held]
        for item in changed:
            item.held = held
            if not held and item.state == ItemState.QUEUED:
                effects.ready_classes.add(item.worker_class)
        if changed:
            await tx.update_items(changed)

    async def pause_lane(
        self, principal: Principal, coordinator_id: str, lane_id: str, reason: str, pause: bool
    ) -> LaneDetail:
        async with self._command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            lane = await self._lane_for_update(tx, coordinator_id, lane_id)
            if lane.state != LaneState.ACTIVE:
                raise IllegalTransition(f"the lane is {lane.state.value}")
            if lane.paused != pause:
                lane.paused = pause
                lane.paused_time = tx.now if pause else None
                lane.update_time = tx.now
                await tx.update_lane(lane)
                await self._set_lane_hold(tx, lane, effects)
                event = EventType.LANE_PAUSED if pause else EventType.LANE_RESUMED
                await self._append(
                    tx,
                    coordinator,
                    [NewEvent(event, lane_id=lane_id, data={"reason": reason} if reason else {})],
                    principal.name,
                )
            return await self._lane_detail(tx, lane, with_attempts=True)

    async def cancel_lane(
        self, principal: Principal, coordinator_id: str, lane_id: str, reason: str
    ) -> LaneDetail:
        async with self._command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            lane = await self._lane_for_update(tx, coordinator_id, lane_id)
            if lane.state == LaneState.CANCELLED:
                return await self._lane_detail(tx, lane, with_attempts=True)
            if lane.state != LaneState.ACTIVE:
                raise IllegalTransition(f"the lane is {lane.state.value}")
            events: list[NewEvent] = []
            items = await tx.lane_items([lane_id])
            await self._cancel_items(tx, items, events, effects, reason)
            lane.state = LaneState.CANCELLED
            lane.close_reason = reason or "cancelled"
            lane.update_time = tx.now
            await tx.update_lane(lane)
            events.append(
                NewEvent(EventType.LANE_CANCELLED, lane_id=lane_id, data={"reason": reason})
            )
            await self._append(tx, coordinator, events, principal.name)
            return await self._lane_detail(tx, lane, with_attempts=True)

    async def _cancel_items(
        self,
        tx: Tx,
        items: Sequence[Item],
        events: list[NewEvent],
        effects: _Effects,
        reason: str,
    ) -> None:
        open_items = [i for i in items if i.state not in TERMINAL_ITEM_STATES]
        ended: list[Attempt] = []
        for item in open_items:
            if not item.current_lease_id:
                continue
            attempt = await tx.get_attempt_for_update(item.current_lease_id)
            if attempt is not None and attempt.live:
                # The worker did nothing wrong: its attempt is released, not burned.
                attempt.status = AttemptStatus.RELEASED
                attempt.counted = False
                attempt.end_time = tx.now
                item.attempt_count = max(item.attempt_count - 1, 0)
                ended.append(attempt)
                effects.ready_classes.add(attempt.worker_class)
        if ended:
            await tx.update_attempts(ended)
        for item in open_items:
            item.state = ItemState.CANCELLED
            item.current_lease_id = ""
            item.update_time = tx.now
            events.append(
                NewEvent(
                    EventType.ITEM_CANCELLED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    data={"reason": reason} if reason else {},
                )
            )
        if open_items:
            await tx.update_items(open_items)
            await tx.resolve_escalations(
                open_items[0].coordinator_id, [i.item_id for i in open_items], tx.now
            )

    async def add_blocker(
        self, principal: Principal, coordinator_id: str, lane_id: str, reason: str
    ) -> LaneDetail:
        async with self._command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            lane = await self._lane_for_update(tx, coordinator_id, lane_id)
            if lane.state != LaneState.ACTIVE:
                raise IllegalTransition(f"the lane is {lane.state.value}")
            blocker = Blocker(
                blocker_id=new_id("blk"),
                lane_id=lane_id,
                reason=reason,
                open=True,
                create_time=tx.now,
            )
            await tx.insert_blocker(coordinator_id, blocker)
            await self._set_lane_hold(tx, lane, effects)
            event = NewEvent(
                EventType.BLOCKER_ADDED, lane_id=lane_id, data={"blockerId": blocker.blocker_id}
            )
            await self._lane_changed(tx, coordinator, lane, event, principal)
            return await self._lane_detail(tx, lane, with_attempts=True)

    async def resolve_blocker(
        self, principal: Principal, coordinator_id: str, lane_id: str, blocker_id: str
    ) -> LaneDetail:
        async with self._command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            effects,
        ):
            lane = await self._lane_for_update(tx, coordinator_id, lane_id)
            blockers = await tx.lane_blockers([lane_id])
            blocker = next((b for b in blockers if b.blocker_id == blocker_id), None)
            if blocker is None:
                raise NotFound(f"blocker {blocker_id} not found")
            if blocker.open:
                blocker.open = False
                blocker.resolve_time = tx.now
                await tx.update_blocker(blocker)
                await self._set_lane_hold(tx, lane, effects)
                event = NewEvent(
                    EventType.BLOCKER_RESOLVED, lane_id=lane_id, data={"blockerId": blocker_id}
                )
                await self._lane_changed(tx, coordinator, lane, event, principal)
            return await self._lane_detail(tx, lane, with_attempts=True)

    async def link_ticket(
        self, principal: Principal, coordinator_id: str, lane_id: str, ticket: Ticket
    ) -> LaneDetail:
        async with self._command(principal, coordinator_id, Access.WRITE) as (
            tx,
            coordinator,
            _effects,
        ):
            lane = await self._lane_for_update(tx, coordinator_id, lane_id)
            existing = await tx.lane_tickets([lane_id])
            if not any(t.tracker == ticket.tracker and t.key == ticket.key for t in existing):
                ticket.lane_id = lane_id
                await tx.insert_ticket(coordinator_id, ticket)
                event = NewEvent(
                    EventType.TICKET_LINKED,
                    lane_id=lane_id,
                    data={"tracker": ticket.tracker, "key": ticket.key},
                )
                await self._lane_changed(tx, coordinator, lane, event, principal)
            return await self._lane_detail(tx, lane, with_attempts=True)

    async def _lane_changed(
        self, tx: Tx, coordinator: Coordinator, lane: Lane, event: NewEvent, principal: Principal
    ) -> None:
        """Stamp a lane changed by a command and record the event that says how."""
        lane.update_time = tx.now
        await tx.update_lane(lane)
        await self._append(tx, coordinator, [event], principal.name)

    # ------------------------------------------------------------------ human decisions

    async def decide_item(
        self,
        principal: Principal,
        coordinator_id: str,
        lane_id: str,
        item_id: str,
        decision: str,
        note: str,
    ) -> ItemDetail:
        """approve | deny | resume | retry | cancel. All but cancel are for humans only."""
        access = Access.WRITE if decision == "cancel" else Access.DECIDE
        async with self._command(principal, coordinator_id, access) as (tx, coordinator, effects):
            if access == Access.DECIDE and not principal.is_human:
                # authorize() already refuses keys; this guard keeps it true for any future
                # principal kind: only a human ever decides.
                raise PermissionDenied("only a human may " + decision)
            item = await tx.get_item(item_id)
            if item is None or item.coordinator_id != coordinator_id or item.lane_id != lane_id:
                raise NotFound(f"item {item_id} not found")
            lane = await self._lane_for_update(tx, coordinator_id, lane_id)
            if lane.state != LaneState.ACTIVE and decision in ("approve", "resume", "retry"):
                raise IllegalTransition(f"the lane is {lane.state.value}")
            events: list[NewEvent] = []
            data = {"note": note} if note else {}
            if decision == "approve":
                if item.state != ItemState.AWAITING_APPROVAL:
                    raise IllegalTransition(
                        f"the item is {item.state.value}, not AWAITING_APPROVAL"
                    )
                self._queue(tx, item, events, effects, None, EventType.ITEM_APPROVED, data)
            elif decision == "deny":
                if item.state != ItemState.AWAITING_APPROVAL:
                    raise IllegalTransition(
                        f"the item is {item.state.value}, not AWAITING_APPROVAL"
                    )
                item.state = ItemState.CANCELLED
                item.update_time = tx.now
                events.append(
                    NewEvent(EventType.ITEM_DENIED, lane_id=lane_id, item_id=item_id, data=data)
                )
                # Stored first, so closing the lane sees the denied item as already final.
                await tx.update_items([item])
                if lane.state == LaneState.ACTIVE:
                    await self._close_lane(
                        tx, lane, LaneState.CLOSED_OUT, "denied", events, effects
                    )
            elif decision == "resume":
                if item.state != ItemState.STOPPED:
                    raise IllegalTransition(f"the item is {item.state.value}, not STOPPED")
                item.stop_reason = ""
                self._queue(tx, item, events, effects, None, EventType.ITEM_RESUMED, data)
            elif decision == "retry":
                if item.state != ItemState.DEAD:
                    raise IllegalTransition(f"the item is {item.state.value}, not DEAD")
                item.attempt_count = 0
                item.dead_letter_reason = None
                self._queue(tx, item, events, effects, None, EventType.ITEM_REDRIVEN, data)
            elif decision == "cancel":
                if item.state in TERMINAL_ITEM_STATES:
                    if item.state == ItemState.CANCELLED:
                        return ItemDetail(item=item, attempts=await tx.item_attempts([item_id]))
                    raise IllegalTransition(f"the item is already {item.state.value}")
                await self._cancel_items(tx, [item], events, effects, note)
                if lane.state == LaneState.ACTIVE:
                    await self._after_cancel(tx, lane, item, events, effects)
            else:
                raise InvalidArgument.single("decision", f"unknown decision {decision!r}")
            if decision != "cancel":
                await tx.update_items([item])
            await self._append(tx, coordinator, events, principal.name)
            return ItemDetail(item=item, attempts=await tx.item_attempts([item_id]))

    # ------------------------------------------------------------------ workers

    async def report_worker(
        self, principal: Principal, coordinator_id: str, worker: Worker
    ) -> Worker:
        async with self._command(principal, coordinator_id, Access.LEASE) as (
            tx,
            coordinator,
            effects,
        ):
            if worker.worker_class not in coordinator.config.class_capacity:
                raise InvalidArgument.single(
                    "worker.worker_class", f"unknown worker class {worker.worker_class!r}"
                )
            existing = await tx.get_worker(coordinator_id, worker.worker_id)
            if existing is None and await tx.count_workers(coordinator_id) >= WORKER_POOL_CAP:
                raise PoolFull(f"the worker pool is capped at {WORKER_POOL_CAP} workers")
            worker.coordinator_id = coordinator_id
            worker.principal = principal.name
            worker.observe_time = tx.now
            worker.create_time = existing.create_time if existing else tx.now
            worker.last_ask_time = existing.last_ask_time if existing else None
            await tx.upsert_worker(worker)
            if existing is None:
                await self._append(
                    tx,
                    coordinator,
                    [
                        NewEvent(
                            EventType.WORKER_REGISTERED,
                            data={"workerId": worker.worker_id, "workerClass": worker.worker_class},
                        )
                    ],
                    principal.name,
                )
            # New labels may satisfy a placement: let waiting workers look again.
            effects.ready_classes.add(worker.worker_class)
            return worker

    async def list_workers(
        self, principal: Principal, coordinator_id: str, size: int, token: str
    ) -> Page[Worker]:
        limit = page_size(size)
        after = decode_page_token(token)
        async with self.store.read() as reader:
            await self._readable(reader, principal, coordinator_id)
            workers = await reader.list_workers(
                coordinator_id, str(after[0]) if after else "", limit + 1
            )
        return _page(workers, limit, lambda w: [w.worker_id])

    async def lease(
        self,
        principal: Principal,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        max_items: int,
        lease_seconds: int,
        wait_seconds: int,
        run_identity: JsonObject | None,
    ) -> list[GrantedLease]:
        """Lease up to ``max_items`` ready items; long-poll up to ``wait_seconds``."""
        if run_identity is not None:
            self._check_run_identity(run_identity, "run_identity")
        attempt = functools.partial(
            self._lease_once,
            principal,
            coordinator_id,
            worker_id,
            worker_class,
            max_items,
            lease_seconds,
            run_identity,
        )
        granted = await attempt()
        if granted or wait_seconds <= 0:
            return granted
        # The long-poll is bounded in real time (it is about the call, not domain time).
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        async with self.bus.subscribe(coordinator_id) as subscription:
            while True:
                # Look again after subscribing: work committed in between is not missed.
                granted = await attempt()
                remaining = deadline - loop.time()
                if granted or remaining <= 0:
                    return granted
                await self._wait_for_work(subscription, coordinator_id, worker_class, deadline)

    async def _wait_for_work(
        self, subscription: Subscription, coordinator_id: str, worker_class: str, deadline: float
    ) -> None:
        """Sleep until a notification for this class, a retry backoff running out, the backstop
        poll, or the deadline, whichever comes first."""
        loop = asyncio.get_running_loop()
        until = deadline - loop.time()
        async with self.store.read() as reader:
            next_time = await reader.next_not_before(coordinator_id, worker_class, self.clock.now())
        if next_time is not None:
            until = min(until, (next_time - self.clock.now()).total_seconds() + 0.001)
        wake = loop.time() + max(0.0, min(until, BACKSTOP_POLL_SECONDS))
        while (timeout := wake - loop.time()) > 0:
            note = await subscription.next(timeout)
            if note is None or not note.worker_classes or worker_class in note.worker_classes:
                return

    async def _lease_once(
        self,
        principal: Principal,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        max_items: int,
        lease_seconds: int,
        run_identity: JsonObject | None,
    ) -> list[GrantedLease]:
        # One claim per (work coordinator, class) at a time in this process. When a slot frees,
        # every waiter of the class wakes; looking one after another, the second already reads
        # the class as full and skips the write, instead of all of them queueing on the
        # coordinator's row lock (which also delays the Start/Complete calls behind them).
        # Other processes still race; _claim's locking keeps that safe.
        lock = self._claim_locks.setdefault((coordinator_id, worker_class), asyncio.Lock())
        async with lock:
            return await self._lease_once_unlocked(
                principal,
                coordinator_id,
                worker_id,
                worker_class,
                max_items,
                lease_seconds,
                run_identity,
            )

    async def _lease_once_unlocked(
        self,
        principal: Principal,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        max_items: int,
        lease_seconds: int,
        run_identity: JsonObject | None,
    ) -> list[GrantedLease]:
        now = self.clock.now()
        async with self.store.read() as reader:
            coordinator = await reader.get_coordinator(coordinator_id)
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            authorize(principal, coordinator, Access.LEASE)
            await self._require_enabled(reader, coordinator)
            if worker_class not in coordinator.config.class_capacity:
                raise InvalidArgument.single(
                    "worker_class", f"unknown worker class {worker_class!r}"
                )
            worker = await reader.get_worker(coordinator_id, worker_id)
            ready = await reader.has_ready(coordinator_id, worker_class, now)
            if ready:
                # A full class cannot grant anything: skip the write transaction (and its wait
                # for the coordinator's row lock). Otherwise every waiter woken by a notification
                # queues on that lock only to find no free slot (a thundering herd). _claim
                # re-counts under the lock, so this early answer is only ever an optimisation.
                live = await reader.live_attempts(coordinator_id, worker_class)
                ready = len(live) < coordinator.config.class_capacity[worker_class]
        if worker is not None and worker.worker_class != worker_class:
            raise InvalidArgument.single(
                "worker_class",
                f"worker {worker_id} is registered with class {worker.worker_class!r}",
            )
        if not ready:
            if not _ask_is_fresh(worker, now):
                async with self.store.write() as tx:
                    await self._note_ask(
                        tx, coordinator_id, worker_id, worker_class, principal, worker
                    )
            return []
        async with self._command(principal, coordinator_id, Access.LEASE) as (
            tx,
            coordinator,
            effects,
        ):
            if not _ask_is_fresh(worker, now):
                await self._note_ask(tx, coordinator_id, worker_id, worker_class, principal, worker)
            return await self._claim(
                tx,
                coordinator,
                principal,
                worker_id,
                worker_class,
                worker,
                max_items,
                lease_seconds,
                run_identity,
                effects,
            )

    async def _note_ask(
        self,
        tx: Tx,
        coordinator_id: str,
        worker_id: str,
        worker_class: str,
        principal: Principal,
        worker: Worker | None,
    ) -> None:
        if worker is None and await tx.count_workers(coordinator_id) >= WORKER_POOL_CAP:
            raise PoolFull(f"the worker pool is capped at {WORKER_POOL_CAP} workers")
        await tx.touch_worker_ask(coordinator_id, worker_id, worker_class, principal.name)

    async def _claim(
        self,
        tx: Tx,
        coordinator: Coordinator,
        principal: Principal,
        worker_id: str,
        worker_class: str,
        worker: Worker | None,
        max_items: int,
        lease_seconds: int,
        run_identity: JsonObject | None,
        effects: _Effects,
    ) -> list[GrantedLease]:
        cid = coordinator.coordinator_id
        capacity = coordinator.config.class_capacity[worker_class]
        live = await tx.live_attempts(cid, worker_class)
        wanted = min(max_items, capacity - len(live))
        if wanted <= 0:
            return []
        chosen: list[Item] = []
        taken_keys: set[str] = set()
        cursor: tuple[int, int] | None = None
        scan = max(wanted * CLAIM_SCAN_FACTOR, 32)
        while len(chosen) < wanted:
            candidates = await tx.claim_candidates(cid, worker_class, tx.now, cursor, scan)
            if not candidates:
                break
            cursor = (candidates[-1].priority, candidates[-1].seq)
            keys = sorted({k for c in candidates for k in _exclusive_keys(c)} - taken_keys)
            held = await tx.live_exclusive_holders(cid, keys) if keys else {}
            for item in candidates:
                item_keys = _exclusive_keys(item)
                if any(k in taken_keys or k in held for k in item_keys):
                    continue  # no head-of-line blocking: later items still get their turn
                if rules.placement_problems(item.placement):
                    continue  # malformed placement: skipped here, reported by why
                if not rules.placement_matches(item.placement, worker_id, worker):
                    continue
                chosen.append(item)
                taken_keys.update(item_keys)
                if len(chosen) == wanted:
                    break
            if len(candidates) < scan:
                break
        if not chosen:
            return []
        events: list[NewEvent] = []
        attempts: list[Attempt] = []
        granted: list[GrantedLease] = []
        lanes: dict[str, Lane] = {}
        checkpoints: dict[str, JsonObject | None] = {}
        continued = [i.continues_lease_id for i in chosen if i.continues_lease_id]
        for lease_id in continued:
            previous = await tx.get_attempt(lease_id)
            checkpoints[lease_id] = previous.checkpoint if previous else None
        status = AttemptStatus.RUNNING if run_identity is not None else AttemptStatus.LEASED
        for item in chosen:
            if item.lane_id not in lanes:
                lane = await tx.get_lane(item.lane_id)
                assert lane is not None
                lanes[item.lane_id] = lane
            token = new_secret("wcl_", self.tokens)
            item.attempt_count += 1
            item.attempt_seq += 1
            attempt = Attempt(
                lease_id=new_id("ls"),
                coordinator_id=cid,
                item_id=item.item_id,
                lane_id=item.lane_id,
                attempt=item.attempt_seq,
                status=status,
                token_hash=hash_secret(token),
                worker_id=worker_id,
                worker_class=worker_class,
                principal=principal.name,
                lease_seconds=lease_seconds,
                lease_expire_time=rules.lease_expiry(tx.now, lease_seconds),
                create_time=tx.now,
                start_time=tx.now if run_identity is not None else None,
                run_identity=dict(run_identity) if run_identity is not None else None,
                continues_lease_id=item.continues_lease_id,
                exclusive_key=",".join(_exclusive_keys(item)),
            )
            item.state = ItemState.RUNNING if run_identity is not None else ItemState.LEASED
            item.current_lease_id = attempt.lease_id
            item.not_before = None
            item.update_time = tx.now
            attempts.append(attempt)
            events.append(
                NewEvent(
                    EventType.ITEM_LEASED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=attempt.lease_id,
                    data={"workerId": worker_id, "attempt": attempt.attempt},
                )
            )
            if run_identity is not None:
                events.append(
                    NewEvent(
                        EventType.ITEM_STARTED,
                        lane_id=item.lane_id,
                        item_id=item.item_id,
                        lease_id=attempt.lease_id,
                    )
                )
            granted.append(
                GrantedLease(
                    attempt=attempt,
                    lease_token=token,
                    item=item,
                    lane=lanes[item.lane_id],
                    checkpoint=checkpoints.get(item.continues_lease_id),
                )
            )
        await tx.insert_attempts(attempts)
        await tx.update_items(chosen)
        await tx.resolve_escalations(cid, [i.item_id for i in chosen], tx.now)
        await self._append(tx, coordinator, events, principal.name)
        effects.changed = True
        return granted

    def _check_run_identity(self, identity: JsonObject, path: str) -> None:
        account = str(identity.get("account", ""))
        if account and looks_like_credential(account):
            raise InvalidArgument.single(
                f"{path}.account", "looks like a credential; give a non-secret account label"
            )
        started = identity.get("started_at")
        if isinstance(started, str):
            when = datetime.fromisoformat(started.replace("Z", "+00:00"))
            if when > self.clock.now() + timedelta(seconds=1):
                raise InvalidArgument.single(
                    f"{path}.started_at", "must not be after the server's time"
                )

    @asynccontextmanager
    async def fenced(
        self, principal: Principal, coordinator_id: str, lease_id: str, lease_token: str
    ) -> AsyncIterator[tuple[Tx, Coordinator, _Effects, Attempt, Item]]:
        opener = functools.partial(self._open_for_workers, coordinator_id)
        async with self._worker_writes.member(coordinator_id, opener) as (
            tx,
            coordinator,
            effects,
        ):
            authorize(principal, coordinator, Access.LEASE)
            attempt = await tx.get_attempt_for_update(lease_id)
            if attempt is not None and attempt.coordinator_id != coordinator_id:
                attempt = None
            item = await tx.get_item(attempt.item_id) if attempt is not None else None
            rules.fence(attempt, item, lease_token, tx.now)
            assert attempt is not None and item is not None
            yield tx, coordinator, effects, attempt, item

    async def start(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        run_identity: JsonObject,
    ) -> Attempt:
        self._check_run_identity(run_identity, "run_identity")
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            if attempt.status == AttemptStatus.RUNNING:
                if attempt.run_identity == run_identity:
                    return attempt  # a retried Start: idempotent
                raise IllegalTransition(
                    "the attempt already started; its run identity is immutable"
                )
            attempt.status = AttemptStatus.RUNNING
            attempt.run_identity = dict(run_identity)
            attempt.start_time = tx.now
            item.state = ItemState.RUNNING
            item.update_time = tx.now
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self._append(
                tx,
                coordinator,
                [
                    NewEvent(
                        EventType.ITEM_STARTED,
                        lane_id=item.lane_id,
                        item_id=item.item_id,
                        lease_id=lease_id,
                    )
                ],
                principal.name,
            )
            effects.changed = True
            return attempt

    async def heartbeat(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        progress: str,
    ) -> datetime:
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            _coordinator,
            _effects,
            attempt,
            _item,
        ):
            attempt.lease_expire_time = rules.lease_expiry(tx.now, attempt.lease_seconds)
            if progress:
                attempt.progress = progress
            await tx.update_attempts([attempt])
            return attempt.lease_expire_time

    async def complete(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        evidence: JsonObject,
    ) -> Attempt:
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            rules.require_running(attempt, "complete")
            if item.kind == ItemKind.REVIEW and evidence.get("verdict") not in ("PASS", "FAIL"):
                raise InvalidArgument.single("evidence.verdict", "is required for a REVIEW item")
            if item.kind == ItemKind.SHIP and not evidence.get("receipt"):
                raise InvalidArgument.single("evidence.receipt", "is required for a SHIP item")
            attempt.status = AttemptStatus.COMPLETED
            attempt.end_time = tx.now
            item.state = ItemState.SUCCEEDED
            item.evidence = evidence
            item.current_lease_id = ""
            item.update_time = tx.now
            events = [
                NewEvent(
                    EventType.ITEM_SUCCEEDED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={"attempt": attempt.attempt},
                )
            ]
            effects.ready_classes.add(attempt.worker_class)  # a capacity slot is free
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self._after_success(tx, coordinator, item, events, effects)
            await self._append(tx, coordinator, events, principal.name)
            return attempt

    async def _after_success(
        self,
        tx: Tx,
        coordinator: Coordinator,
        done: Item,
        events: list[NewEvent],
        effects: _Effects,
    ) -> None:
        """Release dependents whose dependencies all succeeded; finish the lane when done.

        On the hot path (every Complete): only the lane's item states are read, and full
        items only for those still WAITING.
        """
        lane = await tx.get_lane(done.lane_id)
        assert lane is not None
        states = await tx.lane_item_states(lane.lane_id)
        states[done.key] = ItemState.SUCCEEDED
        if ItemState.WAITING in states.values():
            changed: list[Item] = []
            for item in await tx.waiting_items(lane.lane_id):
                if done.key in item.depends_on and all(
                    states.get(dep) == ItemState.SUCCEEDED for dep in item.depends_on
                ):
                    self._make_ready(tx, coordinator, item, events, effects)
                    changed.append(item)
            if changed:
                await tx.update_items(changed)
        if lane.state != LaneState.ACTIVE:
            return
        if lane.template == Template.CUSTOM:
            if all(state == ItemState.SUCCEEDED for state in states.values()):
                await self._close_lane(tx, lane, LaneState.DONE, "", events, effects)
            return
        # A STANDARD lane holds a handful of items: the workflow reads them all.
        items = await tx.lane_items([lane.lane_id])
        policy = workflow.review_policy_for(lane, coordinator.config.review_policy)
        decision = workflow.after_success(lane, items, done, lane.worker_classes, policy)
        events.extend(decision.events)
        if decision.fail_round:
            lane.fail_rounds += 1
            lane.update_time = tx.now
            await tx.update_lane(lane)
        if decision.new_items:
            others = [i for i in items if i.item_id != done.item_id] + [done]
            await self._new_items(
                tx, coordinator, lane, decision.new_items, events, effects, existing=others
            )
        if decision.lane_state is not None:
            if decision.receipt is not None:
                lane.receipt = decision.receipt
            await self._close_lane(
                tx, lane, decision.lane_state, decision.close_reason, events, effects
            )

    async def _after_cancel(
        self, tx: Tx, lane: Lane, cancelled: Item, events: list[NewEvent], effects: _Effects
    ) -> None:
        """A cancelled item can never satisfy its dependents, so they are cancelled too; a
        lane with nothing left to run finishes instead of staying ACTIVE with nothing to do."""
        if lane.template == Template.STANDARD:
            # The workflow cannot continue past a cancelled stage: like a denial, the lane
            # closes out for a human.
            reason = f"{cancelled.kind.value.lower()} cancelled"
            await self._close_lane(tx, lane, LaneState.CLOSED_OUT, reason, events, effects)
            return
        items = await tx.lane_items([lane.lane_id])
        dead_keys = {i.key for i in items if i.state == ItemState.CANCELLED}
        dependents: list[Item] = []
        changed = True
        while changed:
            changed = False
            for item in items:
                if (
                    item.state == ItemState.WAITING
                    and item not in dependents
                    and dead_keys & set(item.depends_on)
                ):
                    dependents.append(item)
                    dead_keys.add(item.key)
                    changed = True
        if dependents:
            await self._cancel_items(
                tx, dependents, events, effects, f"depends on cancelled {cancelled.key}"
            )
        finals = {ItemState.SUCCEEDED, ItemState.CANCELLED}
        if all(i.state in finals or i in dependents for i in items):
            if any(i.state == ItemState.SUCCEEDED for i in items):
                await self._close_lane(tx, lane, LaneState.DONE, "", events, effects)
            else:
                lane.state = LaneState.CANCELLED
                lane.close_reason = "every item was cancelled"
                lane.update_time = tx.now
                await tx.update_lane(lane)
                events.append(NewEvent(EventType.LANE_CANCELLED, lane_id=lane.lane_id))

    async def _close_lane(
        self,
        tx: Tx,
        lane: Lane,
        state: LaneState,
        reason: str,
        events: list[NewEvent],
        effects: _Effects,
    ) -> None:
        """Finish a lane: LIVE (and close its tickets), DONE, or CLOSED_OUT for a human."""
        lane.state = state
        lane.close_reason = reason
        lane.update_time = tx.now
        await tx.update_lane(lane)
        if state == LaneState.LIVE:
            events.append(NewEvent(EventType.LANE_LIVE, lane_id=lane.lane_id))
            await self._open_ticket_closures(tx, lane, effects)
        elif state == LaneState.DONE:
            events.append(NewEvent(EventType.LANE_DONE, lane_id=lane.lane_id))
        elif state == LaneState.CLOSED_OUT:
            # Closed out is terminal: what was still open in the lane stops with it.
            await self._cancel_items(
                tx,
                await tx.lane_items([lane.lane_id]),
                events,
                effects,
                f"lane closed out: {reason}",
            )
            events.append(
                NewEvent(EventType.LANE_CLOSED_OUT, lane_id=lane.lane_id, data={"reason": reason})
            )
            effects.note(DigestKind.CLOSED_OUT, lane.lane_id, reason=reason)

    async def fail(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        error: JsonObject,
    ) -> Attempt:
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            attempt.status = AttemptStatus.FAILED
            attempt.end_time = tx.now
            attempt.error = error
            item.last_error = error
            events = [
                NewEvent(
                    EventType.ITEM_FAILED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={
                        "type": str(error.get("type", "")),
                        "retryable": bool(error.get("retryable", False)),
                        "attempt": attempt.attempt,
                    },
                )
            ]
            await tx.update_attempts([attempt])
            policy = await self._policy_for(tx, coordinator, item)
            self._retry_or_dead_letter(
                tx, item, policy, bool(error.get("retryable", False)), events, effects
            )
            effects.ready_classes.add(attempt.worker_class)
            await tx.update_items([item])
            await self._append(tx, coordinator, events, principal.name)
            return attempt

    async def _policy_for(
        self, reader: Reader, coordinator: Coordinator, item: Item
    ) -> RetryPolicy:
        lane = await reader.get_lane(item.lane_id)
        lane_policy = lane.retry_policy if lane else RetryPolicy()
        return rules.effective_retry_policy(
            item.retry_policy, lane_policy, coordinator.config.retry_policy
        )

    def _retry_or_dead_letter(
        self,
        tx: Tx,
        item: Item,
        policy: RetryPolicy,
        retryable: bool,
        events: list[NewEvent],
        effects: _Effects,
    ) -> None:
        item.current_lease_id = ""
        item.update_time = tx.now
        if not retryable:
            self._dead_letter(item, DeadLetterReason.NON_RETRYABLE, events, effects)
        elif item.sensitive:
            self._dead_letter(item, DeadLetterReason.POLICY, events, effects)
        elif not rules.attempts_remaining(policy, item):
            self._dead_letter(item, DeadLetterReason.EXHAUSTED, events, effects)
        else:
            delay = rules.retry_delay(policy, item.attempt_count, self.uniform)
            not_before = tx.now + timedelta(seconds=delay)
            self._queue(
                tx,
                item,
                events,
                effects,
                not_before,
                EventType.RETRY_SCHEDULED,
                {"attempts": item.attempt_count, "delaySeconds": round(delay, 3)},
            )

    def _dead_letter(
        self, item: Item, reason: DeadLetterReason, events: list[NewEvent], effects: _Effects
    ) -> None:
        item.state = ItemState.DEAD
        item.dead_letter_reason = reason
        events.append(
            NewEvent(
                EventType.ITEM_DEAD_LETTERED,
                lane_id=item.lane_id,
                item_id=item.item_id,
                data={"reason": reason.value, "attempts": item.attempt_count},
            )
        )
        effects.note(DigestKind.DEAD_LETTERED, item.lane_id, item.item_id, reason.value)

    async def checkpoint(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        checkpoint: JsonObject,
    ) -> Attempt:
        blocked = str(checkpoint.get("blocked_reason") or "")
        if blocked and blocked not in rules.CHECKPOINT_BLOCKED_REASONS:
            raise InvalidArgument.single(
                "checkpoint.blocked_reason",
                "must be one of " + ", ".join(sorted(rules.CHECKPOINT_BLOCKED_REASONS)),
            )
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            attempt.status = AttemptStatus.CHECKPOINTED
            attempt.end_time = tx.now
            attempt.checkpoint = checkpoint
            # A checkpoint is progress, not failure: it does not burn the retry budget.
            attempt.counted = False
            item.attempt_count = max(item.attempt_count - 1, 0)
            item.continues_lease_id = lease_id
            events = [
                NewEvent(
                    EventType.ITEM_CHECKPOINTED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={"blocked": bool(blocked)},
                )
            ]
            if blocked:
                item.update_time = tx.now
                self._stop(item, f"checkpoint blocked: {blocked}", events, effects)
            else:
                self._queue(tx, item, events, effects, None)
            effects.ready_classes.add(attempt.worker_class)
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self._append(tx, coordinator, events, principal.name)
            return attempt

    async def release(
        self,
        principal: Principal,
        coordinator_id: str,
        lease_id: str,
        lease_token: str,
        reason: str,
    ) -> Attempt:
        async with self.fenced(principal, coordinator_id, lease_id, lease_token) as (
            tx,
            coordinator,
            effects,
            attempt,
            item,
        ):
            attempt.status = AttemptStatus.RELEASED
            attempt.end_time = tx.now
            attempt.counted = False
            item.attempt_count = max(item.attempt_count - 1, 0)
            events = [
                NewEvent(
                    EventType.ITEM_RELEASED,
                    lane_id=item.lane_id,
                    item_id=item.item_id,
                    lease_id=lease_id,
                    data={"reason": reason} if reason else {},
                )
            ]
            self._queue(tx, item, events, effects, None)
            await tx.update_attempts([attempt])
            await tx.update_items([item])
            await self._append(tx, coordinator, events, principal.name)
            return attempt

    # ------------------------------------------------------------------ tickets, pending actions

    async def _open_ticket_closures(self, tx: Tx, lane: Lane, effects: _Effects) -> None:
        """Record the intent to close each linked ticket, durably, in the LIVE transaction.

        The tracker is called only after commit (never inside a transaction); a crash in
        between leaves an OPEN action that recovery passes pick up, so nothing is lost.
        """
        coordinator = tx.coordinator
        assert coordinator is not None
        tickets = await tx.lane_tickets([lane.lane_id])
        actions = [
            PendingAction(
                action_id=new_id("pa"),
                coordinator_id=lane.coordinator_id,
                lane_id=lane.lane_id,
                kind=CLOSE_TICKET,
                state=PendingActionState.OPEN,
                owner=coordinator.config.digest_owner,
                create_time=tx.now,
                update_time=tx.now,
                ticket_tracker=ticket.tracker,
                ticket_key=ticket.key,
                next_attempt_time=tx.now,
            )
            for ticket in tickets
            if ticket.state != TICKET_CLOSED
        ]
        if actions:
            await tx.insert_pending_actions(actions)
            effects.close_tickets = True

    async def _close_tickets_now(self, coordinator_id: str) -> None:
        await self.run_pending_actions(RECOVERY, coordinator_id)

    async def run_pending_actions(
        self, principal: Principal, coordinator_id: str
    ) -> tuple[int, int]:
        """Try every due pending action once; returns (attempted, succeeded)."""
        async with self.store.read() as reader:
            due = await reader.due_pending_actions(coordinator_id, self.clock.now(), 100)
        attempted = succeeded = 0
        for action in due:
            tracker = self.trackers.get(action.ticket_tracker)
            error = ""
            if tracker is None:
                error = f"no tracker is configured for {action.ticket_tracker!r}"
            else:
                try:
                    await tracker.close(action.ticket_key)
                except TrackerError as exc:
                    error = str(exc) or type(exc).__name__
            attempted += 1
            if await self._record_action(principal, coordinator_id, action, error):
                succeeded += 1
        return attempted, succeeded

    async def _record_action(
        self, principal: Principal, coordinator_id: str, tried: PendingAction, error: str
    ) -> bool:
        async with self._command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            effects,
        ):
            action = await tx.get_pending_action(tried.action_id)
            if action is None or action.state != PendingActionState.OPEN:
                return False  # resolved meanwhile (by a human or another replica)
            action.attempts += 1
            action.update_time = tx.now
            events: list[NewEvent] = []
            ref = {
                "actionId": action.action_id,
                "tracker": action.ticket_tracker,
                "key": action.ticket_key,
            }
            if not error:
                action.state = PendingActionState.SUCCEEDED
                action.next_attempt_time = None
                ticket = Ticket(
                    lane_id=action.lane_id,
                    tracker=action.ticket_tracker,
                    key=action.ticket_key,
                    state=TICKET_CLOSED,
                    observe_time=tx.now,
                )
                await tx.update_ticket(coordinator_id, ticket)
                events.append(NewEvent(EventType.TICKET_CLOSED, lane_id=action.lane_id, data=ref))
                if action.attempts > 1:
                    events.append(
                        NewEvent(
                            EventType.PENDING_ACTION_RESOLVED, lane_id=action.lane_id, data=ref
                        )
                    )
            else:
                action.last_error = error[:1000]
                delay = rules.retry_delay(PENDING_ACTION_RETRY, action.attempts, self.uniform)
                action.next_attempt_time = tx.now + timedelta(seconds=delay)
                if action.attempts == 1:
                    events.append(
                        NewEvent(EventType.PENDING_ACTION_OPENED, lane_id=action.lane_id, data=ref)
                    )
                    effects.note(
                        DigestKind.CLOSE_OUT_ACTION_FAILED,
                        action.lane_id,
                        reason=action.last_error,
                        action_id=action.action_id,
                    )
                else:
                    events.append(
                        NewEvent(
                            EventType.PENDING_ACTION_RETRIED,
                            lane_id=action.lane_id,
                            data={**ref, "attempts": action.attempts},
                        )
                    )
            await tx.update_pending_action(action)
            await self._append(tx, coordinator, events, principal.name)
            return not error

    async def list_pending_actions(
        self,
        principal: Principal,
        coordinator_id: str,
        state: PendingActionState | None,
        size: int,
        token: str,
    ) -> Page[PendingAction]:
        limit = page_size(size)
        after = decode_page_token(token)
        async with self.store.read() as reader:
            await self._readable(reader, principal, coordinator_id)
            actions = await reader.list_pending_actions(
                coordinator_id, state, str(after[0]) if after else "", limit + 1
            )
        return _page(actions, limit, lambda a: [a.action_id])

    async def resolve_pending_action(
        self, principal: Principal, coordinator_id: str, action_id: str, resolution: str
    ) -> PendingAction:
        async with self._command(principal, coordinator_id, Access.DECIDE) as (
            tx,
            coordinator,
            _effects,
        ):
            if not principal.is_human:
                raise PermissionDenied("only a human resolves a pending action")
            action = await tx.get_pending_action(action_id)
            if action is None or action.coordinator_id != coordinator_id:
                raise NotFound(f"pending action {action_id} not found")
            if action.state != PendingActionState.OPEN:
                return action  # already done: resolving again is a no-op
            action.state = PendingActionState.RESOLVED
            action.resolution = resolution
            action.next_attempt_time = None
            action.update_time = tx.now
            await tx.update_pending_action(action)
            await self._append(
                tx,
                coordinator,
                [
                    NewEvent(
                        EventType.PENDING_ACTION_RESOLVED,
                        lane_id=action.lane_id,
                        data={"actionId": action_id, "byHuman": True},
                    )
                ],
                principal.name,
            )
            return action

    async def get_digest(
        self, principal: Principal, coordinator_id: str, day: str
    ) -> tuple[str, list[DigestEntry]]:
        """One UTC day's digest: its owner and entries (open pending actions included today)."""
        try:
            date = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).date()
        except ValueError as exc:
            raise InvalidArgument.single("day", "must be a date, YYYY-MM-DD") from exc
        async with self.store.read() as reader:
            coordinator = await self._readable(reader, principal, coordinator_id)
            entries = await reader.digest_entries(coordinator_id, day)
            if date == self.clock.now().date():
                for action in await reader.list_pending_actions(
                    coordinator_id, PendingActionState.OPEN, "", 1000
                ):
                    if action.attempts == 0:
                        continue  # not failed yet: its first try is still under way
                    entries.append(
                        DigestEntry(
                            entry_id=action.action_id,
                            coordinator_id=coordinator_id,
                            day=day,
                            owner=action.owner,
                            kind=DigestKind.PENDING_ACTION,
                            time=action.update_time,
                            lane_id=action.lane_id,
                            action_id=action.action_id,
                            reason=action.last_error,
                        )
                    )
        return coordinator.config.digest_owner, entries

    async def _sync_tickets(
        self, principal: Principal, coordinator_id: str, report: MaintenanceReport
    ) -> None:
        """Read linked tickets' real state from their trackers, with the time it was seen."""
        async with self.store.read() as reader:
            tickets = await reader.tickets_to_sync(coordinator_id, TICKET_SYNC_BATCH)
        observed: list[tuple[Ticket, str]] = []
        for ticket in tickets:
            tracker = self.trackers.get(ticket.tracker)
            if tracker is None:
                continue
            try:
                observed.append((ticket, await tracker.get_state(ticket.key)))
            except TrackerError as exc:
                _log.info("ticket %s %s not synced: %s", ticket.tracker, ticket.key, exc)
        if not observed:
            return
        async with self._command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            _effects,
        ):
            events: list[NewEvent] = []
            for ticket, state in observed:
                if state != ticket.state:
                    events.append(
                        NewEvent(
                            EventType.TICKET_SYNCED,
                            lane_id=ticket.lane_id,
                            data={"tracker": ticket.tracker, "key": ticket.key, "state": state},
                        )
                    )
                ticket.state = state
                ticket.observe_time = tx.now
                await tx.update_ticket(coordinator_id, ticket)
            await self._append(tx, coordinator, events, principal.name)
        report.tickets_synced += len(observed)

    async def _escalate(
        self, principal: Principal, coordinator_id: str, report: MaintenanceReport
    ) -> None:
        """Escalate ready items left unleased past escalate_after. Gates that do not count
        toward escalation (capacity, exclusive keys, backoff, pauses, …) postpone it."""
        async with self._command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            effects,
        ):
            ready_before = tx.now - timedelta(seconds=coordinator.config.escalate_after_seconds)
            candidates = await tx.escalation_candidates(
                coordinator_id, tx.now, ready_before, ESCALATION_BATCH
            )
            if not candidates:
                return
            live = await tx.live_attempts(coordinator_id, None)
            workers = await tx.list_workers(coordinator_id, "", 10_000)
            keys = sorted({k for i in candidates for k in _exclusive_keys(i)})
            holders = await tx.live_exclusive_holders(coordinator_id, keys) if keys else {}
            capacity, holding = rules.class_usage(live, coordinator.config.class_capacity)
            escalations: list[Escalation] = []
            events: list[NewEvent] = []
            lanes: dict[str, Lane | None] = {}
            # A parent holding a live ESCALATE grant is told too (design/domain.md).
            parents = await parents_holding(
                tx,
                coordinator_id,
                coordinator.config.parent_coordinator_id,
                GrantPermission.ESCALATE,
                tx.now,
            )
            for item in candidates:
                if item.lane_id not in lanes:
                    lanes[item.lane_id] = await tx.get_lane(item.lane_id)
                lane = lanes[item.lane_id]
                if lane is None:
                    continue
                context = _GateContext(
                    coordinator=coordinator,
                    platform_on=True,
                    lane=lane,
                    blockers=[],
                    items=[item],
                    capacity=capacity,
                    holding=holding,
                    holders=holders,
                    workers=workers,
                    now=tx.now,
                )
                gates = _gates(context, item)
                if not all(g.counts_toward_escalation for g in gates):
                    continue
                reason = gates[0].detail if gates else "ready but not leased"
                recipients = [coordinator.config.digest_owner or "digest owner", *parents]
                escalations.append(
                    Escalation(
                        escalation_id=new_id("esc"),
                        coordinator_id=coordinator_id,
                        lane_id=item.lane_id,
                        item_id=item.item_id,
                        reason=reason,
                        escalated_to=recipients,
                        open=True,
                        create_time=tx.now,
                    )
                )
                events.append(
                    NewEvent(
                        EventType.ESCALATED,
                        lane_id=item.lane_id,
                        item_id=item.item_id,
                        data={"gate": gates[0].gate if gates else "", "to": recipients},
                    )
                )
                effects.note(DigestKind.ESCALATED, item.lane_id, item.item_id, reason)
            await tx.insert_escalations(escalations)
            await self._append(tx, coordinator, events, principal.name)
            report.escalated += len(escalations)

    # ------------------------------------------------------------------ reading

    async def list_events(
        self,
        principal: Principal,
        coordinator_id: str,
        since_revision: int,
        size: int,
        token: str,
        lane_id: str,
        item_id: str,
    ) -> tuple[list[Event], str, int]:
        limit = page_size(size)
        after = decode_page_token(token)
        try:
            since = int(after[0]) if after else since_revision
        except (TypeError, ValueError) as exc:
            raise InvalidArgument.single("page_token", "is not a token this server issued") from exc
        async with self.store.read() as reader:
            coordinator = await self._readable(reader, principal, coordinator_id)
            events = await reader.list_events(coordinator_id, since, limit + 1, lane_id, item_id)
        page = _page(events, limit, lambda e: [e.revision])
        return page.items, page.next_page_token, coordinator.revision

    async def explain(
        self, principal: Principal, coordinator_id: str, lane_id: str, item_id: str
    ) -> Explanation:
        if not lane_id and not item_id:
            raise InvalidArgument(
                [
                    FieldViolation("lane_id", "give a lane_id or an item_id"),
                    FieldViolation("item_id", "give a lane_id or an item_id"),
                ]
            )
        now = self.clock.now()
        async with self.store.read() as reader:
            coordinator = await self._readable(reader, principal, coordinator_id, work=False)
            platform_on = await reader.platform_enabled()
            if item_id:
                item = await reader.get_item(item_id)
                if (
                    item is None
                    or item.coordinator_id != coordinator_id
                    or (lane_id and item.lane_id != lane_id)
                ):
                    raise NotFound(f"item {item_id} not found")
                lane = await reader.get_lane(item.lane_id)
                assert lane is not None
            else:
                found = await reader.get_lane(lane_id)
                if found is None or found.coordinator_id != coordinator_id:
                    raise NotFound(f"lane {lane_id} not found")
                lane = found
            detail = await self._lane_detail(reader, lane, with_attempts=True)
            live = await reader.live_attempts(coordinator_id, None)
            workers = await reader.list_workers(coordinator_id, "", 10_000)
            keys = sorted({k for i in detail.items for k in _exclusive_keys(i)})
            holders = await reader.live_exclusive_holders(coordinator_id, keys) if keys else {}
            events = await reader.list_events(
                coordinator_id, 0, 200, lane.lane_id if not item_id else "", item_id
            )
        capacity, holding = rules.class_usage(live, coordinator.config.class_capacity)
        context = _GateContext(
            coordinator=coordinator,
            platform_on=platform_on,
            lane=lane,
            blockers=detail.blockers,
            items=detail.items,
            capacity=capacity,
            holding=holding,
            holders=holders,
            workers=workers,
            now=now,
        )

        def explain_item(item: Item) -> Explanation:
            return Explanation(
                lane_id=item.lane_id,
                item_id=item.item_id,
                state=item.state.value,
                next_action=rules.item_next_action(item, capacity),
                gates=_gates(context, item),
                attempts=detail.attempts.get(item.item_id, []),
            )

        if item_id:
            target = next(i for i in detail.items if i.item_id == item_id)
            result = explain_item(target)
            result.events = events
            return result
        return Explanation(
            lane_id=lane.lane_id,
            item_id="",
            state=lane.state.value,
            next_action=rules.lane_next_action(lane, detail.items, detail.open_blockers, capacity),
            gates=_lane_gates(context),
            events=events,
            items=[explain_item(i) for i in detail.items],
        )

    async def view(
        self, principal: Principal, coordinator_id: str, size: int, token: str
    ) -> CoordinatorView:
        limit = page_size(size)
        async with self.store.read() as reader:
            coordinator = await self._readable(reader, principal, coordinator_id)
            after = decode_page_token(token)
            cursor: tuple[datetime, str] | None = None
            if after:
                try:
                    cursor = (datetime.fromisoformat(str(after[0])), str(after[1]))
                except (ValueError, IndexError) as exc:
                    raise InvalidArgument.single(
                        "page_token", "is not a token this server issued"
                    ) from exc
            lanes = await reader.list_lanes(coordinator_id, None, cursor, limit + 1)
            page = _page(lanes, limit, lambda lane: [_iso(lane.create_time), lane.lane_id])
            details = await self._lane_details(reader, page.items, with_attempts=True)
            workers = await reader.list_workers(coordinator_id, "", 10_000)
            live = await reader.live_attempts(coordinator_id, None)
            queued = await reader.count_ready(coordinator_id)
            pending = await reader.list_pending_actions(
                coordinator_id, PendingActionState.OPEN, "", 1000
            )
            escalations = await reader.open_escalations(coordinator_id)
        capacity, holding = rules.class_usage(live, coordinator.config.class_capacity)
        usage = [
            ClassUsage(cls, used, cap, holding.get(cls, []), queued.get(cls, 0))
            for cls, (used, cap) in sorted(capacity.items())
        ]
        for detail in details:
            detail.capacity = capacity
        worker_leases: dict[str, int] = {}
        for attempt in live:
            worker_leases[attempt.worker_id] = worker_leases.get(attempt.worker_id, 0) + 1
        return CoordinatorView(
            coordinator=coordinator,
            revision=coordinator.revision,
            lanes=details,
            workers=workers,
            capacity=usage,
            worker_leases=worker_leases,
            pending_actions=pending,
            escalations=escalations,
            next_page_token=page.next_page_token,
        )

    # ------------------------------------------------------------------ maintenance

    async def maintenance_targets(self, principal: Principal) -> tuple[bool, list[tuple[str, int]]]:
        if principal.kind != PrincipalKind.SERVICE and not principal.platform_admin:
            raise PermissionDenied("only the recovery service lists maintenance targets")
        async with self.store.read() as reader:
            enabled = await reader.platform_enabled()
            coordinators = await reader.list_coordinators("", 100_000, None)
        targets = (
            [(c.coordinator_id, c.revision) for c in coordinators if c.enabled] if enabled else []
        )
        return enabled, targets

    async def run_maintenance(
        self, principal: Principal, coordinator_id: str, batch_size: int
    ) -> MaintenanceReport:
        """One recovery pass: expire dead leases (requeue with backoff or dead-letter, never
        twice per item in one pass) and evict stale workers."""
        start = self.clock.now()
        began = self.clock.monotonic()
        report = MaintenanceReport(coordinator_id=coordinator_id, start_time=start)
        async with self.store.read() as reader:
            coordinator = await reader.get_coordinator(coordinator_id)
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            authorize(principal, coordinator, Access.MAINTAIN)
            if not (await reader.platform_enabled() and coordinator.enabled):
                report.skipped_disabled = True
                report.revision = coordinator.revision
                return report
        batch = batch_size or 1000
        handled: set[str] = set()
        while True:
            async with self._command(principal, coordinator_id, Access.MAINTAIN) as (
                tx,
                coordinator,
                effects,
            ):
                expired = await tx.expired_attempts(coordinator_id, tx.now, batch, sorted(handled))
                if expired:
                    await self._expire(
                        tx, coordinator, expired, report, handled, effects, principal
                    )
                report.revision = coordinator.revision
            if len(expired) < batch:
                break
        await self._escalate(principal, coordinator_id, report)
        attempted, succeeded = await self.run_pending_actions(principal, coordinator_id)
        report.pending_actions_attempted = attempted
        report.pending_actions_succeeded = succeeded
        await self._sync_tickets(principal, coordinator_id, report)
        async with self._command(principal, coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            _effects,
        ):
            cutoff = tx.now - timedelta(seconds=WORKER_EVICT_AFTER_SECONDS)
            evicted = await tx.evict_workers(coordinator_id, cutoff)
            report.evicted_workers = len(evicted)
            await self._append(
                tx,
                coordinator,
                [NewEvent(EventType.WORKER_EVICTED, data={"workerId": w}) for w in evicted],
                principal.name,
            )
            report.revision = coordinator.revision
        report.duration_seconds = self.clock.monotonic() - began
        return report

    async def _expire(
        self,
        tx: Tx,
        coordinator: Coordinator,
        expired: Sequence[Attempt],
        report: MaintenanceReport,
        handled: set[str],
        effects: _Effects,
        principal: Principal,
    ) -> None:
        items = {i.item_id: i for i in await tx.items_by_ids([a.item_id for a in expired])}
        lanes: dict[str, RetryPolicy] = {}
        events: list[NewEvent] = []
        touched: list[Item] = []
        for attempt in expired:
            attempt.status = AttemptStatus.DEAD
            attempt.end_time = tx.now
            report.expired_attempts += 1
            events.append(
                NewEvent(
                    EventType.ATTEMPT_EXPIRED,
                    lane_id=attempt.lane_id,
                    item_id=attempt.item_id,
                    lease_id=attempt.lease_id,
                    data={"attempt": attempt.attempt, "workerId": attempt.worker_id},
                )
            )
            effects.ready_classes.add(attempt.worker_class)
            item = items.get(attempt.item_id)
            if item is None or item.item_id in handled or item.current_lease_id != attempt.lease_id:
                continue
            handled.add(item.item_id)
            if item.lane_id not in lanes:
                lane = await tx.get_lane(item.lane_id)
                lanes[item.lane_id] = lane.retry_policy if lane else RetryPolicy()
            policy = rules.effective_retry_policy(
                item.retry_policy, lanes[item.lane_id], coordinator.config.retry_policy
            )
            self._retry_or_dead_letter(tx, item, policy, True, events, effects)
            if item.state == ItemState.DEAD:
                report.dead_lettered += 1
            else:
                report.requeued += 1
            touched.append(item)
        await tx.update_attempts(list(expired))
        if touched:
            await tx.update_items(touched)
        await self._append(tx, coordinator, events, principal.name)

    async def acquire_leadership(
        self, principal: Principal, name: str, holder_id: str, lease_seconds: int
    ) -> tuple[Leadership, bool]:
        if principal.kind != PrincipalKind.SERVICE:
            raise PermissionDenied("only the recovery service holds leadership")
        async with self.store.write() as tx:
            expire = tx.now + timedelta(seconds=lease_seconds or 45)
            leadership = await tx.acquire_leadership(name, holder_id, tx.now, expire)
        return leadership, leadership.holder_id == holder_id

    async def release_leadership(
        self, principal: Principal, name: str, holder_id: str
    ) -> Leadership | None:
        if principal.kind != PrincipalKind.SERVICE:
            raise PermissionDenied("only the recovery service holds leadership")
        async with self.store.write() as tx:
            return await tx.release_leadership(name, holder_id)


# ---------------------------------------------------------------------- helpers


def _ask_is_fresh(worker: Worker | None, now: datetime) -> bool:
    """Whether the worker's last ask is recent enough not to be written again: a long-poll
    re-asks on every wake, and one write per few seconds is plenty for why/escalation."""
    return (
        worker is not None
        and worker.last_ask_time is not None
        and now - worker.last_ask_time < timedelta(seconds=ASK_REFRESH_SECONDS)
    )


def _may(principal: Principal, coordinator: Coordinator, access: Access) -> bool:
    try:
        authorize(principal, coordinator, access)
    except WorkcoordError:
        return False
    return True


def _iso(value: datetime) -> str:
    return value.isoformat()


def _exclusive_keys(item: Item) -> list[str]:
    keys = [item.exclusive_key] if item.exclusive_key else []
    keys.extend(f"resource:{r}" for r in rules.placement_resources(item.placement))
    return keys


def _page(rows: list[_T], limit: int, key: Callable[[_T], list[Any]]) -> Page[_T]:
    if len(rows) > limit:
        return Page(rows[:limit], encode_page_token(key(rows[limit - 1])))
    return Page(rows, "")


def _check_item_specs(coordinator: Coordinator, specs: Sequence[ItemSpec], path: str) -> None:
    violations: list[FieldViolation] = []
    classes = coordinator.config.class_capacity
    single = path == "item"
    for index, spec in enumerate(specs):
        where = path if single else f"{path}[{index}]"
        if not spec.key:
            violations.append(FieldViolation(f"{where}.key", "is required"))
        if spec.kind not in (None, ItemKind.TASK):
            violations.append(FieldViolation(f"{where}.kind", "must be TASK in a CUSTOM lane"))
        if not spec.worker_class:
            violations.append(FieldViolation(f"{where}.worker_class", "is required"))
        elif spec.worker_class not in classes:
            violations.append(
                FieldViolation(
                    f"{where}.worker_class",
                    f"unknown worker class {spec.worker_class!r} "
                    f"(known: {', '.join(sorted(classes))})",
                )
            )
        for problem in rules.placement_problems(spec.placement):
            violations.append(FieldViolation(f"{where}.placement", problem))
        policy = spec.retry_policy
        if policy.backoff_coefficient is not None and policy.backoff_coefficient < 1.0:
            violations.append(
                FieldViolation(f"{where}.retry_policy.backoff_coefficient", "must be at least 1.0")
            )
    if violations:
        raise InvalidArgument(violations)


_CONFIG_FIELDS = {
    "class_capacity",
    "retry_policy",
    "review_policy",
    "allowed_action_classes",
    "digest_owner",
    "escalate_after_seconds",
    "parent_coordinator_id",
}


def _apply_config_changes(config: CoordinatorConfig, changes: dict[str, Any]) -> CoordinatorConfig:
    """A new configuration with ``changes`` (already parsed by transport) applied."""
    unknown = set(changes) - _CONFIG_FIELDS
    if unknown:
        raise InvalidArgument.single("update_mask", f"cannot update {', '.join(sorted(unknown))}")
    updated = replace(config, **changes)
    violations: list[FieldViolation] = []
    if "retry_policy" in changes:
        policy: RetryPolicy = changes["retry_policy"].over(config.retry_policy)
        updated = replace(updated, retry_policy=policy)
        if policy.backoff_coefficient is not None and policy.backoff_coefficient < 1.0:
            violations.append(
                FieldViolation(
                    "work_coordinator.retry_policy.backoff_coefficient", "must be at least 1.0"
                )
            )
        if policy.maximum_attempts is not None and not 1 <= policy.maximum_attempts <= 10:
            violations.append(
                FieldViolation(
                    "work_coordinator.retry_policy.maximum_attempts", "must be between 1 and 10"
                )
            )
    if "review_policy" in changes:
        updated = replace(
            updated, review_policy=changes["review_policy"].over(config.review_policy)
        )
    if violations:
        raise InvalidArgument(violations)
    return updated


@dataclass(slots=True)
class _GateContext:
    coordinator: Coordinator
    platform_on: bool
    lane: Lane
    blockers: list[Blocker]
    items: list[Item]
    capacity: dict[str, tuple[int, int]]
    holding: dict[str, list[str]]
    holders: dict[str, str]
    workers: list[Worker]
    now: datetime


def _lane_gates(ctx: _GateContext) -> list[GateInfo]:
    gates: list[GateInfo] = []
    if not ctx.platform_on or not ctx.coordinator.enabled:
        gates.append(GateInfo("DISABLED", "coordination is switched off", None))
    if ctx.lane.paused:
        gates.append(GateInfo("PAUSED", "the lane is paused", ctx.lane.paused_time))
    open_blockers = [b for b in ctx.blockers if b.open]
    if open_blockers:
        gates.append(
            GateInfo(
                "BLOCKED",
                f"{len(open_blockers)} open blocker(s): "
                + "; ".join(b.reason for b in open_blockers),
                min(b.create_time for b in open_blockers),
            )
        )
    return gates


def _gates(ctx: _GateContext, item: Item) -> list[GateInfo]:
    """Which gates hold ``item``, with details and since when (design/domain.md)."""
    if item.state in TERMINAL_ITEM_STATES or item.state in (ItemState.LEASED, ItemState.RUNNING):
        return []
    gates = _lane_gates(ctx)
    if item.state == ItemState.STOPPED:
        gates.append(GateInfo("STOPPED", item.stop_reason, item.update_time))
        return gates
    if item.state == ItemState.AWAITING_APPROVAL:
        gates.append(GateInfo("APPROVAL", "waiting for a human approval", item.update_time))
        return gates
    if item.state == ItemState.WAITING:
        by_key = {i.key: i for i in ctx.items}
        pending = [
            d for d in item.depends_on if d not in by_key or by_key[d].state != ItemState.SUCCEEDED
        ]
        detail = ", ".join(
            f"{d} ({by_key[d].state.value if d in by_key else 'missing'})" for d in pending
        )
        gates.append(GateInfo("DEPENDENCIES", f"waiting for {detail}", item.create_time))
        return gates
    # QUEUED
    if item.not_before is not None and item.not_before > ctx.now:
        gates.append(
            GateInfo("BACKOFF", f"retry not before {item.not_before.isoformat()}", item.update_time)
        )
    used, cap = ctx.capacity.get(item.worker_class, (0, 0))
    since = item.ready_time or item.update_time
    if used >= cap:
        leases = ctx.holding.get(item.worker_class, [])
        gates.append(
            GateInfo(
                "CAPACITY",
                f"{item.worker_class} {used}/{cap} held by lease {', '.join(leases) or '-'}",
                since,
                lease_ids=list(leases),
            )
        )
    held = sorted({ctx.holders[k] for k in _exclusive_keys(item) if k in ctx.holders})
    if held:
        gates.append(
            GateInfo(
                "EXCLUSIVE",
                f"{', '.join(_exclusive_keys(item))} held by lease {', '.join(held)}",
                since,
                lease_ids=held,
            )
        )
    if gates:
        return gates
    problems = rules.placement_problems(item.placement)
    if problems:
        gates.append(
            GateInfo(
                "PLACEMENT",
                "malformed placement: " + "; ".join(problems),
                since,
                counts_toward_escalation=True,
            )
        )
        return gates
    same_class = [w for w in ctx.workers if w.worker_class == item.worker_class]
    asking = [w for w in same_class if w.last_ask_time is not None and w.last_ask_time >= since]
    if item.placement and not any(
        rules.placement_matches(item.placement, w.worker_id, w) for w in asking
    ):
        gates.append(
            GateInfo(
                "PLACEMENT",
                "no worker matching the placement is asking",
                since,
                counts_toward_escalation=True,
            )
        )
    elif not asking:
        gates.append(
            GateInfo(
                "NOBODY_ASKING",
                f"ready, but no {item.worker_class} worker has asked for work since",
                since,
                counts_toward_escalation=True,
            )
        )
    return gates
