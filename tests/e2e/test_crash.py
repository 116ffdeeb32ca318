"""kill -9 of the coordinator mid-run: nothing committed is lost, revisions continue gap-free,
and work carries on once it is back (the gateway and recovery processes keep running)."""

from __future__ import annotations

import threading
import time

import httpx

from tests.support.processes import WAIT_SECONDS
from tests.support.rest import JSON, bearer, items_by_key, ok, run_identity

from .harness import ON_THE_SYSTEM, System
from .rest import Tenant

pytestmark = ON_THE_SYSTEM

# Lanes the background writer creates: one agent item each (the test leases machine/person work).
SMALL_LANE: JSON = {
    "title": "crash probe",
    "template": "CUSTOM",
    "items": [{"key": "only", "kind": "TASK", "workerClass": "agent"}],
}


class LaneWriter(threading.Thread):
    """Creates lanes over REST as fast as it can, remembering which ones were acknowledged."""

    def __init__(self, system: System, tenant: Tenant) -> None:
        super().__init__(name="lane-writer", daemon=True)
        self.url = f"{system.gateway_url}{tenant.base}/lanes"
        self.token = tenant.key["secret"]
        self.acknowledged: list[str] = []
        self.refused: list[int] = []
        self.unexpected: list[str] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        headers = bearer(self.token)
        with httpx.Client(headers=headers, timeout=10.0) as client:
            while not self.stopping.is_set():
                try:
                    response = client.post(self.url, json=SMALL_LANE)
                except httpx.HTTPError:
                    self.refused.append(0)
                    time.sleep(0.1)
                    continue
                if response.status_code == 200:
                    self.acknowledged.append(response.json()["laneId"])
                elif response.status_code in (503, 504):
                    # The coordinator is down (or went down mid-call): not acknowledged.
                    self.refused.append(response.status_code)
                    time.sleep(0.1)
                else:
                    self.unexpected.append(f"{response.status_code} {response.text}")

    def wait_for(self, count: int, timeout: float = WAIT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) < count:
            assert time.monotonic() < deadline, (self.acknowledged, self.refused, self.unexpected)
            assert self.is_alive()
            time.sleep(0.01)


def test_kill_9_of_the_coordinator_loses_nothing_committed(system: System, tenant: Tenant) -> None:
    lane = tenant.create_lane()
    items = items_by_key(lane)
    running, leased = tenant.lease("machine", lease_seconds=300)
    tenant.start(running)
    events_before = tenant.events()

    writer = LaneWriter(system, tenant)
    writer.start()
    try:
        writer.wait_for(5)
        system.coordinator.kill()
        killed_at = len(writer.acknowledged)

        # While it is down the gateway answers a Status, not a hang or a 500.
        down = tenant.worker.get(tenant.base)
        assert down.status_code == 503, down.text
        assert down.json()["code"] == 14

        system.coordinator.start()
        system.wait_ready()
        writer.wait_for(killed_at + 5)
    finally:
        writer.stopping.set()
        writer.join(timeout=15)
    assert not writer.unexpected, writer.unexpected
    assert writer.refused, "the kill happened while nothing was writing"

    # Every acknowledged write survived, exactly once.
    events_after = tenant.events(page_size=500)
    assert events_after[: len(events_before)] == events_before
    revisions = [int(event["revision"]) for event in events_after]
    assert revisions == list(range(1, len(revisions) + 1))
    created = [e["laneId"] for e in events_after if e["type"] == "LANE_CREATED"]
    assert len(created) == len(set(created))
    assert set(writer.acknowledged) <= set(created)
    for lane_id in writer.acknowledged[killed_at - 2 : killed_at + 2]:
        assert tenant.lane(lane_id)["items"][0]["state"] == "QUEUED"

    # The lease taken before the crash is still live: its worker finishes, and work continues.
    assert tenant.item(lane["laneId"], running["item"]["itemId"])["state"] == "RUNNING"
    tenant.complete(running)
    tenant.start(leased)
    tenant.complete(leased)
    assert tenant.item(lane["laneId"], items["c"]["itemId"])["state"] == "QUEUED"
    [person] = tenant.lease("person", runIdentity=run_identity())
    tenant.complete(person)
    assert tenant.lane(lane["laneId"])["state"] == "DONE"

    final = tenant.events(page_size=500)
    assert [int(e["revision"]) for e in final] == list(range(1, len(final) + 1))
    assert final[: len(events_after)] == events_after
    assert int(final[-1]["revision"]) == tenant.revision()
    # The restarted coordinator serves the whole system again, recovery included.
    assert ok(tenant.admin.post(f"{tenant.base}/maintain", json={}))["coordinatorId"] == (
        tenant.coordinator_id
    )
