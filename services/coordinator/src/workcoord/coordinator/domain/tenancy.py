"""Tenancy commands: org members, user tokens, parent grants and the children routes, browser
sessions.

Like the engine, every call authorizes from current state inside its transaction: a grant is
checked at the moment of the request, a revoked token or session fails its very next call.

Children routes (``/v1/work-coordinators/{parent}/children/{child}/…``): the caller must be
allowed to act for the PARENT (READ for the summary and the escalations, WRITE for assign,
steer and escalate), the child must name that parent, and a live grant from the child to the
parent must carry the route's permission. A parent only ever sees the redacted summary
(ids, kinds, states, priority, next-action labels, timestamps) and open escalations (ids,
reasons, times); it never reads bodies nor leases work of the child.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from workcoord.kit.errors import (
    FieldViolation,
    IllegalTransition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from workcoord.kit.secrets import SESSION_PREFIX, hash_secret, new_secret, secrets_equal

from . import requests, rules
from .auth import (
    Access,
    Principal,
    authorize,
    require_org_role,
    require_platform_admin,
    require_self_or_platform_admin,
    user_principal,
)
from .child_summaries import ChildSummary, ItemSummary, LaneSummary, item_summary, lane_summary
from .engine import Effects, Engine, PageRequest, new_id
from .grants import (
    MAX_GRANT_DAYS,
    GrantPermission,
    GrantRecord,
    LoginCode,
    MemberRecord,
    SessionRecord,
    TokenRecord,
)
from .model import (
    TERMINAL_ITEM_STATES,
    Coordinator,
    DigestKind,
    Escalation,
    EventType,
    ItemState,
    LaneState,
    NewEvent,
)
from .ports import Reader, Tx
from .specs import Page

__all__ = [
    "CHILD_ACCESS",
    "LOGIN_CODE_SECONDS",
    "SESSION_SECONDS",
    "ChildSummary",
    "IssuedLoginCode",
    "IssuedSession",
    "ItemSummary",
    "LaneSummary",
    "SessionCaller",
    "Tenancy",
]

LOGIN_CODE_SECONDS = 600
SESSION_SECONDS = 12 * 3600
SUMMARY_LIMIT = 1000

# What a caller must be allowed to do on the PARENT for each children route.
CHILD_ACCESS = {
    GrantPermission.SUMMARY: Access.READ,
    GrantPermission.ESCALATIONS: Access.READ,
    GrantPermission.ASSIGN: Access.WRITE,
    GrantPermission.STEER: Access.WRITE,
    GrantPermission.ESCALATE: Access.WRITE,
}
# States in which a parent may place an item on a worker (no live attempt, not finished).
_ASSIGNABLE = frozenset(
    {ItemState.WAITING, ItemState.QUEUED, ItemState.AWAITING_APPROVAL, ItemState.STOPPED}
)


@dataclass(frozen=True, slots=True)
class IssuedLoginCode:
    """A one-time login code (shown here only), its expiry and the user it signs in."""

    code: str
    expire_time: datetime
    user_id: str


@dataclass(frozen=True, slots=True)
class SessionCaller:
    """The caller behind a browser session, and the session."""

    principal: Principal
    session: SessionRecord


@dataclass(frozen=True, slots=True)
class IssuedSession:
    """A new session: its secret and CSRF token are shown here only."""

    session: SessionRecord
    secret: str
    csrf_token: str


def _parent_action_event(
    action: str, parent_id: str, lane_id: str, item_id: str = "", **details: object
) -> NewEvent:
    """The child's record of what its parent did."""
    data = {"action": action, "parentCoordinatorId": parent_id, **details}
    return NewEvent(EventType.PARENT_ACTION, lane_id=lane_id, item_id=item_id, data=data)


class Tenancy:
    """The tenancy commands, over an :class:`Engine`'s store, bus and clock."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ org members

    async def list_org_members(
        self, principal: Principal, org_slug: str, size: int, token: str
    ) -> Page[MemberRecord]:
        require_org_role(principal, org_slug, admin=False)
        request = PageRequest.parse(size, token, ("ListOrgMembers", org_slug))
        async with self.engine.store.read() as reader:
            if await reader.get_org(org_slug) is None:
                raise NotFound(f"org {org_slug!r} not found")
            rows = await reader.list_members(org_slug, request.after_id, request.fetch)
        return request.page(rows, lambda m: [m.user_id])

    async def remove_org_member(self, principal: Principal, org_slug: str, user_id: str) -> None:
        require_org_role(principal, org_slug, admin=True)
        async with self.engine.store.write() as tx:
            if await tx.get_org(org_slug) is None:
                raise NotFound(f"org {org_slug!r} not found")
            if not await tx.remove_member(org_slug, user_id):
                raise NotFound(f"user {user_id} is not a member of org {org_slug!r}")

    # ------------------------------------------------------------------ user tokens

    async def revoke_user_token(
        self, principal: Principal, user_id: str, token_id: str
    ) -> TokenRecord:
        """Revoke at once: the token's very next request is UNAUTHENTICATED."""
        require_self_or_platform_admin(principal, user_id)
        async with self.engine.store.write() as tx:
            token = await tx.get_user_token(token_id)
            if token is None or token.user_id != user_id:
                raise NotFound(f"token {token_id} not found")
            if token.revoke_time is None:
                await tx.revoke_user_token(token_id, tx.now)
                token = replace(token, revoke_time=tx.now)
            return token

    # ------------------------------------------------------------------ grants (child side)

    async def create_grant(
        self,
        principal: Principal,
        coordinator_id: str,
        parent_id: str,
        permissions: Sequence[GrantPermission],
        expire_time: datetime | None,
        request_id: str,
        *,
        fingerprint: str = "",
    ) -> GrantRecord:
        """The child's admin grants its configured parent explicit, expiring permissions."""
        async with self._child_write(principal, coordinator_id, Access.CONFIGURE) as (tx, child):
            scope = requests.grants_scope(coordinator_id)
            made = await requests.replayed(tx, scope, request_id, fingerprint)
            existing = await tx.get_grant(made) if made else None
            if existing is not None:
                return existing
            violations: list[tuple[str, str]] = []
            if not permissions:
                violations.append(("grant.permissions", "is required"))
            if expire_time is None:
                violations.append(("grant.expire_time", "is required"))
            elif expire_time <= tx.now:
                violations.append(("grant.expire_time", "must be in the future"))
            elif expire_time > tx.now + timedelta(days=MAX_GRANT_DAYS):
                violations.append(
                    ("grant.expire_time", f"must be at most {MAX_GRANT_DAYS} days ahead")
                )
            if parent_id != child.config.parent_coordinator_id or not parent_id:
                violations.append(
                    (
                        "grant.parent_coordinator_id",
                        "must be this work coordinator's configured parent",
                    )
                )
            if violations:
                raise InvalidArgument([FieldViolation(f, d) for f, d in violations])
            assert expire_time is not None
            grant = GrantRecord(
                grant_id=new_id("gr"),
                coordinator_id=coordinator_id,
                parent_coordinator_id=parent_id,
                permissions=tuple(dict.fromkeys(permissions)),
                expire_time=expire_time,
                create_time=tx.now,
                created_by=principal.name,
                request_id=request_id,
            )
            await tx.insert_grant(grant)
            await requests.remember(tx, scope, request_id, fingerprint, grant.grant_id, tx.now)
            created = NewEvent(
                EventType.GRANT_CREATED,
                data={
                    "grantId": grant.grant_id,
                    "parentCoordinatorId": parent_id,
                    "permissions": [p.value for p in grant.permissions],
                    "expireTime": expire_time.isoformat(),
                },
            )
            await self.engine.append_events(tx, child, [created], principal.name)
            return grant

    async def list_grants(
        self, principal: Principal, coordinator_id: str, size: int, token: str
    ) -> Page[GrantRecord]:
        if not principal.is_human:
            async with self.engine.store.read() as reader:
                # Who may not see the coordinator learns only that (NOT_FOUND).
                await self.engine.coordinator_for(reader, principal, coordinator_id)
            raise PermissionDenied("only humans read grants")
        request = PageRequest.parse(size, token, ("ListGrants", coordinator_id))
        async with self.engine.store.read() as reader:
            await self.engine.coordinator_for(reader, principal, coordinator_id)
            rows = await reader.list_grants(coordinator_id, request.after_id, request.fetch)
        return request.page(rows, lambda g: [g.grant_id])

    async def revoke_grant(
        self, principal: Principal, coordinator_id: str, grant_id: str
    ) -> GrantRecord:
        """Revoke at once: the parent's very next children call fails."""
        async with self._child_write(principal, coordinator_id, Access.CONFIGURE) as (tx, child):
            grant = await tx.get_grant(grant_id)
            if grant is None or grant.coordinator_id != coordinator_id:
                raise NotFound(f"grant {grant_id} not found")
            if grant.revoke_time is not None:
                return grant
            await tx.revoke_grant(grant_id, tx.now)
            revoked = NewEvent(
                EventType.GRANT_REVOKED,
                data={"grantId": grant_id, "parentCoordinatorId": grant.parent_coordinator_id},
            )
            await self.engine.append_events(tx, child, [revoked], principal.name)
            return replace(grant, revoke_time=tx.now)

    @asynccontextmanager
    async def _child_write(
        self, principal: Principal, coordinator_id: str, access: Access
    ) -> AsyncIterator[tuple[Tx, Coordinator]]:
        """A write transaction on the child for its administration (which a person keeps while
        coordination is switched off)."""
        async with self.engine.command(principal, coordinator_id, access) as (
            tx,
            child,
            effects,
        ):
            effects.changed = True
            yield tx, child

    # ------------------------------------------------------------------ children (parent side)

    async def _check_child(
        self,
        reader: Reader,
        principal: Principal,
        parent_id: str,
        child: Coordinator | None,
        child_id: str,
        permission: GrantPermission,
        now: datetime,
    ) -> Coordinator:
        parent = await reader.get_coordinator(parent_id)
        if parent is None:
            raise NotFound(f"work coordinator {parent_id} not found")
        access = CHILD_ACCESS[permission]
        authorize(principal, parent, access)
        denied = PermissionDenied(
            f"work coordinator {parent_id} holds no live {permission.value} grant from {child_id}"
        )
        if child is None or child.config.parent_coordinator_id != parent_id:
            raise denied
        grants = await reader.grants_between(child_id, parent_id)
        if not any(g.allows(permission, now) for g in grants):
            raise denied
        # The parent's work stops with its own switch as well as with the child's.
        await self.engine.require_enabled(reader, principal, parent, access)
        await self.engine.require_enabled(reader, principal, child, access)
        return child

    @asynccontextmanager
    async def _child_read(
        self, principal: Principal, parent_id: str, child_id: str, permission: GrantPermission
    ) -> AsyncIterator[tuple[Reader, Coordinator]]:
        """A read of the child for a parent holding a live ``permission`` grant."""
        async with self.engine.store.read() as reader:
            child = await reader.get_coordinator(child_id)
            now = self.engine.clock.now()
            yield (
                reader,
                await self._check_child(
                    reader, principal, parent_id, child, child_id, permission, now
                ),
            )

    async def child_summary(
        self, principal: Principal, parent_id: str, child_id: str
    ) -> ChildSummary:
        """The redacted summary of a child's lanes and items."""
        async with self._child_read(principal, parent_id, child_id, GrantPermission.SUMMARY) as (
            reader,
            child,
        ):
            lanes = await reader.list_lanes(child_id, None, None, SUMMARY_LIMIT)
            details = await self.engine.lane_details(reader, lanes)
            around = await self.engine.surroundings(reader, child)
        summary = ChildSummary(revision=child.revision)
        for detail in details:
            summary.lanes.append(
                lane_summary(
                    detail.lane,
                    rules.lane_next_action(detail.lane, detail.items, detail.open_blockers, around),
                )
            )
            for item in detail.items:
                summary.items.append(item_summary(item, rules.item_next_action(item, around)))
        return summary

    async def child_escalations(
        self, principal: Principal, parent_id: str, child_id: str
    ) -> list[Escalation]:
        permission = GrantPermission.ESCALATIONS
        async with self._child_read(principal, parent_id, child_id, permission) as (reader, _):
            escalations = await reader.open_escalations(child_id)
        # Ids, reasons and times only: who it went to (the child's people) stays private.
        return [replace(e, escalated_to=[]) for e in escalations]

    @asynccontextmanager
    async def _parent_action(
        self, principal: Principal, parent_id: str, child_id: str, permission: GrantPermission
    ) -> AsyncIterator[tuple[Tx, Coordinator, Effects]]:
        """A write transaction on the child for a parent's action: the child's lock is held
        while the grant is checked, so a revocation committed first is always seen."""
        effects = Effects(changed=True)
        async with self.engine.store.write(child_id) as tx:
            child = await self._check_child(
                tx, principal, parent_id, tx.coordinator, child_id, permission, tx.now
            )
            yield tx, child, effects
            await self.engine.write_digest(tx, child, effects)
        await self.engine.announce(child, effects)

    async def assign_child_work(
        self,
        principal: Principal,
        parent_id: str,
        child_id: str,
        lane_id: str,
        item_id: str,
        worker_id: str,
    ) -> ItemSummary:
        """Place a child's item on one worker (its placement's ``worker_id``)."""
        async with self._parent_action(principal, parent_id, child_id, GrantPermission.ASSIGN) as (
            tx,
            child,
            effects,
        ):
            item = await self.engine.item_in(tx, child_id, lane_id, item_id)
            if item.state not in _ASSIGNABLE or item.state in TERMINAL_ITEM_STATES:
                raise IllegalTransition(
                    f"item {item_id} is {item.state.value}: only work not yet leased is assigned"
                )
            placement = dict(item.placement or {})
            placement["worker_id"] = worker_id
            problems = rules.placement_problems(placement)
            if problems:
                raise InvalidArgument.single("worker_id", "; ".join(problems))
            item.placement = placement
            item.update_time = tx.now
            await tx.update_items([item])
            if item.state == ItemState.QUEUED:
                effects.ready_classes.add(item.worker_class)
            assigned = _parent_action_event(
                "ASSIGN", parent_id, lane_id, item_id, workerId=worker_id
            )
            await self.engine.append_events(tx, child, [assigned], principal.name)
            around = await self.engine.surroundings(tx, child)
            return item_summary(item, rules.item_next_action(item, around))

    async def steer_child_work(
        self, principal: Principal, parent_id: str, child_id: str, lane_id: str, priority: int
    ) -> LaneSummary:
        """Set a child lane's priority and that of its queued (not yet leased) items."""
        async with self._parent_action(principal, parent_id, child_id, GrantPermission.STEER) as (
            tx,
            child,
            effects,
        ):
            lane = await self.engine.lane_in(tx, child_id, lane_id)
            if lane.state != LaneState.ACTIVE:
                raise IllegalTransition(f"lane {lane_id} is {lane.state.value}")
            previous = lane.priority
            lane.priority = priority
            lane.update_time = tx.now
            await tx.update_lane(lane)
            items = await tx.lane_items([lane_id])
            steered = [i for i in items if i.state in (ItemState.QUEUED, ItemState.WAITING)]
            for item in steered:
                item.priority = priority
                item.update_time = tx.now
                if item.state == ItemState.QUEUED:
                    effects.ready_classes.add(item.worker_class)
            if steered:
                await tx.update_items(steered)
            event = _parent_action_event(
                "STEER", parent_id, lane_id, priority=priority, previousPriority=previous
            )
            await self.engine.append_events(tx, child, [event], principal.name)
            blockers = await tx.lane_blockers([lane_id])
            around = await self.engine.surroundings(tx, child)
            label = rules.lane_next_action(lane, items, sum(1 for b in blockers if b.open), around)
            return lane_summary(lane, label)

    async def escalate_child_work(
        self,
        principal: Principal,
        parent_id: str,
        child_id: str,
        lane_id: str,
        item_id: str,
        reason: str,
    ) -> Escalation:
        """Raise an escalation to the child's digest owner (an ESCALATED event and a digest
        line in the child)."""
        async with self._parent_action(
            principal, parent_id, child_id, GrantPermission.ESCALATE
        ) as (tx, child, effects):
            await self.engine.lane_in(tx, child_id, lane_id)
            if item_id:
                await self.engine.item_in(tx, child_id, lane_id, item_id)
            recipients = [child.config.digest_owner or "digest owner"]
            escalation = Escalation(
                escalation_id=new_id("esc"),
                coordinator_id=child_id,
                lane_id=lane_id,
                item_id=item_id,
                reason=reason,
                escalated_to=recipients,
                open=True,
                create_time=tx.now,
            )
            await tx.insert_escalations([escalation])
            await self.engine.append_events(
                tx,
                child,
                [
                    NewEvent(
                        EventType.ESCALATED,
                        lane_id=lane_id,
                        item_id=item_id,
                        data={"by": "parent", "parentCoordinatorId": parent_id, "to": recipients},
                    ),
                    _parent_action_event(
                        "ESCALATE",
                        parent_id,
                        lane_id,
                        item_id,
                        escalationId=escalation.escalation_id,
                    ),
                ],
                principal.name,
            )
            effects.note(DigestKind.ESCALATED, lane_id, item_id, reason)
            return replace(escalation, escalated_to=[])

    # ------------------------------------------------------------------ browser sessions

    async def create_login_code(self, principal: Principal, user_id: str) -> IssuedLoginCode:
        """A one-time login code for ``user_id`` (default: the caller); platform admins only."""
        require_platform_admin(principal)
        target = user_id or principal.id
        code = new_secret(SESSION_PREFIX, self.engine.tokens)
        async with self.engine.store.write() as tx:
            if await tx.get_user(target) is None:
                raise NotFound(f"user {target} not found")
            expire = tx.now + timedelta(seconds=LOGIN_CODE_SECONDS)
            await tx.insert_login_code(LoginCode(hash_secret(code), target, tx.now, expire))
        return IssuedLoginCode(code=code, expire_time=expire, user_id=target)

    async def exchange_login_code(self, code: str) -> IssuedSession:
        """Burn a one-time code and open a session. Any failure is one UNAUTHENTICATED."""
        refused = Unauthenticated("the login code is unknown, used or expired")
        digest = hash_secret(code)
        secret = new_secret(SESSION_PREFIX, self.engine.tokens)
        csrf = new_secret(SESSION_PREFIX, self.engine.tokens)
        async with self.engine.store.write() as tx:
            found = await tx.find_login_code(digest)
            if found is None or not secrets_equal(found.code_hash, digest):
                raise refused
            if found.use_time is not None or found.expire_time <= tx.now:
                raise refused
            if not await tx.use_login_code(digest, tx.now):
                raise refused
            return await self._insert_session(tx, found.user_id, secret, csrf)

    async def open_session_for_email(self, email: str) -> IssuedSession:
        """Open a session for the provisioned user with ``email`` (an identity the caller has
        verified, e.g. an OIDC id_token's verified email). Unknown: UNAUTHENTICATED; no user
        is ever created here, and the user's roles and ``verified`` stay as provisioned."""
        secret = new_secret(SESSION_PREFIX, self.engine.tokens)
        csrf = new_secret(SESSION_PREFIX, self.engine.tokens)
        async with self.engine.store.write() as tx:
            user = await tx.find_user_by_email(email.strip().lower())
            if user is None:
                raise Unauthenticated("no such user")
            return await self._insert_session(tx, user.user_id, secret, csrf)

    @staticmethod
    async def _insert_session(tx: Tx, user_id: str, secret: str, csrf: str) -> IssuedSession:
        session = SessionRecord(
            session_id=new_id("ses"),
            user_id=user_id,
            secret_hash=hash_secret(secret),
            csrf_hash=hash_secret(csrf),
            create_time=tx.now,
            expire_time=tx.now + timedelta(seconds=SESSION_SECONDS),
        )
        await tx.insert_session(session)
        return IssuedSession(session=session, secret=secret, csrf_token=csrf)

    async def authenticate_session(
        self, secret: str, csrf_token: str | None, *, mutating: bool
    ) -> SessionCaller:
        """Resolve a session secret like an admin token (current roles; revocable; expiring).
        A state-changing call must carry the session's CSRF token (double submit)."""
        digest = hash_secret(secret)
        now = self.engine.clock.now()
        async with self.engine.store.read() as reader:
            session = await reader.find_session(digest)
            if session is None or not secrets_equal(session.secret_hash, digest):
                raise Unauthenticated("unknown session")
            if session.revoke_time is not None:
                raise Unauthenticated("the session has ended")
            if session.expire_time <= now:
                raise Unauthenticated("the session expired")
            user = await reader.get_user(session.user_id)
            if user is None:
                raise Unauthenticated("unknown session")
            roles = await reader.user_roles(user.user_id)
        if mutating and not (
            csrf_token and secrets_equal(hash_secret(csrf_token), session.csrf_hash)
        ):
            raise PermissionDenied("a state-changing request needs the session's X-CSRF-Token")
        return SessionCaller(principal=user_principal(user, roles), session=session)

    async def end_session(self, session: SessionRecord) -> SessionRecord:
        async with self.engine.store.write() as tx:
            current = await tx.get_session(session.session_id)
            if current is None:
                raise NotFound("session not found")
            if current.revoke_time is None:
                await tx.revoke_session(session.session_id, tx.now)
                current = replace(current, revoke_time=tx.now)
            return current
