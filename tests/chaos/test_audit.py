"""The soak's audit sees what it must: acknowledged writes held against the final state pass
when they are there and are reported as lost when they are not (on the embedded SQLite store,
with an in-process coordinator; no services, no faults)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bench.chaos.audit import audit
from bench.chaos.load import Ledger
from tests.support.databases import SqliteDatabases
from tests.support.harness import start_stack, task
from workcoord.api.v1 import maintenance_pb2


async def test_the_audit_passes_real_writes_and_reports_missing_ones(tmp_path: Path) -> None:
    url = await SqliteDatabases(tmp_path).create()
    stack = await start_stack("sqlite", url, None)
    try:
        lane = await stack.create_lane(*(task(key, "codex") for key in "abc"))
        done, failed, abandoned = await stack.lease("codex", max_items=3, lease_seconds=30)
        await stack.start(done)
        expiry = await stack.heartbeat(done)
        await stack.complete(done)
        await stack.fail(failed)
        # The abandoned lease runs out; a recovery pass expires it.
        stack.clock.advance(timedelta(minutes=5))
        await stack.service.maintenance.RunMaintenance(
            maintenance_pb2.RunMaintenanceRequest(coordinator_id=stack.cid)
        )
        ledger = Ledger()
        ledger.lanes[lane.lane_id] = 3
        for lease in (done, failed, abandoned):
            ledger.leases[lease.lease_id] = lease.item.item_id
            ledger.tokens.add(lease.lease_token)
        ledger.started.add(done.lease_id)
        ledger.heartbeats[done.lease_id] = expiry.replace(tzinfo=None)
        ledger.completed.add(done.lease_id)
        ledger.failed.add(failed.lease_id)
        ledger.abandoned.add(abandoned.lease_id)

        clean = await audit(url, stack.cid, ledger)
        assert (clean.checker, clean.lost, clean.unexpired_abandoned) == ([], [], [])
        assert clean.outcomes["attempt COMPLETED"] == 1

        # Writes the system never acknowledged, claimed as if it had: each one is caught.
        ledger.lanes["lane-that-never-was"] = 1
        ledger.lanes[lane.lane_id] = 4
        ledger.started.add(abandoned.lease_id)
        ledger.completed.add(abandoned.lease_id)
        ledger.heartbeats[abandoned.lease_id] = (expiry + timedelta(hours=1)).replace(tzinfo=None)
        forged = await audit(url, stack.cid, ledger)
        assert len(forged.lost) == 5, forged.lost
        assert forged.checker == []
    finally:
        await stack.close()
