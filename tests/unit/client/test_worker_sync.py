"""The synchronous facade: a plain function per item, over a real gRPC channel."""

from __future__ import annotations

import threading

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client.worker_loop import LoopEvent, LoopOptions
from workcoord.client.worker_sync import SyncAssignment, run_worker

from .fakes import GOOD_TOKEN, FakeCoordinator


def test_a_script_handles_one_item_with_a_plain_function(coordinator: FakeCoordinator) -> None:
    seen: list[tuple[str, str, bool, str]] = []
    events: list[LoopEvent] = []

    def handle(assignment: SyncAssignment) -> lane_pb2.Evidence:
        assignment.set_progress("half way")
        seen.append(
            (
                assignment.lease_id,
                assignment.item.item_id,
                assignment.should_stop(),
                threading.current_thread().name,
            )
        )
        return lane_pb2.Evidence(summary="done in a thread")

    identity = lane_pb2.RunIdentity(pid=1, agent_id="a", engine="e", account="bot")
    report = run_worker(
        handle,
        address=coordinator.address,
        token=GOOD_TOKEN,
        coordinator_id="c1",
        worker_id="w1",
        worker_class="machine",
        options=LoopOptions(once=True, run_identity=identity),
        handle_signals=False,
        on_event=events.append,
    )
    assert report.outcomes == {"completed": 1}
    [(lease_id, item_id, stopping, thread)] = seen
    assert (lease_id, item_id, stopping) == ("lease-1", "item-1", False)
    assert thread != threading.main_thread().name  # it ran beside the loop, not on it
    start, _ = coordinator.recorded.last("Start")
    complete, authorization = coordinator.recorded.last("Complete")
    lease, _ = coordinator.recorded.last("Lease")
    assert isinstance(start, worker_pb2.StartRequest) and start.run_identity == identity
    assert isinstance(complete, worker_pb2.CompleteRequest)
    assert complete.evidence.summary == "done in a thread"
    assert authorization == f"Bearer {GOOD_TOKEN}"
    assert isinstance(lease, worker_pb2.LeaseRequest) and lease.request_id
    assert [e.kind for e in events] == ["waiting", "leased", "started", "completed"]
