"""Routing between cells (cells.py): which cell answers each request, what the directory
records, and the settings that turn cells on."""

from __future__ import annotations

from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import message as _message

from workcoord.api.v1 import admin_pb2, work_coordinator_pb2, worker_pb2
from workcoord.gateway.cells import CellUpstreams, MemoryDirectory, parse_cells
from workcoord.gateway.routes import Route, load_routes
from workcoord.gateway.upstream import Upstreams
from workcoord.kit.settings import GatewaySettings, SettingsError, load


class _Unauthenticated(grpc.aio.AioRpcError):
    def __init__(self) -> None:
        super().__init__(
            grpc.StatusCode.UNAUTHENTICATED,
            grpc.aio.Metadata(),
            grpc.aio.Metadata(),
            details="unknown credential",
        )


# The requests of these tests that name no coordinator and no org.
_ASKED_OF_THE_CALLERS_CELL = {"GetCurrentPrincipal", "ListWorkCoordinators", "ListUsers"}


class _Refused(grpc.aio.AioRpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=code.name)


class _Cell(Upstreams):
    """A cell that records what it was asked and answers from ``replies``."""

    def __init__(self, name: str, knows_caller: bool = True) -> None:
        super().__init__(coordinator=None, recovery=None)  # type: ignore[arg-type]
        self.name = name
        self.knows_caller = knows_caller
        self.asked: list[str] = []
        self.refuse: grpc.StatusCode | None = None

    async def call(
        self,
        route: Route,
        request: _message.Message,
        *,
        metadata: tuple[tuple[str, str], ...],
        deadline_seconds: float,
    ) -> _message.Message:
        self.asked.append(route.method.name)
        if self.refuse is not None:
            raise _Refused(self.refuse)
        reply: Any = route.response_class()
        name = route.method.name
        if name == "CreateOrg":
            reply.org.slug = request.org.slug  # type: ignore[attr-defined]
        elif name == "CreateWorkCoordinator":
            reply.work_coordinator.coordinator_id = f"wc_{self.name}_{len(self.asked)}"
        elif name in _ASKED_OF_THE_CALLERS_CELL and not self.knows_caller:
            raise _Unauthenticated()
        return reply  # type: ignore[no-any-return]


def _route(method: str) -> Route:
    found = [r for r in load_routes().routes if r.method.name == method and r.binding_index == 0]
    return found[0]


async def _call(cells: CellUpstreams, method: str, request: _message.Message) -> Any:
    return await cells.call(_route(method), request, metadata=(), deadline_seconds=5)


def _two_cells(
    directory: MemoryDirectory | None = None, *, b_knows_caller: bool = True
) -> tuple[CellUpstreams, _Cell, _Cell]:
    a, b = _Cell("a", knows_caller=False), _Cell("b", knows_caller=b_knows_caller)
    return CellUpstreams({"a": a, "b": b}, directory or MemoryDirectory()), a, b


async def test_orgs_spread_and_coordinators_follow_their_org() -> None:
    directory = MemoryDirectory()
    cells, a, b = _two_cells(directory)
    for slug in ("one", "two"):
        await _call(cells, "CreateOrg", admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=slug)))
    assert directory.rows == {("org", "one"): "a", ("org", "two"): "b"}
    create = work_coordinator_pb2.CreateWorkCoordinatorRequest(
        work_coordinator=work_coordinator_pb2.WorkCoordinator(org_slug="two")
    )
    created = await _call(cells, "CreateWorkCoordinator", create)
    coordinator_id = created.work_coordinator.coordinator_id
    assert coordinator_id.startswith("wc_b_")
    assert directory.rows[("coordinator", coordinator_id)] == "b"
    key = admin_pb2.CreateWorkKeyRequest(work_key=admin_pb2.WorkKey(org_slug="two"))
    await _call(cells, "CreateWorkKey", key)
    assert b.asked == ["CreateOrg", "CreateWorkCoordinator", "CreateWorkKey"]

    # A worker's calls go to the coordinator's cell, by the id the path binds.
    await _call(cells, "Lease", worker_pb2.LeaseRequest(coordinator_id=coordinator_id))
    assert b.asked[-1] == "Lease"
    assert a.asked == ["CreateOrg"]


async def test_unknown_and_unrecorded_coordinators_go_to_the_home_cell() -> None:
    directory = MemoryDirectory({("coordinator", "wc_gone"): "retired-cell"})
    cells, a, b = _two_cells(directory)
    a.knows_caller = True
    for coordinator_id in ("wc_unknown", "wc_gone"):
        await _call(cells, "Lease", worker_pb2.LeaseRequest(coordinator_id=coordinator_id))
    await _call(cells, "ListUsers", admin_pb2.ListUsersRequest())
    assert a.asked == ["Lease", "Lease", "ListUsers"]
    assert b.asked == []


async def test_the_directory_is_read_once_per_coordinator() -> None:
    class Counting(MemoryDirectory):
        lookups = 0

        async def lookup(self, kind: str, key: str) -> str | None:
            Counting.lookups += 1
            return await super().lookup(kind, key)

    directory = Counting({("coordinator", "wc_b"): "b"})
    cells, _, b = _two_cells(directory)
    for _ in range(3):
        await _call(cells, "Lease", worker_pb2.LeaseRequest(coordinator_id="wc_b"))
    assert b.asked == ["Lease"] * 3
    assert Counting.lookups == 1


async def test_the_caller_is_asked_of_every_cell_until_one_knows_it() -> None:
    cells, a, b = _two_cells()
    await _call(cells, "GetCurrentPrincipal", admin_pb2.GetCurrentPrincipalRequest())
    assert (a.asked, b.asked) == (["GetCurrentPrincipal"], ["GetCurrentPrincipal"])
    # Any request that names no coordinator and no org: a key of cell b lists cell b's.
    await _call(cells, "ListWorkCoordinators", work_coordinator_pb2.ListWorkCoordinatorsRequest())
    assert (a.asked[-1], b.asked[-1]) == ("ListWorkCoordinators", "ListWorkCoordinators")
    # A cell that knows the caller answers alone.
    home_knows = CellUpstreams({"a": _Cell("a"), "b": _Cell("b")}, MemoryDirectory())
    await _call(home_knows, "ListUsers", admin_pb2.ListUsersRequest())
    assert [c.asked for c in home_knows.cells.values()] == [["ListUsers"], []]  # type: ignore[attr-defined]
    nobody, _, _ = _two_cells(b_knows_caller=False)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await _call(nobody, "GetCurrentPrincipal", admin_pb2.GetCurrentPrincipalRequest())
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_feed_opens_in_its_coordinators_cell() -> None:
    cells, _, b = _two_cells(MemoryDirectory({("coordinator", "wc_b"): "b"}))
    from workcoord.api.v1 import feed_pb2

    target = await cells.route_to(_route("Watch"), feed_pb2.WatchRequest(coordinator_id="wc_b"))
    assert target is b


async def test_an_org_the_cell_refuses_leaves_no_directory_row() -> None:
    directory = MemoryDirectory()
    cells, a, _ = _two_cells(directory)
    a.refuse = grpc.StatusCode.INVALID_ARGUMENT
    request = admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug="Bad Slug"))
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await _call(cells, "CreateOrg", request)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert directory.rows == {}


async def test_an_org_created_twice_goes_to_the_same_cell() -> None:
    directory = MemoryDirectory({("org", "taken"): "b", ("org", "x"): "b"})
    cells, a, b = _two_cells(directory)
    b.refuse = grpc.StatusCode.PERMISSION_DENIED
    request = admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug="taken"))
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await _call(cells, "CreateOrg", request)
    # The cell holding it answers (not the one with fewest orgs), and its row stays.
    assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert (a.asked, b.asked) == ([], ["CreateOrg"])
    assert directory.rows[("org", "taken")] == "b"


async def test_the_directory_unreachable_is_unavailable() -> None:
    class Down(MemoryDirectory):
        async def lookup(self, kind: str, key: str) -> str | None:
            raise ConnectionRefusedError(111, "refused")

        async def counts(self, kind: str) -> dict[str, int]:
            raise ConnectionRefusedError(111, "refused")

    cells, a, b = _two_cells(Down())
    for method, request in (
        ("Lease", worker_pb2.LeaseRequest(coordinator_id="wc_x")),
        ("CreateOrg", admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug="new"))),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await _call(cells, method, request)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "directory" in (raised.value.details() or "")
    from workcoord.api.v1 import feed_pb2

    with pytest.raises(grpc.aio.AioRpcError):
        await cells.route_to(_route("Watch"), feed_pb2.WatchRequest(coordinator_id="wc_x"))
    assert (a.asked, b.asked) == ([], [])


def test_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load(GatewaySettings).cells == []  # no configuration: one cell, as before
    monkeypatch.setenv("WORKCOORD_CELLS", "a=127.0.0.1:1/127.0.0.1:2, b=h:3/h:4")
    with pytest.raises(SettingsError, match="WORKCOORD_CELL_DIRECTORY_URL"):
        load(GatewaySettings)
    monkeypatch.setenv("WORKCOORD_CELL_DIRECTORY_URL", "postgresql://127.0.0.1/directory")
    cells = parse_cells(load(GatewaySettings).cells)
    assert [(c.name, c.coordinator_address, c.recovery_address) for c in cells] == [
        ("a", "127.0.0.1:1", "127.0.0.1:2"),
        ("b", "h:3", "h:4"),
    ]
    for bad in ("a=127.0.0.1:1", "A=h:1/h:2", "a=h:1/h:2,a=h:3/h:4", "a=h/h:2"):
        monkeypatch.setenv("WORKCOORD_CELLS", bad)
        with pytest.raises(SettingsError, match="WORKCOORD_CELLS"):
            load(GatewaySettings)
