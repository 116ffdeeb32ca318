"""The column types and the metadata every coordinator table is declared on (the tables are in
:mod:`.schema` and :mod:`.schema_outbound`): UTC datetimes on every dialect, JSON that is JSONB on
PostgreSQL, and the storage parameters of the tables updated on every transition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, String
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

__all__ = ["NAMING", "Id", "Json", "Time", "UtcDateTime", "hot_storage", "metadata"]

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every dialect.

    PostgreSQL stores ``timestamptz``; SQLite has no time zones, so values are stored as naive
    UTC (which also keeps their text form sortable) and read back as aware UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    # Both run for every time value of every row the hot paths read and write: a value already
    # in UTC (the coordinator's clock gives them so, asyncpg reads them so) is taken as it is,
    # with no ``astimezone`` call.

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not UTC:
            if value.tzinfo is None:
                raise ValueError("naive datetime given to a UTC column")
            value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        tz = value.tzinfo
        if tz is UTC:
            return value
        return value.replace(tzinfo=UTC) if tz is None else value.astimezone(UTC)


Id = String(64)
Time = UtcDateTime()
Json = JSON().with_variant(JSONB(), "postgresql")


def hot_storage(fillfactor: int) -> dict[str, Any]:
    """PostgreSQL storage parameters of a table updated on every transition: vacuumed early,
    with room left on each page for HOT updates (set by migration 0002)."""
    return {
        "postgresql_with": {
            "fillfactor": fillfactor,
            "autovacuum_vacuum_scale_factor": 0.02,
            "autovacuum_analyze_scale_factor": 0.02,
        }
    }
