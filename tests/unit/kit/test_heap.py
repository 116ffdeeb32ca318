"""``heap.settle``: what a service built while starting is frozen out of later collections."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from workcoord.kit import heap


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_settle_freezes_the_survivors_and_collects_the_young_less_often(restored: None) -> None:
    kept = [{"n": i} for i in range(1000)]  # alive at settle: frozen
    cycle: list[object] = []
    cycle.append(cycle)  # garbage at settle: collected, not frozen
    del cycle
    _, middle, old = gc.get_threshold()
    heap.settle()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, middle, old)
    assert gc.get_count()[2] == 0  # the oldest generation holds nothing left to walk
    assert not any(o is kept for o in gc.get_objects(generation=2))
