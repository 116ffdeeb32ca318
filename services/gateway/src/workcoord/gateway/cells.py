"""Cells: one gateway in front of several independent installations (docs/cells.md).

A cell is a PostgreSQL database with its Redis and its coordinator and recovery. Work
coordinators are independent of each other, so each lives wholly in one cell; the **directory**
(one table, :data:`DIRECTORY_TABLE`, in its own database) says which. With ``WORKCOORD_CELLS``
set, the gateway opens :class:`CellUpstreams` in place of one cell's ``Upstreams``: every call
(REST, the WebSocket feed, MCP, the pages) goes to the cell of the request's
``coordinator_id`` (or ``org_slug``), read from the directory and kept in memory once found.

* A coordinator (or org) the directory does not name goes to the **home cell** (the first one):
  an unknown coordinator gets the NOT_FOUND it gets today, and the coordinators of an
  installation that had one cell before stay where they were, with no directory rows.
* ``CreateOrg`` picks the cell holding fewest orgs and records the org there before it is made;
  ``CreateWorkCoordinator`` and ``CreateWorkKey`` go to their org's cell (an org's members, keys
  and coordinators share one database), and the new coordinator is recorded in the directory.
* Everything else (who am I, users, sessions, settings, lists across orgs, recovery status)
  is the home cell's, unless the home cell does not know the caller: then the first cell that
  does answers (a work key lives in its coordinator's cell).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import asyncpg
import grpc.aio
from google.protobuf import message as _message

from workcoord.gateway.routes import Route
from workcoord.gateway.upstream import Upstreams, open_channel
from workcoord.kit.settings import GatewaySettings

__all__ = [
    "DIRECTORY_TABLE",
    "Cell",
    "CellUpstreams",
    "Directory",
    "MemoryDirectory",
    "PostgresDirectory",
    "connect_upstreams",
    "parse_cells",
]

_log = logging.getLogger(__name__)

DIRECTORY_TABLE = "workcoord_cell_directory"

_CREATE_ORG = "/workcoord.api.v1.AdminService/CreateOrg"
_CREATE_COORDINATOR = "/workcoord.api.v1.WorkCoordinatorService/CreateWorkCoordinator"
_CREATE_WORK_KEY = "/workcoord.api.v1.AdminService/CreateWorkKey"

ORG = "org"
COORDINATOR = "coordinator"


@dataclass(frozen=True)
class Cell:
    """One cell as the gateway reaches it."""

    name: str
    coordinator_address: str
    recovery_address: str


def parse_cells(entries: list[str]) -> tuple[Cell, ...]:
    """``WORKCOORD_CELLS`` entries (``NAME=COORDINATOR/RECOVERY``, validated by the settings)."""
    cells = []
    for entry in entries:
        name, _, addresses = entry.partition("=")
        coordinator, _, recovery = addresses.partition("/")
        cells.append(Cell(name, coordinator, recovery))
    return tuple(cells)


class Directory(Protocol):
    """Where each work coordinator (and org) lives."""

    async def lookup(self, kind: str, key: str) -> str | None: ...

    async def record(self, kind: str, key: str, cell: str) -> str:
        """Record ``key`` in ``cell`` unless it is recorded already; the cell it is in."""
        ...

    async def forget(self, kind: str, key: str, cell: str) -> None:
        """Remove the row of ``key`` if it names ``cell``."""
        ...

    async def counts(self, kind: str) -> dict[str, int]: ...

    async def close(self) -> None: ...


@dataclass
class MemoryDirectory:
    """A directory in a dict (unit tests)."""

    rows: dict[tuple[str, str], str] = field(default_factory=dict)

    async def lookup(self, kind: str, key: str) -> str | None:
        return self.rows.get((kind, key))

    async def record(self, kind: str, key: str, cell: str) -> str:
        return self.rows.setdefault((kind, key), cell)

    async def forget(self, kind: str, key: str, cell: str) -> None:
        if self.rows.get((kind, key)) == cell:
            del self.rows[(kind, key)]

    async def counts(self, kind: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for (row_kind, _), cell in self.rows.items():
            if row_kind == kind:
                found[cell] = found.get(cell, 0) + 1
        return found

    async def close(self) -> None:
        return None


# The directory's statements, by name (docs/cells.md shows the table).
CREATE_DIRECTORY = """
CREATE TABLE IF NOT EXISTS workcoord_cell_directory (
    kind text NOT NULL CHECK (kind IN ('org', 'coordinator')),
    key text NOT NULL,
    cell text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, key)
)"""
LOOKUP_CELL = "SELECT cell FROM workcoord_cell_directory WHERE kind = $1 AND key = $2"
RECORD_CELL = (
    "WITH added AS (INSERT INTO workcoord_cell_directory (kind, key, cell) VALUES ($1, $2, $3) "
    "ON CONFLICT (kind, key) DO NOTHING RETURNING cell) "
    "SELECT cell FROM added UNION ALL "
    "SELECT cell FROM workcoord_cell_directory WHERE kind = $1 AND key = $2 LIMIT 1"
)
FORGET_CELL = "DELETE FROM workcoord_cell_directory WHERE kind = $1 AND key = $2 AND cell = $3"
COUNT_BY_CELL = (
    "SELECT cell, count(*) AS n FROM workcoord_cell_directory WHERE kind = $1 GROUP BY cell"
)


class PostgresDirectory:
    """The directory table in PostgreSQL (created if missing: it is the gateway's own)."""

    def __init__(self, url: str) -> None:
        self._dsn = url.replace("postgresql+asyncpg://", "postgresql://", 1)
        self._pool: asyncpg.Pool | None = None
        self._lock = asyncio.Lock()

    async def _ready(self) -> asyncpg.Pool:
        if self._pool is None:
            async with self._lock:
                if self._pool is None:
                    pool = await asyncpg.create_pool(self._dsn, min_size=1, max_size=4)
                    async with pool.acquire() as connection:
                        # Another gateway replica may create it at the same moment.
                        with contextlib.suppress(
                            asyncpg.UniqueViolationError, asyncpg.DuplicateTableError
                        ):
                            await connection.execute(CREATE_DIRECTORY)
                    self._pool = pool
        return self._pool

    async def lookup(self, kind: str, key: str) -> str | None:
        pool = await self._ready()
        cell: str | None = await pool.fetchval(LOOKUP_CELL, kind, key)
        return cell

    async def record(self, kind: str, key: str, cell: str) -> str:
        pool = await self._ready()
        found: str | None = await pool.fetchval(RECORD_CELL, kind, key, cell)
        if found is None:
            # Recorded by a concurrent request after this statement's snapshot: read it now.
            found = await self.lookup(kind, key)
        return found or cell

    async def forget(self, kind: str, key: str, cell: str) -> None:
        pool = await self._ready()
        await pool.execute(FORGET_CELL, kind, key, cell)

    async def counts(self, kind: str) -> dict[str, int]:
        pool = await self._ready()
        return {row["cell"]: row["n"] for row in await pool.fetch(COUNT_BY_CELL, kind)}

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


class CellUpstreams(Upstreams):
    """The upstreams of several cells, as one :class:`~workcoord.gateway.upstream.Upstreams`:
    :meth:`call` and :meth:`route_to` (then ``stream``) pick the request's cell; its own
    ``coordinator``/``recovery`` channels are the home cell's."""

    def __init__(
        self, cells: Mapping[str, Upstreams], directory: Directory, *, owned: bool = False
    ) -> None:
        if not cells:
            raise ValueError("at least one cell")
        home = next(iter(cells))
        super().__init__(coordinator=cells[home].coordinator, recovery=cells[home].recovery)
        self.cells = dict(cells)
        self.home = home
        self.directory = directory
        self.owns_cells = owned
        self._known: dict[tuple[str, str], str] = {}

    async def _cell_of(self, kind: str, key: str) -> str:
        if not key:
            return self.home
        found = self._known.get((kind, key))
        if found is None:
            found = await self.directory.lookup(kind, key)
            if found is None or found not in self.cells:
                # Unknown (NOT_FOUND there, as with one cell) or from before cells: home.
                return self.home
            self._known[(kind, key)] = found
        return found

    async def cell_for(self, route: Route, request: _message.Message) -> str:
        """The name of the cell that answers ``request``."""
        if route.full_method == _CREATE_COORDINATOR:
            return await self._cell_of(ORG, request.work_coordinator.org_slug)  # type: ignore[attr-defined]
        if route.full_method == _CREATE_WORK_KEY:
            return await self._cell_of(ORG, request.work_key.org_slug)  # type: ignore[attr-defined]
        coordinator_id = _bound(route, request, "coordinator_id")
        if coordinator_id:
            return await self._cell_of(COORDINATOR, coordinator_id)
        org_slug = _bound(route, request, "org_slug")
        if org_slug:
            return await self._cell_of(ORG, org_slug)
        return self.home

    async def route_to(self, route: Route, request: _message.Message) -> Upstreams:
        """The upstreams of the cell that answers ``request`` (raises ``UNAVAILABLE`` like
        :meth:`call` when the directory cannot be read)."""
        try:
            return self.cells[await self.cell_for(route, request)]
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise _directory_unavailable(exc) from None

    async def call(
        self,
        route: Route,
        request: _message.Message,
        *,
        metadata: tuple[tuple[str, str], ...],
        deadline_seconds: float,
    ) -> _message.Message:
        """Call a unary method in its cell. An org's cell is recorded before it is created
        (its slug is the client's: a retry goes to the same cell and is ``ALREADY_EXISTS``
        there, as with one cell) and forgotten again if the cell refuses it; a created
        coordinator is recorded before the answer returns, so the next request finds it.

        The directory unreachable is ``UNAVAILABLE`` (retryable), never a 500. A coordinator
        created but not recorded (the directory failed in between) is found by repeating the
        create with its ``request_id``, which answers the same coordinator."""
        if not _names_a_cell(route, request):
            return await self._first_that_knows(route, request, metadata, deadline_seconds)
        try:
            if route.full_method == _CREATE_ORG:
                return await self._create_org(route, request, metadata, deadline_seconds)
            cell = await self.cell_for(route, request)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise _directory_unavailable(exc) from None
        reply = await self.cells[cell].call(
            route, request, metadata=metadata, deadline_seconds=deadline_seconds
        )
        if route.full_method == _CREATE_COORDINATOR:
            coordinator_id = reply.work_coordinator.coordinator_id  # type: ignore[attr-defined]
            try:
                await self._record(COORDINATOR, coordinator_id, cell)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                raise _directory_unavailable(exc) from None
        return reply

    async def _create_org(
        self,
        route: Route,
        request: _message.Message,
        metadata: tuple[tuple[str, str], ...],
        deadline_seconds: float,
    ) -> _message.Message:
        slug = request.org.slug  # type: ignore[attr-defined]
        if not slug:
            # Refused by the coordinator (the slug is required); nothing to record.
            return await self.cells[self.home].call(
                route, request, metadata=metadata, deadline_seconds=deadline_seconds
            )
        reserved = False
        cell = await self.directory.lookup(ORG, slug)
        if cell is None:
            counts = await self.directory.counts(ORG)
            fewest = min(self.cells, key=lambda name: counts.get(name, 0))
            cell = await self.directory.record(ORG, slug, fewest)
            reserved = cell == fewest
        if cell not in self.cells:
            cell, reserved = self.home, False
        try:
            reply = await self.cells[cell].call(
                route, request, metadata=metadata, deadline_seconds=deadline_seconds
            )
        except grpc.aio.AioRpcError as exc:
            if reserved and exc.code() != grpc.StatusCode.ALREADY_EXISTS:
                # Not made (bad input, no authority, …): no row left behind for it.
                await self.directory.forget(ORG, slug, cell)
            raise
        self._known[(ORG, slug)] = cell
        return reply

    async def _first_that_knows(
        self,
        route: Route,
        request: _message.Message,
        metadata: tuple[tuple[str, str], ...],
        deadline_seconds: float,
    ) -> _message.Message:
        # A request that names no coordinator and no org (who am I, the lists, users…): a work
        # key lives in its coordinator's cell, so the first cell that knows the credential
        # answers, the home cell first. UNAUTHENTICATED means the cell did nothing.
        last: grpc.aio.AioRpcError | None = None
        for cell in self.cells.values():
            try:
                return await cell.call(
                    route, request, metadata=metadata, deadline_seconds=deadline_seconds
                )
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.UNAUTHENTICATED:
                    raise
                last = exc
        assert last is not None
        raise last

    async def _record(self, kind: str, key: str, cell: str) -> None:
        if key:
            self._known[(kind, key)] = await self.directory.record(kind, key, cell)

    async def coordinator_serving(self, deadline_seconds: float = 2.0) -> bool:
        """Whether every cell's coordinator answers SERVING."""
        answers = await asyncio.gather(
            *(cell.coordinator_serving(deadline_seconds) for cell in self.cells.values())
        )
        return all(answers)

    async def close(self) -> None:
        """Close every cell's channels and the directory (when :func:`connect_upstreams` opened
        them)."""
        if not self.owns_cells:
            return
        for cell in self.cells.values():
            await cell.close()
        await self.directory.close()


def _names_a_cell(route: Route, request: _message.Message) -> bool:
    """Whether ``request`` is routed by the directory (else it is the home cell's, or the
    first cell's that knows the caller)."""
    if route.full_method in (_CREATE_ORG, _CREATE_COORDINATOR, _CREATE_WORK_KEY):
        return True
    return bool(_bound(route, request, "coordinator_id") or _bound(route, request, "org_slug"))


def _directory_unavailable(exc: BaseException) -> grpc.aio.AioRpcError:
    _log.warning("the cell directory is unavailable: %s", type(exc).__name__)
    return grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE,
        grpc.aio.Metadata(),
        grpc.aio.Metadata(),
        details="the cell directory is unavailable",
    )


def _bound(route: Route, request: _message.Message, name: str) -> str:
    """The value of the field called ``name`` the route's path binds (``coordinator_id``,
    ``work_coordinator.coordinator_id``…), else of a top-level string field of that name."""
    paths = [path for path in route.path_fields if path.rsplit(".", 1)[-1] == name]
    for path in paths or [name]:
        value: Any = request
        for part in path.split("."):
            descriptor = value.DESCRIPTOR.fields_by_name.get(part)
            if descriptor is None:
                value = None
                break
            value = getattr(value, part)
        if isinstance(value, str) and value:
            return value
    return ""


def connect_upstreams(settings: GatewaySettings) -> Upstreams:
    """One cell's :class:`Upstreams` without ``WORKCOORD_CELLS`` (as before cells), else every
    cell's, with the directory in ``WORKCOORD_CELL_DIRECTORY_URL``."""
    if not settings.cells:
        return Upstreams.connect(settings)
    cells: dict[str, Upstreams] = {}
    for cell in parse_cells(settings.cells):
        coordinator = open_channel(cell.coordinator_address, settings)
        recovery = (
            coordinator
            if cell.recovery_address == cell.coordinator_address
            else open_channel(cell.recovery_address, settings)
        )
        cells[cell.name] = Upstreams(coordinator=coordinator, recovery=recovery, owned=True)
    assert settings.cell_directory_url is not None  # the settings require it with cells
    _log.info("gateway routing to %d cells: %s", len(cells), ", ".join(cells))
    return CellUpstreams(cells, PostgresDirectory(settings.cell_directory_url), owned=True)
