"""Tracker connections of a work coordinator (``engine.tracker_connections``): create, list,
rotate and delete them (org admins and platform admins; never work keys), and resolve a
ticket to the tracker that serves it.

The credential is write-only: it is sealed with the installation key before it is stored
(:mod:`..sealing`), opened only to build the adapter that calls the tracker, and never
returned, logged or put in an event; a keyed fingerprint tells connections apart. A ticket is
served by the connection of its tracker whose projects name the ticket's project; without one,
the installation-wide tracker (``WORKCOORD_GITHUB_TOKEN``) is the fallback.
"""

from __future__ import annotations

import re
import secrets as _secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from workcoord.kit.errors import FieldViolation, InvalidArgument, NotFound

from ..auth import Access, Principal
from ..inputs import (
    CreateTrackerConnectionInput,
    DeleteTrackerConnectionInput,
    ListTrackerConnectionsInput,
    UpdateTrackerConnectionInput,
)
from ..model import EventType, NewEvent
from ..outbound import OutboundRefused, check_outbound_shape
from ..ports import Reader, Tx
from ..results import Page
from ..sealing import TRACKER_KEY_SECRET, CredentialSealer, UnsealError
from ..tickets import TicketTracker, TrackerConnection, TrackerKind
from ._base import EngineService, new_id
from .paging import PageRequest

__all__ = ["DEFAULT_BASE_URLS", "TrackerConnections", "TrackerFactory", "TrackerResolver"]

TrackerFactory = Callable[[TrackerConnection, str], TicketTracker]
"""Builds the adapter of a connection from it and its opened credential."""
Resolve = Callable[[], Awaitable["TrackerResolver"]]

DEFAULT_BASE_URLS = {
    TrackerKind.GITHUB: "https://api.github.com",
    TrackerKind.GITLAB: "https://gitlab.com",
}
MAX_PROJECTS = 100
MAX_CONNECTIONS = 100
_PROJECT = {
    TrackerKind.GITHUB: re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}"),
    TrackerKind.GITLAB: re.compile(
        r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}(?:/[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}){1,20}"
    ),
    TrackerKind.JIRA: re.compile(r"[A-Z][A-Z0-9_]{0,49}"),
}
_CREDENTIAL_MAX = 4096
_PREFIX = "tracker_connection"
_MUTABLE = ("credential", "projects", "base_url", "done_status")


class TrackerConnections(EngineService):
    """Create, list, rotate and delete tracker connections; open them for calls."""

    _sealer: CredentialSealer | None = None

    async def sealer(self) -> CredentialSealer:
        """The installation's sealer (its secret made on first use, then kept)."""
        if self._sealer is None:
            async with self.core.store.write() as tx:
                secret = await tx.installation_secret(TRACKER_KEY_SECRET, _secrets.token_hex(32))
            self._sealer = CredentialSealer(secret)
        return self._sealer

    async def create(
        self, principal: Principal, input: CreateTrackerConnectionInput
    ) -> TrackerConnection:
        kind = _tracker_kind(input.tracker)
        base_url = input.base_url or DEFAULT_BASE_URLS.get(kind, "")
        projects = tuple(input.projects)
        self._check(kind, base_url, projects, input.credential, input.done_status)
        sealer = await self.sealer()
        async with self.core.command(principal, input.coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            effects,
        ):
            existing = await tx.list_tracker_connections(input.coordinator_id, "", MAX_CONNECTIONS)
            if len(existing) >= MAX_CONNECTIONS:
                raise InvalidArgument.single(
                    _PREFIX, f"a work coordinator has at most {MAX_CONNECTIONS} connections"
                )
            _check_unclaimed(kind, projects, existing, "")
            tracker_id = new_id("trk")
            connection = TrackerConnection(
                tracker_id=tracker_id,
                coordinator_id=input.coordinator_id,
                tracker=kind,
                base_url=base_url,
                projects=projects,
                credential_ciphertext=sealer.seal(tracker_id, input.credential),
                credential_fingerprint=sealer.fingerprint(input.credential),
                create_time=tx.now,
                update_time=tx.now,
                done_status=_done_status(kind, input.done_status),
                created_by=principal.name,
            )
            await tx.insert_tracker_connection(connection)
            await self.core.append_events(
                tx, coordinator, [_event(connection, "CREATED")], principal.name
            )
            effects.changed = True
            return connection

    async def list_connections(
        self, principal: Principal, input: ListTrackerConnectionsInput
    ) -> Page[TrackerConnection]:
        scope = ("ListTrackerConnections", input.coordinator_id)
        request = PageRequest.parse(input.page_size, input.page_token, scope)
        async with self.core.store.read() as reader:
            await self.core.coordinator_for(
                reader, principal, input.coordinator_id, access=Access.CONFIGURE
            )
            found = await reader.list_tracker_connections(
                input.coordinator_id, request.after_id, request.fetch
            )
        return request.page(found, lambda c: [c.tracker_id])

    async def update(
        self, principal: Principal, input: UpdateTrackerConnectionInput
    ) -> TrackerConnection:
        mask = tuple(input.update_mask)
        unknown = [m for m in mask if m not in _MUTABLE]
        if not mask or unknown:
            raise InvalidArgument.single(
                "update_mask", f"names one or more of {', '.join(_MUTABLE)}"
            )
        sealer = await self.sealer()
        async with self.core.command(principal, input.coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            effects,
        ):
            connection = await _owned(tx, input.coordinator_id, input.tracker_id)
            kind = connection.tracker
            if "base_url" in mask:
                connection.base_url = input.base_url or DEFAULT_BASE_URLS.get(kind, "")
            if "projects" in mask:
                connection.projects = tuple(input.projects)
            if "done_status" in mask:
                connection.done_status = _done_status(kind, input.done_status)
            credential = input.credential if "credential" in mask else None
            self._check(
                kind,
                connection.base_url,
                connection.projects,
                credential,
                connection.done_status,
            )
            others = await tx.list_tracker_connections(input.coordinator_id, "", MAX_CONNECTIONS)
            _check_unclaimed(kind, connection.projects, others, connection.tracker_id)
            change = "UPDATED"
            if credential is not None:
                connection.credential_ciphertext = sealer.seal(connection.tracker_id, credential)
                connection.credential_fingerprint = sealer.fingerprint(credential)
                # A new credential starts with a clean bill of health.
                connection.last_error, connection.last_error_time = "", None
                change = "ROTATED"
            connection.update_time = tx.now
            await tx.update_tracker_connection(connection)
            await self.core.append_events(
                tx, coordinator, [_event(connection, change)], principal.name
            )
            effects.changed = True
            return connection

    async def delete(self, principal: Principal, input: DeleteTrackerConnectionInput) -> None:
        async with self.core.command(principal, input.coordinator_id, Access.CONFIGURE) as (
            tx,
            coordinator,
            effects,
        ):
            connection = await _owned(tx, input.coordinator_id, input.tracker_id)
            await tx.delete_tracker_connection(connection.tracker_id)
            await self.core.append_events(
                tx, coordinator, [_event(connection, "DELETED")], principal.name
            )
            effects.changed = True

    def _check(
        self,
        kind: TrackerKind,
        base_url: str,
        projects: Sequence[str],
        credential: str | None,
        done_status: str,
    ) -> None:
        violations: list[FieldViolation] = []
        if not base_url:
            violations.append(FieldViolation(f"{_PREFIX}.base_url", f"is required for {kind}"))
        else:
            try:
                check_outbound_shape(base_url, self.core.outbound_allowed_hosts)
            except OutboundRefused as exc:
                violations.append(FieldViolation(f"{_PREFIX}.base_url", str(exc)))
        if not projects:
            violations.append(FieldViolation(f"{_PREFIX}.projects", "name at least one project"))
        elif len(projects) > MAX_PROJECTS:
            violations.append(FieldViolation(f"{_PREFIX}.projects", f"at most {MAX_PROJECTS}"))
        for index, project in enumerate(projects):
            if _PROJECT[kind].fullmatch(project) is None or ".." in project:
                violations.append(
                    FieldViolation(f"{_PREFIX}.projects[{index}]", f"not a {kind} project")
                )
        if len({p.casefold() for p in projects}) != len(projects):
            violations.append(FieldViolation(f"{_PREFIX}.projects", "names a project twice"))
        if credential is not None:
            if not credential.strip() or len(credential) > _CREDENTIAL_MAX:
                violations.append(
                    FieldViolation(f"{_PREFIX}.credential", f"1 to {_CREDENTIAL_MAX} characters")
                )
            elif any(c in credential for c in "\r\n\0"):
                violations.append(FieldViolation(f"{_PREFIX}.credential", "is one line"))
            elif kind == TrackerKind.JIRA and not re.fullmatch(r"[^:\s]+@[^:\s]+:\S+", credential):
                violations.append(FieldViolation(f"{_PREFIX}.credential", "is email:api-token"))
        if len(done_status) > 128:
            violations.append(FieldViolation(f"{_PREFIX}.done_status", "at most 128 characters"))
        if violations:
            raise InvalidArgument(violations)


@dataclass
class TrackerResolver:
    """The trackers one pass calls: each ticket's connection (its adapter built once, from
    the opened credential) or the installation-wide fallback. ``aclose`` closes what it built."""

    connections: list[TrackerConnection]
    fallback: dict[str, TicketTracker]
    factory: TrackerFactory | None
    sealer: CredentialSealer | None  # None when there is no connection to open
    _built: dict[str, TicketTracker] = field(default_factory=dict)

    def connection_for(self, tracker: str, key: str) -> TrackerConnection | None:
        return next((c for c in self.connections if c.serves(tracker, key)), None)

    def adapter(self, connection: TrackerConnection) -> TicketTracker:
        """The connection's adapter; raises UnsealError or the factory's TrackerError."""
        built = self._built.get(connection.tracker_id)
        if built is None:
            if self.factory is None or self.sealer is None:
                raise UnsealError("this coordinator has no tracker adapters")
            credential = self.sealer.open(connection.tracker_id, connection.credential_ciphertext)
            built = self.factory(connection, credential)
            self._built[connection.tracker_id] = built
        return built

    async def aclose(self) -> None:
        for adapter in self._built.values():
            await adapter.aclose()
        self._built.clear()


async def resolver(service: TrackerConnections, reader: Reader, coordinator_id: str) -> Resolve:
    """Read ``coordinator_id``'s connections in ``reader``; the returned call (made after the
    read is over: it may write the installation's secret on first use) gives the resolver of
    one pass over its tickets."""
    connections = await reader.list_tracker_connections(coordinator_id, "", MAX_CONNECTIONS)

    async def build() -> TrackerResolver:
        sealer = await service.sealer() if connections else None
        return TrackerResolver(
            connections, service.core.trackers, service.core.tracker_factory, sealer
        )

    return build


def _tracker_kind(value: str) -> TrackerKind:
    try:
        return TrackerKind(value)
    except ValueError as exc:
        raise InvalidArgument.single(
            f"{_PREFIX}.tracker", "must be one of github, gitlab, jira"
        ) from exc


def _done_status(kind: TrackerKind, value: str) -> str:
    return (value.strip() or "Done") if kind == TrackerKind.JIRA else value.strip()


def _check_unclaimed(
    kind: TrackerKind,
    projects: Sequence[str],
    existing: Sequence[TrackerConnection],
    own_id: str,
) -> None:
    """A project is served by one connection at most, so a ticket resolves to one."""
    for other in existing:
        if other.tracker != kind or other.tracker_id == own_id:
            continue
        taken = {p.casefold() for p in other.projects}
        for index, project in enumerate(projects):
            if project.casefold() in taken:
                raise InvalidArgument.single(
                    f"{_PREFIX}.projects[{index}]",
                    f"{project} is already served by {other.tracker_id}",
                )


async def _owned(tx: Tx, coordinator_id: str, tracker_id: str) -> TrackerConnection:
    connection = await tx.get_tracker_connection(tracker_id)
    if connection is None or connection.coordinator_id != coordinator_id:
        raise NotFound(f"tracker connection {tracker_id} not found")
    return connection


def _event(connection: TrackerConnection, change: str) -> NewEvent:
    """A COORDINATOR_UPDATED event naming the connection's change: never its credential."""
    return NewEvent(
        EventType.COORDINATOR_UPDATED,
        data={
            "trackerConnection": {
                "trackerId": connection.tracker_id,
                "tracker": connection.tracker.value,
                "change": change,
                "credentialFingerprint": connection.credential_fingerprint,
            }
        },
    )
