"""Two cells behind one gateway (docs/cells.md): coordinators are created in both, each lives
in its own cell's database only, and leasing, the feed and the caller check go through the one
gateway to the right cell, MCP included; an unknown coordinator is the NOT_FOUND of one cell."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from websockets.sync.client import connect

from tests.support.databases import asyncpg_dsn
from tests.support.mcp_agents import http_agent
from tests.support.processes import run_in_thread
from tests.support.rest import expect_status, ok

from .cells import CellsSystem, running_cells
from .rest import EXAMPLE_LANE, Tenant, make_tenant

pytestmark = [pytest.mark.e2e, pytest.mark.pg, pytest.mark.redis]


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CellsSystem]:
    with running_cells(Path(tmp_path_factory.mktemp("e2e-cells"))) as system:
        yield system


def _query(database_url: str, statement: str, *args: object) -> list[asyncpg.Record]:
    async def run() -> list[asyncpg.Record]:
        connection = await asyncpg.connect(asyncpg_dsn(database_url))
        try:
            return list(await connection.fetch(statement, *args))
        finally:
            await connection.close()

    result: list[asyncpg.Record] = run_in_thread(lambda: asyncio.run(run()))
    return result


def _coordinators_in(database_url: str) -> set[str]:
    rows = _query(database_url, "SELECT coordinator_id FROM work_coordinators")
    return {row["coordinator_id"] for row in rows}


def _lease_all(tenant: Tenant) -> int:
    """Lease, start and complete the example lane's two machine items; how many were done."""
    tenant.create_lane()
    leases = tenant.lease("machine")
    for lease in leases:
        tenant.start(lease)
        tenant.complete(lease)
    return len(leases)


def test_coordinators_in_both_cells_lease_through_one_gateway(cells: CellsSystem) -> None:
    first, second = make_tenant(cells), make_tenant(cells)
    try:
        # Placed by the fewest orgs: one org (and its coordinator) in each cell.
        directory = {
            (row["kind"], row["key"]): row["cell"]
            for row in _query(
                cells.directory_url, "SELECT kind, key, cell FROM workcoord_cell_directory"
            )
        }
        placed = {
            directory[("coordinator", first.coordinator_id)],
            directory[("coordinator", second.coordinator_id)],
        }
        assert placed == {"a", "b"}
        assert (
            directory[("org", first.org_slug)] == directory[("coordinator", first.coordinator_id)]
        )
        by_cell = {cell.name: _coordinators_in(cell.database_url) for cell in cells.cells}
        for tenant in (first, second):
            home = directory[("coordinator", tenant.coordinator_id)]
            other = "b" if home == "a" else "a"
            assert tenant.coordinator_id in by_cell[home]
            assert tenant.coordinator_id not in by_cell[other]

        # Leasing through the one gateway, each key in its own cell.
        assert _lease_all(first) == 2
        assert _lease_all(second) == 2
        for tenant in (first, second):
            lanes = ok(tenant.worker.get(f"{tenant.base}/lanes"))["lanes"]
            assert len(lanes) == 1
            # Who the caller is: asked of the cell that knows the key.
            me = ok(tenant.worker.get("/v1/me"))
            assert json.dumps(me).find(tenant.key["keyId"]) >= 0
    finally:
        first.close()
        second.close()


def test_unknown_coordinator_is_not_found(cells: CellsSystem) -> None:
    with httpx.Client(
        base_url=cells.gateway_url, headers={"Authorization": f"Bearer {cells.admin_token}"}
    ) as admin:
        expect_status(admin.get("/v1/work-coordinators/wc_doesnotexist000000"), 404, 5, "NOT_FOUND")
        expect_status(
            admin.post(
                "/v1/work-coordinators/wc_doesnotexist000000/leases",
                json={"workerId": "w", "workerClass": "machine", "maxItems": 1, "leaseSeconds": 30},
            ),
            404,
            5,
            "NOT_FOUND",
        )


def test_a_refused_org_leaves_no_directory_row(cells: CellsSystem) -> None:
    with httpx.Client(
        base_url=cells.gateway_url, headers={"Authorization": f"Bearer {cells.admin_token}"}
    ) as admin:
        refused = expect_status(
            admin.post("/v1/orgs", json={"slug": "Not A Slug!", "displayName": "x"}),
            400,
            3,
            "INVALID_ARGUMENT",
        )
        assert "slug" in json.dumps(refused)
    rows = _query(
        cells.directory_url, "SELECT key FROM workcoord_cell_directory WHERE key = 'Not A Slug!'"
    )
    assert rows == []


def test_feed_of_a_coordinator_in_the_second_cell(cells: CellsSystem) -> None:
    tenants = [make_tenant(cells), make_tenant(cells)]
    try:
        rows = _query(
            cells.directory_url,
            "SELECT key FROM workcoord_cell_directory WHERE kind = 'coordinator' AND cell = 'b'",
        )
        in_b = {row["key"] for row in rows}
        tenant = next(t for t in tenants if t.coordinator_id in in_b)
        url = cells.gateway_url.replace("http://", "ws://") + f"{tenant.base}/ws"
        secret = tenant.key["secret"]
        with connect(url, additional_headers={"Authorization": f"Bearer {secret}"}) as feed:
            frame = json.loads(feed.recv(timeout=60))
            while frame["type"] != "snapshot":  # hello first, then the snapshot
                frame = json.loads(feed.recv(timeout=60))
            before = int(frame["revision"])
            tenant.create_lane()
            # The lane's events arrive as a delta past the snapshot (cell b's feed).
            while frame["type"] != "delta":
                frame = json.loads(feed.recv(timeout=60))
            assert int(frame["toRevision"]) > before
    finally:
        for tenant in tenants:
            tenant.close()


async def test_an_mcp_agent_with_a_key_of_the_second_cell(cells: CellsSystem) -> None:
    tenants = [make_tenant(cells), make_tenant(cells)]
    try:
        rows = _query(
            cells.directory_url,
            "SELECT key FROM workcoord_cell_directory WHERE kind = 'coordinator' AND cell = 'b'",
        )
        in_b = {row["key"] for row in rows}
        tenant = next(t for t in tenants if t.coordinator_id in in_b)
        cid = tenant.coordinator_id
        gateway = cells.gateway_url.removeprefix("http://")
        async with http_agent([gateway], str(tenant.key["secret"])) as agent:
            # Signed in and listed by cell b (the home cell does not know the key).
            listed = await agent.ok("work_coordinators", {})
            assert [c["coordinatorId"] for c in listed["workCoordinators"]] == [cid]
            await agent.ok("create_lane", {"coordinatorId": cid, **EXAMPLE_LANE})
            leased = await agent.ok(
                "lease_work",
                {
                    "coordinatorId": cid,
                    "workerId": "agent-b",
                    "workerClass": "machine",
                    "maxItems": 2,
                    "leaseSeconds": 30,
                    "waitSeconds": 0,
                },
            )
            assert len(leased["leases"]) == 2
    finally:
        for tenant in tenants:
            tenant.close()
