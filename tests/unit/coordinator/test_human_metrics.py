"""The metrics of work waiting on people: items awaiting a human (by reason, with the age of
the oldest) as the sampler reads them, and the ready → leased wait observed at commit."""

from __future__ import annotations

from prometheus_client import REGISTRY

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.metrics import MeteredStore, QueueSampler
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.bus import InProcessBus
from workcoord.kit.clock import ManualClock

from .conftest import SERVICE_KEY
from .harness import lease_one, make_world, new_lane, task


def _wait_count() -> float:
    return REGISTRY.get_sample_value("workcoord_ready_wait_seconds_count") or 0.0


def _wait_sum() -> float:
    return REGISTRY.get_sample_value("workcoord_ready_wait_seconds_sum") or 0.0


async def test_awaiting_human_and_ready_wait(
    store: MemoryStore, bus: InProcessBus, clock: ManualClock
) -> None:
    engine = Engine(MeteredStore(store), bus, clock, uniform=lambda: 0.5, service_key=SERVICE_KEY)
    world = await make_world(engine)
    await new_lane(
        engine,
        world,
        task("ship", requires_approval=True),
        task("ask", "person", needs_human=True),
        task("build"),
    )
    sampler = QueueSampler(store, clock=clock)
    clock.advance(90)
    await sampler.refresh()
    assert sampler.human == {(world.cid, "approval"): (1, 90.0), (world.cid, "stopped"): (1, 90.0)}
    labels = {"coordinator": world.cid, "reason": "approval"}
    sampled = REGISTRY.get_sample_value("workcoord_items_awaiting_human", labels)
    assert sampled is None  # not registered until started
    sampler.start()
    try:
        assert REGISTRY.get_sample_value("workcoord_items_awaiting_human", labels) == 1.0
        oldest = REGISTRY.get_sample_value("workcoord_awaiting_human_oldest_seconds", labels)
        assert oldest == 90.0
    finally:
        await sampler.stop()

    count, total = _wait_count(), _wait_sum()
    await lease_one(engine, world)
    assert _wait_count() == count + 1
    assert _wait_sum() - total == 90.0
