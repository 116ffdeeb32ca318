"""What every unit suite shares: a manual clock (time moves only when a test moves it)."""

from __future__ import annotations

import pytest

from workcoord.kit.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
