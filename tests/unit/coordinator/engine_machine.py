"""The base of every engine state machine: :class:`EngineMachine` owns an event loop
(Hypothesis rules are synchronous), a manual clock, a store made by a :data:`StoreFactory`, an
in-process bus, the engine and a fresh org with its work coordinator.

The store is a parameter: the unit suite uses :func:`memory_store`,
``tests/integration/test_properties_sql.py`` passes SQLite and PostgreSQL factories.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.bus import InProcessBus
from workcoord.kit.clock import Clock, ManualClock

from .harness import World, make_world

_T = TypeVar("_T")

StoreFactory = Callable[[Clock], AbstractAsyncContextManager[Store]]


@asynccontextmanager
async def memory_store(clock: Clock) -> AsyncIterator[Store]:
    """The in-memory store, as a :data:`StoreFactory`."""
    yield MemoryStore(clock)


def machine_settings(max_examples: int, steps: int, *, derandomize: bool = False) -> settings:
    """Hypothesis settings for an engine machine: no deadline (a step may touch a database),
    no example database, and no complaint about slow or heavily filtered data."""
    return settings(
        max_examples=max_examples,
        derandomize=derandomize,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        database=None,
    )


class EngineMachine(RuleBasedStateMachine):
    """What every engine machine owns: an event loop (Hypothesis rules are synchronous), a
    manual clock, a store from ``store_factory``, an in-process bus, the engine (retry jitter
    from a ``seed``ed generator) and a fresh org with its work coordinator."""

    def __init__(self, store_factory: StoreFactory = memory_store, seed: int = 7) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = ManualClock()
        self._store_cm = store_factory(self.clock)
        self.store = self.run(self._store_cm.__aenter__())
        self.bus = InProcessBus()
        self.engine = Engine(self.store, self.bus, self.clock, uniform=random.Random(seed).random)
        self.world: World = self.run(make_world(self.engine))

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        try:
            self.run(self._store_cm.__aexit__(None, None, None))
            self.run(self.bus.close())
        finally:
            self.loop.close()

    @property
    def cid(self) -> str:
        return self.world.cid
