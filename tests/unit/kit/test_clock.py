from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from workcoord.kit.clock import (
    ManualClock,
    OffsetFileClock,
    SystemClock,
    clock_from_env,
)


def test_system_clock_is_aware_utc() -> None:
    now = SystemClock().now()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    assert SystemClock().monotonic() <= SystemClock().monotonic()


def test_manual_clock() -> None:
    clock = ManualClock(datetime(2026, 11, 29, tzinfo=UTC))
    start = clock.monotonic()
    assert clock.advance(30) == datetime(2026, 11, 29, 0, 0, 30, tzinfo=UTC)
    clock.advance(timedelta(minutes=1))
    assert clock.monotonic() == start + 90
    clock.set(datetime(2026, 1, 1, tzinfo=UTC))
    assert clock.now().year == 2026 and clock.now().month == 1
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        ManualClock(datetime(2026, 1, 1))


def test_offset_file_clock(tmp_path: Path) -> None:
    base = ManualClock(datetime(2026, 11, 29, tzinfo=UTC))
    path = tmp_path / "offset"
    clock = OffsetFileClock(path, base=base, refresh_seconds=0.05)
    assert clock.now() == base.now()  # missing file: no offset
    path.write_text("3600\n")
    # Cached for 50 ms of (base) monotonic time.
    assert clock.now() == base.now()
    base.advance(0.06)
    assert clock.now() == base.now() + timedelta(hours=1)
    m1 = clock.monotonic()
    path.write_text("0")
    base.advance(0.06)
    assert clock.now() == base.now()
    assert clock.monotonic() >= m1  # never backwards
    path.write_text("garbage")
    base.advance(0.06)
    assert clock.offset() == 0.0


def test_offset_file_clock_sees_a_rewritten_file_at_the_next_reading(tmp_path: Path) -> None:
    base = ManualClock(datetime(2026, 11, 29, tzinfo=UTC))
    path = tmp_path / "offset"
    clock = OffsetFileClock(path, base=base)
    assert clock.offset() == 0.0
    for offset in (30.0, 90.0, 3600.0):  # no time passes between rewrite and reading
        path.write_text(f"{offset}\n")
        assert clock.now() == base.now() + timedelta(seconds=offset)


def test_clock_from_env(tmp_path: Path) -> None:
    assert isinstance(clock_from_env({}), SystemClock)
    clock = clock_from_env({"WORKCOORD_TEST_CLOCK_FILE": str(tmp_path / "f")})
    assert isinstance(clock, OffsetFileClock)
