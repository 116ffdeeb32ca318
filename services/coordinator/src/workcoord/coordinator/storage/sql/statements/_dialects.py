"""Statements that differ between PostgreSQL and SQLite."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite


@dataclass(frozen=True, slots=True)
class ByDialect:
    """One statement in each dialect's spelling (built once)."""

    postgresql: Any
    sqlite: Any

    def of(self, dialect: str) -> Any:
        """The statement for ``dialect`` ("postgresql" or "sqlite")."""
        return self.postgresql if dialect == "postgresql" else self.sqlite


def upsert(build: Callable[[Any], Any]) -> ByDialect:
    """``build(insert)`` with each dialect's ``INSERT … ON CONFLICT`` (the same API on both)."""
    return ByDialect(build(postgresql.insert), build(sqlite.insert))
