"""Which storage failures answer UNAVAILABLE (retry later) and which INTERNAL, in one place."""

from __future__ import annotations

import logging

import asyncpg
import pytest
from sqlalchemy.exc import DataError, DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from workcoord.coordinator.storage.sql.errors import (
    StorageConflict,
    StorageUnavailable,
    storage_error,
)
from workcoord.kit.errors import Code


class _Wrapped(Exception):
    """What SQLAlchemy's asyncpg adapter puts in ``orig``: the driver's error inside."""

    def __init__(self, driver: BaseException) -> None:
        super().__init__(str(driver))
        self.driver_exception = driver
        self.sqlstate = getattr(driver, "sqlstate", None)


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedError(111, "Connect call failed"),
        ConnectionError("PostgreSQL server rejected SSL upgrade"),
        TimeoutError(),
        PoolTimeout("QueuePool limit reached"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.TooManyConnectionsError("too many clients"),
        asyncpg.ConnectionDoesNotExistError("connection was closed"),
        OperationalError("SELECT 1", {}, Exception("database is locked")),
        InterfaceError("SELECT 1", {}, _Wrapped(asyncpg.InterfaceError("connection is closed"))),
    ],
)
def test_an_unreachable_database_is_unavailable(exc: BaseException) -> None:
    error = storage_error(exc)
    assert isinstance(error, StorageUnavailable)
    assert error.code == Code.UNAVAILABLE


def test_a_data_error_is_internal_and_logged_once_without_values(
    caplog: pytest.LogCaptureFixture,
) -> None:
    driver = asyncpg.NumericValueOutOfRangeError("value 999999999999 out of range")
    exc = DataError("INSERT …", {"secret": "s3cr3t"}, _Wrapped(driver))
    with caplog.at_level(logging.ERROR):
        error = storage_error(exc)
    assert error is not None and error.code == Code.INTERNAL
    [record] = caplog.records
    assert "22003" in record.getMessage()
    assert "s3cr3t" not in record.getMessage() and "999999" not in record.getMessage()


@pytest.mark.parametrize(
    "driver",
    [
        asyncpg.DeadlockDetectedError("deadlock detected"),
        asyncpg.SerializationError("could not serialize access"),
    ],
)
def test_a_transaction_failed_for_anothers_sake_is_aborted(driver: BaseException) -> None:
    error = storage_error(DBAPIError("UPDATE …", {}, _Wrapped(driver)))
    assert isinstance(error, StorageConflict)
    assert error.code == Code.ABORTED


def test_other_exceptions_are_not_the_databases() -> None:
    assert storage_error(ValueError("a bug")) is None
