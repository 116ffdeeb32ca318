"""Times into protobuf timestamps (transport/mapping/scalars.py): by date arithmetic, the same
seconds and nanos ``Timestamp.FromDatetime`` gives, set on an answer's field in place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from google.protobuf import timestamp_pb2

from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.transport.mapping.scalars import set_time, ts

TIMES = [
    datetime(2026, 12, 6, 1, 2, 3, 456789, tzinfo=UTC),
    datetime(2026, 12, 6, 1, 2, 3, 456789, tzinfo=timezone(timedelta(hours=-7, minutes=-30))),
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1901, 2, 3, 4, 5, 6, 7, tzinfo=timezone(timedelta(hours=5))),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
]


def reference(value: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value.astimezone(UTC))
    return out


@pytest.mark.parametrize("value", TIMES)
def test_ts_gives_what_from_datetime_gives(value: datetime) -> None:
    assert ts(value) == reference(value)
    assert ts(value).ToDatetime(tzinfo=UTC) == value


@pytest.mark.parametrize("value", TIMES)
def test_set_time_sets_the_field_in_place(value: datetime) -> None:
    out = lane_pb2.Attempt()
    set_time(out, "start_time", value)
    assert out.HasField("start_time")  # the epoch itself too: the field is present
    assert out.start_time == reference(value)


def test_no_time_leaves_the_field_unset() -> None:
    out = lane_pb2.Attempt()
    set_time(out, "start_time", None)
    assert not out.HasField("start_time")
    assert ts(None) is None
