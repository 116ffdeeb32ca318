"""Driver errors become workcoord errors here, at the storage edge: the one place that says
which failures mean "the database cannot be reached, retry later" (UNAVAILABLE).

A connection that cannot be opened surfaces unwrapped (``OSError``, asyncpg's own errors, the
pool's timeout); one lost mid-transaction comes wrapped by SQLAlchemy (``OperationalError``, or
another error wrapping one of asyncpg's connection errors). Either way the caller gets UNAVAILABLE,
which clients retry with backoff. A ``DataError`` the validation let through is a bug: INTERNAL,
logged once here with its SQLSTATE (never the statement's values).

A transaction PostgreSQL failed to break a deadlock (SQLSTATE 40P01) or a serialization failure
(40001) is ABORTED (:class:`StorageConflict`): nothing of it was written, and the same call may
succeed at once, so clients retry it. The lock order (docs/architecture.md, "Lock order") is
meant to make a deadlock impossible: one is logged as an error all the same.

An integrity error is told apart by the constraint it broke (see :mod:`..integrity`): the
constraint's name comes with the error on PostgreSQL; SQLite names only the columns of a unique
key ("UNIQUE constraint failed: users.email"), which the schema maps back to the key's name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg
from sqlalchemy import Index, PrimaryKeyConstraint, UniqueConstraint
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from workcoord.kit.errors import Code, Internal, WorkcoordError

from .. import schema as t
from ..integrity import violation

__all__ = [
    "StorageConflict",
    "StorageUnavailable",
    "constraint_of",
    "storage_error",
    "storage_errors",
    "translate",
]

_log = logging.getLogger(__name__)

# Driver errors meaning the server cannot be reached or will not serve now (PostgreSQL's
# classes 08 connection, 53 insufficient resources, 57 operator intervention), and OSError
# (refused, reset, unreachable, timed out) from opening a connection.
_UNREACHABLE: tuple[type[BaseException], ...] = (
    OSError,
    PoolTimeout,
    asyncpg.PostgresConnectionError,
    asyncpg.InsufficientResourcesError,
    asyncpg.OperatorInterventionError,
    asyncpg.InterfaceError,
)

_SQLITE_UNIQUE = "UNIQUE constraint failed: "

# SQLSTATEs of a transaction the database failed for another's sake: deadlock detected,
# serialization failure.
_CONFLICTS = frozenset({"40P01", "40001"})


class StorageUnavailable(WorkcoordError):
    """The database cannot be reached or refused the transaction; retry later."""

    code = Code.UNAVAILABLE
    reason = "STORAGE_UNAVAILABLE"
    default_message = "the database is unavailable; retry later"


class StorageConflict(WorkcoordError):
    """The database failed the transaction to let another through (a deadlock, a serialization
    failure); nothing of it was written: retry."""

    code = Code.ABORTED
    reason = "ABORTED"
    default_message = "the transaction conflicted with another and was rolled back; retry"


def storage_error(exc: BaseException) -> WorkcoordError | None:
    """The workcoord error ``exc`` (raised by storage) stands for; None if it is not the
    database's (let it through: a bug elsewhere, logged as such)."""
    if isinstance(exc, DBAPIError):
        return translate(exc)
    if isinstance(exc, _UNREACHABLE):
        return StorageUnavailable()
    return None


@contextmanager
def storage_errors() -> Iterator[None]:
    """Raise what the block raises as the workcoord error it stands for (see
    :func:`storage_error`); workcoord errors, and errors that are not the database's, go
    through as they are."""
    try:
        yield
    except WorkcoordError:
        raise
    except Exception as exc:
        error = storage_error(exc)
        if error is None:
            raise
        raise error from exc


def translate(exc: DBAPIError) -> WorkcoordError:
    """The workcoord error a driver error stands for."""
    if isinstance(exc, IntegrityError):
        return violation(constraint_of(exc))
    if isinstance(exc, OperationalError) or exc.connection_invalidated:
        return StorageUnavailable()
    driver_error = getattr(exc.orig, "driver_exception", None) or exc.orig
    if isinstance(driver_error, _UNREACHABLE):
        return StorageUnavailable()
    sqlstate = getattr(driver_error, "sqlstate", None) or getattr(exc.orig, "sqlstate", "")
    if sqlstate in _CONFLICTS:
        _log.error("storage conflict (%s, SQLSTATE %s)", type(driver_error).__name__, sqlstate)
        return StorageConflict()
    kind = "data error" if isinstance(exc, DataError) else "database error"
    _log.error("storage %s (%s, SQLSTATE %s)", kind, type(driver_error).__name__, sqlstate)
    return Internal()


def constraint_of(exc: IntegrityError) -> str | None:
    """The name of the constraint ``exc`` broke, when the database tells it."""
    driver_error = getattr(exc.orig, "driver_exception", None)  # asyncpg, wrapped by SQLAlchemy
    name = getattr(driver_error, "constraint_name", None)
    if isinstance(name, str):
        return name
    message = str(exc.orig)
    if message.startswith(_SQLITE_UNIQUE):
        return _SQLITE_UNIQUE_KEYS.get(message.removeprefix(_SQLITE_UNIQUE))
    # SQLite does not name other constraints; its error code says which kind failed.
    kind = getattr(exc.orig, "sqlite_errorname", None)
    return kind if isinstance(kind, str) else None


def _sqlite_unique_keys() -> dict[str, str]:
    """SQLite's way of naming each unique key of the schema ("table.column, …") -> its name."""
    keys: dict[str, str] = {}
    for table in t.metadata.tables.values():
        uniques: list[tuple[str, list[str]]] = []
        for constraint in table.constraints:
            if isinstance(constraint, PrimaryKeyConstraint | UniqueConstraint):
                uniques.append((str(constraint.name), [c.name for c in constraint.columns]))
        for index in table.indexes:
            if isinstance(index, Index) and index.unique:
                uniques.append((str(index.name), [c.name for c in index.columns]))
        for name, columns in uniques:
            spelled = ", ".join(f"{table.name}.{column}" for column in columns)
            if spelled in keys:
                raise RuntimeError(f"{name} and {keys[spelled]} cover the same columns")
            keys[spelled] = name
    return keys


_SQLITE_UNIQUE_KEYS = _sqlite_unique_keys()
