"""Fixtures of the coordinator unit tests: the engine on the in-memory store, a manual clock
and an in-process bus. No I/O, no sleeping."""

from __future__ import annotations

import random

import pytest

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.bus import InProcessBus
from workcoord.kit.clock import ManualClock

from .harness import World, make_world

SERVICE_KEY = "wcsvc_unit-test-service-key"


@pytest.fixture
def store(clock: ManualClock) -> MemoryStore:
    return MemoryStore(clock)


@pytest.fixture
def bus() -> InProcessBus:
    return InProcessBus()


@pytest.fixture
def engine(store: MemoryStore, bus: InProcessBus, clock: ManualClock) -> Engine:
    # Jitter pinned to the middle: retry delays are then exactly the nominal ones.
    return Engine(store, bus, clock, uniform=lambda: 0.5, service_key=SERVICE_KEY)


@pytest.fixture
async def world(engine: Engine) -> World:
    return await make_world(engine)


@pytest.fixture
def rng() -> random.Random:
    return random.Random(1234)
