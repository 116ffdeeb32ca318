"""The value conversions every hot row goes through: UTC datetimes both ways (storage/
column_types.py) and the PostgreSQL engine's JSON reader (storage/sql/engine.py), whose
shortcuts must give what the general path gives."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite

from workcoord.coordinator.storage.column_types import UtcDateTime
from workcoord.coordinator.storage.sql.engine import read_json

PG = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
LITE = SQLiteDialect_aiosqlite()
T0 = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)
PLUS_TWO = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    "text",
    ["{}", "[]", "null", '{"a": [1, {}]}', "[[]]", '""', "0", '{"maxAttempts": 3}', " {}"],
)
def test_read_json_gives_what_json_loads_gives(text: str) -> None:
    assert read_json(text) == json.loads(text)
    assert type(read_json(text)) is type(json.loads(text))


def test_read_json_gives_a_new_object_each_time() -> None:
    first: Any = read_json("[]")
    first.append(1)
    assert read_json("[]") == []
    second: Any = read_json("{}")
    second["k"] = 1
    assert read_json("{}") == {}


@pytest.mark.parametrize("value", [T0, T0.astimezone(PLUS_TWO)])
def test_a_time_is_written_in_utc(value: datetime) -> None:
    kind = UtcDateTime()
    on_pg = kind.process_bind_param(value, PG)
    assert on_pg == T0 and on_pg is not None and on_pg.tzinfo is UTC
    on_sqlite = kind.process_bind_param(value, LITE)
    assert on_sqlite == T0.replace(tzinfo=None) and on_sqlite is not None
    assert on_sqlite.tzinfo is None


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        UtcDateTime().process_bind_param(T0.replace(tzinfo=None), PG)


@pytest.mark.parametrize(
    ("stored", "dialect"),
    [
        (T0, PG),
        (T0.astimezone(PLUS_TWO), PG),
        (T0.replace(tzinfo=None), LITE),
        ("2026-01-01 12:30:00", LITE),
    ],
)
def test_a_time_is_read_as_aware_utc(stored: Any, dialect: Any) -> None:
    read = UtcDateTime().process_result_value(stored, dialect)
    assert read == T0 and read is not None and read.tzinfo is UTC
